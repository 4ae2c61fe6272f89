import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { DateTime, Schema } from "effect"
import { Email } from "../../../core/shared/Email.ts"
import { FeedName } from "../../../core/subscriptions/Feed.ts"
import {
  SubscriberName,
  type Subscription,
  SubscriptionId,
  SubscriptionStatus
} from "../../../core/subscriptions/Subscription.ts"
import { SubscribeRequest, SubscriptionReceipt } from "../../../core/subscriptions/Subscriptions.ts"
import { documented } from "../meta/OpenApiDocument.ts"
import { signupFormAnswers } from "../pages/SignupPage.ts"
import { AdminAuth } from "../pipeline/AdminAuth.ts"
import { BadRequest, NotFound, Unauthorized, UnsupportedMediaType } from "../pipeline/ApiError.ts"
import { HtmlForm } from "../pipeline/Endpoint.ts"
import { Limit } from "../pipeline/Paging.ts"

// Interface 2.3: exactly `message` and `subscription {name, email, id, feed}`.
const receipt = { id: 42, name: "Ann", email: "ann@example.com", feed: "default" }
export class SubscribeResponse extends Schema.Class<SubscribeResponse>("SubscribeResponse")({
  message: Schema.String,
  subscription: SubscriptionReceipt
}, {
  examples: [{
    message: "Thank you. We sent a confirmation link to ann@example.com: follow it to start your subscription.",
    subscription: receipt
  } as any]
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

// The domain Subscription as the wire shows it (the answers and the events). Its fields are core's values, checked
// when they were made, and the answer's encoding checks them again: the view does not check them a third time
// (16 ms for a page of 100 rows, decision 0053).
export const subscriptionView = (s: Subscription) =>
  new SubscriptionView({
    id: s.id,
    name: s.name,
    email: s.email,
    feed: s.feed,
    status: s.status,
    created: DateTime.formatIso(s.createdAt),
    updated: DateTime.formatIso(s.updatedAt)
  }, true)

const subscriptionExample = {
  ...receipt,
  status: "active",
  created: "2026-01-05T10:00:00.000Z",
  updated: "2026-01-05T10:05:00.000Z"
}
export class SubscriptionEnvelope extends Schema.Class<SubscriptionEnvelope>("SubscriptionEnvelope")({
  message: Schema.optional(Schema.String),
  subscription: SubscriptionView
}, { examples: [{ message: "Your subscription is confirmed.", subscription: subscriptionExample } as any] }) {}

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
const TokenExample = TokenFields.annotations({ examples: [{ "List-Unsubscribe": "One-Click" }] })
export const TokenPayload = Schema.Union(
  HttpApiSchema.withEncoding(TokenExample, { kind: "UrlParams" }),
  TokenExample
)

// One schema, two encodings: browsers post forms, programs post JSON.
const SubscribeFields = SubscribeRequest.annotations({
  examples: [{ name: "Ann", email: "ann@example.com", feed: "default" } as any]
})
export const SubscribePayload = Schema.Union(
  HttpApiSchema.withEncoding(SubscribeFields, { kind: "UrlParams" }),
  SubscribeFields
)

export const SubscriptionList = Schema.Struct({
  object: Schema.Literal("list"),
  data: Schema.Array(SubscriptionView),
  has_more: Schema.Boolean
}).annotations({ examples: [{ object: "list", data: [subscriptionExample as any], has_more: false }] })

const IdFromString = Schema.NumberFromString.pipe(
  Schema.compose(SubscriptionId),
  Schema.annotations({ jsonSchema: { type: "integer", minimum: 1 } })
)
const Cursor = IdFromString.annotations({
  message: () => "starting_after must be a subscription id (a positive integer)."
})
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
      .annotateContext(documented(
        "Subscribe",
        "Starts a subscription to a feed (the default one when feed is left out): it is pending until the link in the confirmation mail is followed. The answer is the same whether the address is new, pending or already subscribed. A form post whose Accept prefers text/html (a browser without JavaScript) gets a page, or the form again with the error next to its field. The form's hidden field website is a honeypot: filled in, nothing is stored or sent, and the answer is the same.",
        { pages: { 200: ["text/html"], 400: ["text/html"], 404: ["text/html"] } }
      ))
  )
  .add(
    HttpApiEndpoint.get("signupPage", "/subscribe")
      .setUrlParams(Schema.Struct({ feed: Schema.optional(Schema.String) }).annotations(linkParams))
      .addSuccess(Html)
      .addError(NotFound)
      .annotateContext(documented(
        "The signup page",
        "The page with the signup form for a feed (the default one when feed is left out); an unknown feed is a 404 page.",
        { pages: { 404: ["text/html"] }, linkQuery: true }
      ))
  )
  .add(
    HttpApiEndpoint.get("confirmPage", "/subscribe/confirm").setUrlParams(TokenParams).addSuccess(Html).addError(
      NotFound
    ).annotateContext(documented(
      "The confirmation page",
      "The page the confirmation mail links to: it shows a button that POSTs to the same URL. GET changes nothing (mail scanners prefetch links). An unknown, used or expired token is a 404 page.",
      { pages: { 404: ["text/html"] }, linkQuery: true }
    ))
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
      .annotateContext(documented(
        "Confirm a subscription",
        "Confirms the pending subscription of the token (pending -> active). The token comes from the query (the link in the mail) or a body field token; the body is optional, as the confirmation page's button posts none. Answers a page when Accept names text/html.",
        { pages: { 200: ["text/html"], 404: ["text/html"] } }
      ))
  )
  .add(
    HttpApiEndpoint.get("unsubscribePage", "/unsubscribe").setUrlParams(TokenParams).addSuccess(Html).addError(NotFound)
      .annotateContext(documented(
        "The unsubscribe page",
        "The page a mail's unsubscribe link leads to: a button that POSTs to the same URL. GET changes nothing. An unknown or expired token is a 404 page.",
        { pages: { 404: ["text/html"] }, linkQuery: true }
      ))
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
      .annotateContext(documented(
        "Unsubscribe",
        "Ends the subscription of the token. Mail clients post List-Unsubscribe=One-Click to the link in the mail's List-Unsubscribe header (RFC 8058); the token may also come in a body field token. Answers a page when Accept names text/html.",
        { pages: { 200: ["text/html"], 404: ["text/html"] } }
      ))
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
      .annotateContext(documented(
        "List subscriptions",
        "The operator's view (admin key): a page of subscriptions, oldest first. With Accept: text/csv, a feed's subscribers (active ones unless status says otherwise) as a CSV attachment, streamed; feed is then required.",
        { pages: { 200: ["text/csv"] }, headers: { 200: ["Content-Disposition", "Cache-Control"] } }
      ))
  )
  .add(
    HttpApiEndpoint.get("get", "/subscriptions/:id")
      .setPath(Schema.Struct({ id: IdFromString }))
      .addSuccess(SubscriptionEnvelope)
      .addError(NotFound)
      .addError(Unauthorized)
      .middleware(AdminAuth)
      .annotateContext(documented("Get a subscription", "One subscription by id (admin key)."))
  )
  .annotateContext(OpenApi.annotations({
    description:
      "Newsletter subscriptions with double opt-in: the signup form and its pages, the links in the mails, and the operator's view (admin key)."
  }))
{}
