import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Api } from "../http/Api.ts"
import { ChartsApi } from "./ChartsApi.ts"
import { NewsletterConsoleApi } from "./NewsletterApi.ts"

// The console's pages (docs/console.md), declared like the API's endpoints so that the one request pipeline
// routes, decodes and answers them, but served from `ServedApi`, not `Api`: they are not part of the API's
// contract, so the OpenAPI document and the typed client never name them.
const Html = HttpApiSchema.Text({ contentType: "text/html" })
// The console's cookies: the session's id, and before sign-in the sign-in form's CSRF token.
const Cookies = Schema.Struct({ cookie: Schema.optional(Schema.String) })
// Forms are read field by field by their handlers, which answer a page whatever is missing.
const field = Schema.optional(Schema.String)
const SignInForm = Schema.Struct({ api_key: field, csrf_token: field }).pipe(
  HttpApiSchema.withEncoding({ kind: "UrlParams" })
)
const RefundForm = Schema.Struct({ amount: field, csrf_token: field, idempotency_key: field }).pipe(
  HttpApiSchema.withEncoding({ kind: "UrlParams" })
)
// Each event type is a checkbox named after the type (`transfer.approved=on`): a form field is one string.
const EndpointForm = Schema.Struct(
  { csrf_token: field, url: field },
  Schema.Record({ key: Schema.String, value: Schema.String })
).pipe(HttpApiSchema.withEncoding({ kind: "UrlParams" }))
// A form that carries only the session's token: sign out, and an endpoint's rotate, disable, enable or delete.
const TokenForm = Schema.Struct({ csrf_token: field }).pipe(HttpApiSchema.withEncoding({ kind: "UrlParams" }))

export class ConsoleApi extends HttpApiGroup.make("console")
  .add(HttpApiEndpoint.get("home", "/console").setHeaders(Cookies).addSuccess(Html))
  .add(
    HttpApiEndpoint.post("signIn", "/console/sign-in")
      .setHeaders(Cookies)
      .setPayload(SignInForm)
      .addSuccess(Html)
  )
  .add(
    HttpApiEndpoint.post("signOut", "/console/sign-out")
      .setHeaders(Cookies)
      .setPayload(TokenForm)
      .addSuccess(Html)
  )
  .add(
    HttpApiEndpoint.get("transfers", "/console/transfers")
      .setHeaders(Cookies)
      .setUrlParams(Schema.Struct({ status: field, reference: field, from: field, to: field, after: field }))
      .addSuccess(Html)
  )
  .add(
    HttpApiEndpoint.get("transfer", "/console/transfers/:id")
      .setPath(Schema.Struct({ id: Schema.String }))
      .setHeaders(Cookies)
      .addSuccess(Html)
  )
  .add(
    HttpApiEndpoint.post("refund", "/console/transfers/:id/refunds")
      .setPath(Schema.Struct({ id: Schema.String }))
      .setHeaders(Cookies)
      .setPayload(RefundForm)
      .addSuccess(Html)
  )
  .add(HttpApiEndpoint.get("webhooks", "/console/webhooks").setHeaders(Cookies).addSuccess(Html))
  .add(
    HttpApiEndpoint.post("addWebhook", "/console/webhooks")
      .setHeaders(Cookies)
      .setPayload(EndpointForm)
      .addSuccess(Html)
  )
  .add(
    HttpApiEndpoint.post("webhookAction", "/console/webhooks/:id/:action")
      .setPath(Schema.Struct({ id: Schema.String, action: Schema.Literal("rotate", "disable", "enable", "delete") }))
      .setHeaders(Cookies)
      .setPayload(TokenForm)
      .addSuccess(Html)
  )
  .add(
    HttpApiEndpoint.get("events", "/console/events")
      .setHeaders(Cookies)
      .setUrlParams(Schema.Struct({ after: field }))
      .addSuccess(Html)
  )
  .add(
    HttpApiEndpoint.post("resend", "/console/events/:id/resend")
      .setPath(Schema.Struct({ id: Schema.String }))
      .setHeaders(Cookies)
      .setPayload(
        Schema.Struct({ csrf_token: field, webhook_endpoint: field }).pipe(
          HttpApiSchema.withEncoding({ kind: "UrlParams" })
        )
      )
      .addSuccess(Html)
  )
  .annotate(OpenApi.Exclude, true)
{}

// What the service serves: the API and the console.
export const ServedApi = Api.add(ConsoleApi).add(NewsletterConsoleApi).add(ChartsApi)
