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
// Confirm and unsubscribe take the token from the query (the links in the mail), from a form field (a page's
// hidden field) or from a JSON body: one of them, or both with the same value.
const OptionalToken = Schema.Struct({ token: Schema.optional(Schema.String) })
export const TokenPayload = Schema.Union(
  HttpApiSchema.withEncoding(OptionalToken, { kind: "UrlParams" }),
  OptionalToken
)

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
      .setUrlParams(OptionalToken)
      .setPayload(TokenPayload)
      .addSuccess(SubscriptionEnvelope)
      .addSuccess(Html)
      .addError(BadRequest)
      .addError(NotFound)
      .addError(UnsupportedMediaType)
  )
  .add(
    HttpApiEndpoint.get("unsubscribePage", "/unsubscribe").setUrlParams(TokenParams).addSuccess(Html).addError(NotFound)
  )
  .add(
    HttpApiEndpoint.post("unsubscribe", "/unsubscribe")
      .setUrlParams(OptionalToken)
      .setPayload(TokenPayload)
      .addSuccess(SubscriptionEnvelope)
      .addSuccess(Html)
      .addError(BadRequest)
      .addError(NotFound)
      .addError(UnsupportedMediaType)
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
