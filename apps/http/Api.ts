import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { AdminAuth } from "./AdminAuth.ts"
import { InternalError, Unauthorized } from "./ApiError.ts"
import { FeedsApi } from "./FeedsApi.ts"
import { pipelineAnswers } from "./OpenApiDocument.ts"
import { SubscriptionsApi } from "./SubscriptionsApi.ts"
import { TransfersApi } from "./TransfersApi.ts"
import { WebhooksApi } from "./WebhooksApi.ts"

export class Health extends Schema.Class<Health>("Health")({ status: Schema.Literal("ok") }) {}

export class MetaApi extends HttpApiGroup.make("meta")
  .add(HttpApiEndpoint.get("healthz", "/healthz").addSuccess(Health))
  .add(HttpApiEndpoint.get("readyz", "/readyz").addSuccess(Health).addError(InternalError))
  .add(HttpApiEndpoint.get("errors", "/docs/errors").addSuccess(HttpApiSchema.Text({ contentType: "text/html" })))
  .add(HttpApiEndpoint.get("openapi", "/openapi.json").addSuccess(Schema.Unknown))
  .add(HttpApiEndpoint.get("docs", "/docs").addSuccess(HttpApiSchema.Text({ contentType: "text/html" })))
  .add(
    HttpApiEndpoint.get("metrics", "/metrics")
      .addSuccess(HttpApiSchema.Text({ contentType: "text/plain; version=0.0.4" }))
      .addError(Unauthorized)
      .middleware(AdminAuth)
  )
{}

export class Api
  extends HttpApi.make("paysub").add(SubscriptionsApi).add(FeedsApi).add(TransfersApi).add(MetaApi).add(WebhooksApi)
    .addError(InternalError)
    .annotateContext(OpenApi.annotations({ title: "paysub", version: "1", transform: pipelineAnswers }))
{}
