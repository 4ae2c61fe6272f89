import { HttpApiMiddleware, HttpApiSecurity, HttpServerRequest } from "@effect/platform"
import { Context, Effect } from "effect"
import type { ApiClient } from "../../core/TransferStore.ts"
import { apiError, Unauthorized, UnsupportedMediaType } from "./ApiError.ts"

export class CurrentClient extends Context.Tag("CurrentClient")<CurrentClient, ApiClient>() {}

export class MerchantAuth extends HttpApiMiddleware.Tag<MerchantAuth>()("MerchantAuth", {
  failure: Unauthorized,
  provides: CurrentClient,
  security: { bearer: HttpApiSecurity.bearer }
}) {}

// The merchant API speaks JSON only: a form post to it is a client bug worth a clear 415, not a 400.
export class JsonOnly extends HttpApiMiddleware.Tag<JsonOnly>()("JsonOnly", { failure: UnsupportedMediaType }) {}

export const jsonOnly = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
  const type = (request.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase()
  return type === "application/json"
    ? Effect.void
    : Effect.fail(apiError("unsupported_media_type", "Content-Type must be application/json."))
})
