import { HttpApiMiddleware, HttpApiSecurity } from "@effect/platform"
import { Unauthorized } from "./ApiError.ts"

export class AdminAuth extends HttpApiMiddleware.Tag<AdminAuth>()("AdminAuth", {
  failure: Unauthorized,
  security: { bearer: HttpApiSecurity.bearer }
}) {}
