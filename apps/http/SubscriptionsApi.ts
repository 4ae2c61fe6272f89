import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "@effect/platform"
import { DateTime, Schema } from "effect"
import { Email } from "../../core/Email.ts"
import { FeedName } from "../../core/Feed.ts"
import { SubscriberName, type Subscription, SubscriptionId, SubscriptionStatus } from "../../core/Subscription.ts"
import { SubscribeRequest, SubscriptionReceipt } from "../../core/Subscriptions.ts"
import { AdminAuth } from "./AdminAuth.ts"
import { BadRequest, NotFound, Unauthorized, UnsupportedMediaType } from "./ApiError.ts"
import { HtmlForm } from "./Endpoint.ts"
import { signupFormAnswers } from "./SignupPage.ts"

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

// The domain Subscription as the wire shows it (the answers and the events).
export const subscriptionView = (s: Subscription) =>
  new SubscriptionView({
    id: s.id,
    name: s.name,
    email: s.email,
    feed: s.feed,
    status: s.status,
    created: DateTime.formatIso(s.createdAt),
    updated: DateTime.formatIso(s.updatedAt)
  })

export class SubscriptionEnvelope extends Schema.Class<SubscriptionEnvelope>("SubscriptionEnvelope")({
  message: Schema.optional(Schema.String),
  subscription: SubscriptionView
}) {}

const Html = HttpApiSchema.Text({ contentType: "text/html" })
// The query of a page people reach by a link: mail clients and trackers may add to it (utm_source...), so what
// the page does not read is ignored rather than refused.
const linkParams = { parseOptions: { onExcessProperty: "ignore" } } as const
const TokenParams = Schema.Struct({ token: Schema.String }).annotations(linkParams)
// Confirm and unsubscribe take the token from the query (the links in the mail), from a form field (a page's
// hidden field) or from a JSON body: one of them, or both with the same value.
const OptionalToken = Schema.Struct({ token: Schema.optional(Schema.String) })
// A mail client's one-click unsubscribe (RFC 8058) posts `List-Unsubscribe=One-Click` to the link.
const TokenFields = Schema.Struct({
  ...OptionalToken.fields,
  "List-Unsubscribe": Schema.optional(Schema.Literal("One-Click"))
})
export const TokenPayload = Schema.Union(
  HttpApiSchema.withEncoding(TokenFields, { kind: "UrlParams" }),
  TokenFields
)

// One schema, two encodings: browsers post forms, programs post JSON.
export const SubscribePayload = Schema.Union(
  HttpApiSchema.withEncoding(SubscribeRequest, { kind: "UrlParams" }),
  SubscribeRequest
)

export const SubscriptionList = Schema.Struct({
  object: Schema.Literal("list"),
  data: Schema.Array(SubscriptionView),
  has_more: Schema.Boolean
})

const Limit = Schema.NumberFromString.pipe(
  Schema.int(),
  Schema.between(1, 100),
  Schema.annotations({ message: () => "limit is an integer from 1 to 100." })
)
const Cursor = Schema.NumberFromString.pipe(
  Schema.compose(SubscriptionId),
  Schema.annotations({ message: () => "starting_after must be a subscription id (a positive integer)." })
)
const Status = SubscriptionStatus.annotations({
  message: () => "status must be pending, active or unsubscribed."
})
export const ListParams = Schema.Struct({
  feed: Schema.optional(FeedName),
  status: Schema.optional(Status),
  limit: Schema.optional(Limit),
  starting_after: Schema.optional(Cursor)
})
const Csv = HttpApiSchema.Text({ contentType: "text/csv" })

export class SubscriptionsApi extends HttpApiGroup.make("subscriptions")
  .add(
    HttpApiEndpoint.post("subscribe", "/subscribe")
      .setPayload(SubscribePayload)
      .addSuccess(SubscribeResponse)
      .addSuccess(Html)
      .addError(BadRequest)
      .addError(NotFound)
      .addError(UnsupportedMediaType)
      .annotate(HtmlForm, signupFormAnswers)
  )
  .add(
    HttpApiEndpoint.get("signupPage", "/subscribe")
      .setUrlParams(Schema.Struct({ feed: Schema.optional(Schema.String) }).annotations(linkParams))
      .addSuccess(Html)
      .addError(NotFound)
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
    // The operator's view: a page of subscriptions (oldest first), or with Accept: text/csv a feed's
    // subscribers (active ones unless status says otherwise) as CSV, streamed.
    HttpApiEndpoint.get("list", "/subscriptions")
      .setUrlParams(ListParams)
      .setHeaders(Schema.Struct({ accept: Schema.optional(Schema.String) }))
      .addSuccess(SubscriptionList)
      .addSuccess(Csv)
      .addError(BadRequest)
      .addError(NotFound)
      .addError(Unauthorized)
      .middleware(AdminAuth)
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
