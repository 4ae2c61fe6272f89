import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"
import { Email } from "../../core/Email.ts"
import { FeedName } from "../../core/Feed.ts"
import { SubscriberName, SubscriptionId, SubscriptionStatus } from "../../core/Subscription.ts"
import { SubscribeRequest, SubscriptionReceipt } from "../../core/Subscriptions.ts"
import { AdminAuth } from "./AdminAuth.ts"
import { BadRequest, NotFound, Unauthorized, UnsupportedMediaType } from "./ApiError.ts"

// Interface 2.3: exactly `message` and `subscription {name, email, id, feed}`.
export class SubscribeResponse extends Schema.Class<SubscribeResponse>("SubscribeResponse")({
  message: Schema.String,
  subscription: SubscriptionReceipt
}) {}

export class SubscriptionView extends Schema.Class<SubscriptionView>("SubscriptionView")({
  id: SubscriptionId,
  name: SubscriberName,
  email: Email,
  feed: FeedName,
  status: SubscriptionStatus,
  created: Schema.String,
  updated: Schema.String
}) {}

export class SubscriptionEnvelope extends Schema.Class<SubscriptionEnvelope>("SubscriptionEnvelope")({
  message: Schema.optional(Schema.String),
  subscription: SubscriptionView
}) {}

const Html = HttpApiSchema.Text({ contentType: "text/html" })
const TokenParams = Schema.Struct({ token: Schema.String })

// One schema, two encodings: browsers post forms, programs post JSON.
export const SubscribePayload = Schema.Union(
  HttpApiSchema.withEncoding(SubscribeRequest, { kind: "UrlParams" }),
  SubscribeRequest
)

export class SubscriptionsApi extends HttpApiGroup.make("subscriptions")
  .add(
    HttpApiEndpoint.post("subscribe", "/subscribe")
      .setPayload(SubscribePayload)
      .addSuccess(SubscribeResponse)
      .addError(BadRequest)
      .addError(NotFound)
      .addError(UnsupportedMediaType)
  )
  .add(
    HttpApiEndpoint.get("confirmPage", "/subscribe/confirm").setUrlParams(TokenParams).addSuccess(Html).addError(
      NotFound
    )
  )
  .add(
    HttpApiEndpoint.post("confirm", "/subscribe/confirm")
      .setUrlParams(TokenParams)
      .addSuccess(SubscriptionEnvelope)
      .addSuccess(Html)
      .addError(NotFound)
  )
  .add(
    HttpApiEndpoint.get("unsubscribePage", "/unsubscribe").setUrlParams(TokenParams).addSuccess(Html).addError(NotFound)
  )
  .add(
    HttpApiEndpoint.post("unsubscribe", "/unsubscribe")
      .setUrlParams(TokenParams)
      .addSuccess(SubscriptionEnvelope)
      .addSuccess(Html)
      .addError(NotFound)
  )
  .add(
    HttpApiEndpoint.get("get", "/subscriptions/:id")
      .setPath(Schema.Struct({ id: Schema.NumberFromString.pipe(Schema.compose(SubscriptionId)) }))
      .addSuccess(SubscriptionEnvelope)
      .addError(NotFound)
      .addError(Unauthorized)
      .middleware(AdminAuth)
  )
{}
