import { Layer } from "effect"
import { EventViews } from "../../../core/webhooks/EventViews.ts"
import { refundView } from "../refunds/RefundsApi.ts"
import { subscriptionView } from "../subscriptions/SubscriptionsApi.ts"
import { transferView } from "../transfers/TransfersApi.ts"

// The objects events carry are the API's own views of them (docs/decisions/0026).
export const EventViewsLive = Layer.succeed(
  EventViews,
  EventViews.of({ transfer: transferView, refund: refundView, subscription: subscriptionView })
)
