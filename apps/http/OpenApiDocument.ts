import { type HttpApi, OpenApi } from "@effect/platform"
import { ErrorCatalog } from "./ErrorCatalog.ts"

// What the pipeline answers beyond the framework's defaults, put into the HttpApi definition itself (an
// OpenApi.Transform annotation on Api, apps/http/Api.ts), so that /openapi.json, the docs UI at /docs and any
// generator reading either see the same document: the one error body in place of the framework's decode error,
// and the 413/415/429 answers the edge gives before routing.
const BadRequestRef = "#/components/schemas/BadRequest"
const DecodeErrorRef = "#/components/schemas/HttpApiDecodeError"

const errorResponse = (description: string) => ({
  description,
  content: { "application/json": { schema: { $ref: BadRequestRef } } }
})

const withoutDecodeError = (schema: any) => {
  if (schema?.$ref === DecodeErrorRef) return { $ref: BadRequestRef }
  if (!Array.isArray(schema?.anyOf)) return schema
  const anyOf = schema.anyOf.filter((s: any) => s?.$ref !== DecodeErrorRef)
  return anyOf.length === 0 ? { $ref: BadRequestRef } : { ...schema, anyOf }
}

const resolve = (spec: Record<string, any>, schema: any): any =>
  typeof schema?.$ref === "string" ? resolve(spec, spec.components.schemas[schema.$ref.split("/").pop()]) : schema
const requiresMember = (spec: Record<string, any>, schema: any): boolean => {
  const s = resolve(spec, schema)
  if (Array.isArray(s?.anyOf)) return s.anyOf.every((m: any) => requiresMember(spec, m))
  return Array.isArray(s?.required) && s.required.length > 0
}

export const pipelineAnswers = (document: Record<string, any>): Record<string, any> => {
  const spec = structuredClone(document)
  for (const [path, item] of Object.entries<any>(spec.paths)) {
    for (const operation of Object.values<any>(item)) {
      for (const response of Object.values<any>(operation.responses ?? {})) {
        const json = response.content?.["application/json"]
        if (json !== undefined) json.schema = withoutDecodeError(json.schema)
      }
      if (operation.requestBody !== undefined) {
        // A body whose schema requires no member may be left out, as the pipeline serves it (Endpoint.ts).
        operation.requestBody.required = Object.values<any>(operation.requestBody.content).some((media) =>
          requiresMember(spec, media.schema)
        )
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
  return spec
}

// The API as documented at one base URL: its servers and the error catalogue's address are known only at start.
export const documentedApi = (api: HttpApi.HttpApi.Any, baseUrl: string): HttpApi.HttpApi.Any =>
  (api as HttpApi.HttpApi.AnyWithProps).annotateContext(OpenApi.annotations({
    description: `Errors: ${baseUrl}/docs/errors`,
    servers: [{ url: baseUrl }]
  }))

export const openApiDocument = (api: HttpApi.HttpApi.Any, baseUrl: string) =>
  OpenApi.fromApi(documentedApi(api, baseUrl) as any)
