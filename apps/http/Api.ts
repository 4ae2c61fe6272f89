import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"
import { InternalError } from "./ApiError.ts"
import { FeedsApi } from "./FeedsApi.ts"
import { SubscriptionsApi } from "./SubscriptionsApi.ts"
import { TransfersApi } from "./TransfersApi.ts"

export class Health extends Schema.Class<Health>("Health")({ status: Schema.Literal("ok") }) {}

export class MetaApi extends HttpApiGroup.make("meta")
  .add(HttpApiEndpoint.get("healthz", "/healthz").addSuccess(Health))
  .add(HttpApiEndpoint.get("readyz", "/readyz").addSuccess(Health).addError(InternalError))
  .add(HttpApiEndpoint.get("errors", "/docs/errors").addSuccess(HttpApiSchema.Text({ contentType: "text/html" })))
  .add(HttpApiEndpoint.get("openapi", "/openapi.json").addSuccess(Schema.Unknown))
{}

export class Api
  extends HttpApi.make("paysub").add(SubscriptionsApi).add(FeedsApi).add(TransfersApi).add(MetaApi).addError(
    InternalError
  )
{}
