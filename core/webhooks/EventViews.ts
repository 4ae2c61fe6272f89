import { Context } from "effect"
import type { Refund } from "../payments/Refund.ts"
import type { Transfer } from "../payments/Transfer.ts"
import type { Subscription } from "../subscriptions/Subscription.ts"

// An event's data is the object as the API shows it. The wire views live with the HTTP spec; the stores,
// which write events in the transactions that cause them, take them through this port.
export interface EventViewsShape {
  readonly transfer: (transfer: Transfer) => unknown
  readonly refund: (refund: Refund) => unknown
  readonly subscription: (subscription: Subscription) => unknown
}

export class EventViews extends Context.Tag("EventViews")<EventViews, EventViewsShape>() {}
