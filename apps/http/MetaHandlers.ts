import { HttpServerResponse } from "@effect/platform"
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { SiteSettings } from "../../core/SiteSettings.ts"
import { Api, Health } from "./Api.ts"
import { apiError } from "./ApiError.ts"
import { group } from "./ApiHandlers.ts"
import { ErrorCatalog, errorCodes } from "./ErrorCatalog.ts"
import { openApiDocument } from "./OpenApiDocument.ts"
import { Pages } from "./Pages.ts"

const catalogPage = Pages.errorCatalog(errorCodes.map((code) => ({ code, ...ErrorCatalog[code] })))

export const MetaLive = group(Api, "meta", (handlers) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const spec = openApiDocument((yield* SiteSettings).baseUrl)
    return handlers
      .handle("healthz", () => Effect.succeed(new Health({ status: "ok" })))
      .handle("readyz", () =>
        sql`SELECT 1`.pipe(
          Effect.as(new Health({ status: "ok" })),
          Effect.catchAll(() => Effect.fail(apiError("internal_error", "The database is not reachable.")))
        ))
      .handle("errors", () => Effect.succeed(catalogPage))
      .handle("openapi", () => Effect.succeed(HttpServerResponse.unsafeJson(spec)))
  }))
