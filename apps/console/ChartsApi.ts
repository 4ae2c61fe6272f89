import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"

// The console's chart pages (docs/console.md): served with the console's pages, not part of the API.
const Html = HttpApiSchema.Text({ contentType: "text/html" })
const Cookies = Schema.Struct({ cookie: Schema.optional(Schema.String) })

export class ChartsApi extends HttpApiGroup.make("charts")
  .add(HttpApiEndpoint.get("merchant", "/console/charts").setHeaders(Cookies).addSuccess(Html))
  .add(HttpApiEndpoint.get("newsletter", "/console/newsletter/charts").setHeaders(Cookies).addSuccess(Html))
  .annotate(OpenApi.Exclude, true)
{}
