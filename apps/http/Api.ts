import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { documented, pipelineAnswers } from "./meta/OpenApiDocument.ts"
import { AdminAuth } from "./pipeline/AdminAuth.ts"
import { InternalError, Unauthorized } from "./pipeline/ApiError.ts"
import { RefundsApi } from "./refunds/RefundsApi.ts"
import { FeedsApi } from "./subscriptions/FeedsApi.ts"
import { SubscriptionsApi } from "./subscriptions/SubscriptionsApi.ts"
import { TransfersApi } from "./transfers/TransfersApi.ts"
import { WebhooksApi } from "./webhooks/WebhooksApi.ts"

const Html = HttpApiSchema.Text({ contentType: "text/html" })

export class Health extends Schema.Class<Health>("Health")({ status: Schema.Literal("ok") }, {
  examples: [{ status: "ok" } as any]
}) {}

export class MetaApi extends HttpApiGroup.make("meta")
  .add(
    HttpApiEndpoint.get("healthz", "/healthz").addSuccess(Health).annotateContext(
      documented("Liveness", "ok while the process serves requests; reads nothing.")
    )
  )
  .add(
    HttpApiEndpoint.get("readyz", "/readyz").addSuccess(Health).addError(InternalError).annotateContext(
      documented("Readiness", "ok when the database answers; 500 internal_error when it does not.")
    )
  )
  .add(
    HttpApiEndpoint.get("errors", "/docs/errors").addSuccess(Html).annotateContext(
      documented("The error codes", "Every error code with its status, type, meaning and fix, an anchor per code.")
    )
  )
  .add(
    HttpApiEndpoint.get("openapi", "/openapi.json").addSuccess(
      Schema.Unknown.annotations({ jsonSchema: { type: "object" }, examples: [{ openapi: "3.1.0" }] })
    ).annotateContext(documented("This document", "The OpenAPI 3.1 document of the API, as the docs UI shows it."))
  )
  .add(
    HttpApiEndpoint.get("docs", "/docs").addSuccess(Html).annotateContext(
      documented("The API reference", "This document in a browser (Scalar, served by the app itself).")
    )
  )
  .add(
    HttpApiEndpoint.get("metrics", "/metrics")
      .addSuccess(HttpApiSchema.Text({ contentType: "text/plain; version=0.0.4" }))
      .addError(Unauthorized)
      .middleware(AdminAuth)
      .annotateContext(documented("Prometheus metrics", "The metrics in Prometheus' text format (admin key)."))
  )
  .annotateContext(OpenApi.annotations({
    description: "Health, readiness, metrics, and the documentation itself."
  }))
{}

export class Api
  extends HttpApi.make("paysub").add(SubscriptionsApi).add(FeedsApi).add(TransfersApi).add(RefundsApi).add(MetaApi).add(
    WebhooksApi
  )
    .addError(InternalError)
    .annotateContext(OpenApi.annotations({
      title: "paysub",
      version: "1",
      license: { name: "Proprietary", url: "https://github.com/paysub/paysub" },
      transform: pipelineAnswers
    }))
{}
