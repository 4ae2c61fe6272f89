import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"

// The list owner's pages (docs/console.md): feeds, their subscribers, a subscriber's history, the CSV export and
// the outbox. Served beside the console's group from `ServedApi`, excluded from the API's OpenAPI document.
const Html = HttpApiSchema.Text({ contentType: "text/html" })
const Csv = HttpApiSchema.Text({ contentType: "text/csv" })
const Cookies = Schema.Struct({ cookie: Schema.optional(Schema.String) })
// As in ConsoleApi.ts: every field optional, so that the handler answers a page whatever is missing.
const field = Schema.optional(Schema.String)
const FeedPath = Schema.Struct({ name: Schema.String })

export class NewsletterConsoleApi extends HttpApiGroup.make("newsletterConsole")
  .add(HttpApiEndpoint.get("feeds", "/console/newsletter").setHeaders(Cookies).addSuccess(Html))
  .add(
    HttpApiEndpoint.post("createFeed", "/console/newsletter/feeds")
      .setHeaders(Cookies)
      .setPayload(
        Schema.Struct({ csrf_token: field, name: field, title: field }).pipe(
          HttpApiSchema.withEncoding({ kind: "UrlParams" })
        )
      )
      .addSuccess(Html)
  )
  .add(
    HttpApiEndpoint.get("feed", "/console/newsletter/feeds/:name")
      .setPath(FeedPath)
      .setHeaders(Cookies)
      .setUrlParams(Schema.Struct({ status: field, email: field, after: field }))
      .addSuccess(Html)
  )
  .add(
    HttpApiEndpoint.post("renameFeed", "/console/newsletter/feeds/:name")
      .setPath(FeedPath)
      .setHeaders(Cookies)
      .setPayload(
        Schema.Struct({ csrf_token: field, title: field }).pipe(
          HttpApiSchema.withEncoding({ kind: "UrlParams" })
        )
      )
      .addSuccess(Html)
  )
  .add(
    HttpApiEndpoint.post("deleteFeed", "/console/newsletter/feeds/:name/delete")
      .setPath(FeedPath)
      .setHeaders(Cookies)
      .setPayload(
        Schema.Struct({ csrf_token: field }).pipe(
          HttpApiSchema.withEncoding({ kind: "UrlParams" })
        )
      )
      .addSuccess(Html)
  )
  .add(
    HttpApiEndpoint.get("exportFeed", "/console/newsletter/feeds/:name/subscribers.csv")
      .setPath(FeedPath)
      .setHeaders(Cookies)
      .setUrlParams(Schema.Struct({ status: field }))
      .addSuccess(Csv)
  )
  .add(
    HttpApiEndpoint.get("subscriber", "/console/newsletter/subscribers/:id")
      .setPath(Schema.Struct({ id: Schema.String }))
      .setHeaders(Cookies)
      .addSuccess(Html)
  )
  .add(HttpApiEndpoint.get("outbox", "/console/newsletter/outbox").setHeaders(Cookies).addSuccess(Html))
  .annotate(OpenApi.Exclude, true)
{}
