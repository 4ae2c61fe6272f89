import { Layer } from "effect"
import { EventViews } from "../../core/webhooks/EventViews.ts"
import { refundView } from "./RefundsApi.ts"
import { subscriptionView } from "./SubscriptionsApi.ts"
import { transferView } from "./TransfersApi.ts"

// The objects events carry are the API's own views of them (docs/decisions/0026).
export const EventViewsLive = Layer.succeed(
  EventViews,
  EventViews.of({ transfer: transferView, refund: refundView, subscription: subscriptionView })
)
