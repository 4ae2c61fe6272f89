import { OpenApi } from "@effect/platform"
import { Api } from "./Api.ts"
import { ErrorCatalog } from "./ErrorCatalog.ts"

// The OpenAPI document of the very HttpApi the server runs, with what the edge adds put in: the one error
// body in place of the framework's decode error, and the 413/415/429 answers the edge gives before routing.
const errorResponse = (description: string) => ({
  description,
  content: { "application/json": { schema: { $ref: "#/components/schemas/BadRequest" } } }
})

export const openApiDocument = (baseUrl: string) => {
  const spec = JSON.parse(JSON.stringify(OpenApi.fromApi(Api))) as any
  const decodeError = { $ref: "#/components/schemas/HttpApiDecodeError" }
  for (const [path, item] of Object.entries<any>(spec.paths)) {
    for (const operation of Object.values<any>(item)) {
      for (const response of Object.values<any>(operation.responses ?? {})) {
        const schema = response.content?.["application/json"]?.schema
        if (schema?.anyOf) {
          schema.anyOf = schema.anyOf.filter((s: any) => JSON.stringify(s) !== JSON.stringify(decodeError))
          if (schema.anyOf.length === 0) {
            response.content["application/json"].schema = { $ref: "#/components/schemas/BadRequest" }
          }
        } else if (JSON.stringify(schema) === JSON.stringify(decodeError)) {
          response.content["application/json"].schema = { $ref: "#/components/schemas/BadRequest" }
        }
      }
      if (operation.requestBody !== undefined) {
        operation.responses["413"] ??= errorResponse(ErrorCatalog.body_too_large.summary)
        operation.responses["415"] ??= errorResponse(ErrorCatalog.unsupported_media_type.summary)
      }
      if (path === "/subscribe" || path.startsWith("/merchant/")) {
        operation.responses["429"] = errorResponse(ErrorCatalog.rate_limited.summary)
      }
    }
  }
  delete spec.components.schemas.HttpApiDecodeError
  delete spec.components.schemas.Issue
  delete spec.components.schemas.PropertyKey
  return {
    ...spec,
    info: { ...spec.info, title: "paysub", version: "1", description: `Errors: ${baseUrl}/docs/errors` },
    servers: [{ url: baseUrl }]
  }
}
