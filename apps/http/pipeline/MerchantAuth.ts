import { HttpApiMiddleware, HttpApiSecurity } from "@effect/platform"
import { Context } from "effect"
import type { ApiClient } from "../../../core/payments/TransferStore.ts"
import { Unauthorized } from "./ApiError.ts"

export class CurrentClient extends Context.Tag("CurrentClient")<CurrentClient, ApiClient>() {}

export class MerchantAuth extends HttpApiMiddleware.Tag<MerchantAuth>()("MerchantAuth", {
  failure: Unauthorized,
  provides: CurrentClient,
  security: { bearer: HttpApiSecurity.bearer }
}) {}
