import { type HttpApi, OpenApi } from "@effect/platform"
import { ErrorCatalog, type ErrorCode } from "../pipeline/ErrorCatalog.ts"
import { codeSamples } from "./CodeSamples.ts"
import { gettingStartedMarkdown } from "./GettingStarted.ts"
import { HttpSemantics, readerLayout } from "./ReferenceLayout.ts"

// What the pipeline answers beyond what HttpApi's annotations can state, put into the HttpApi definition itself
// (an OpenApi.Transform annotation on Api, apps/http/Api.ts), so that /openapi.json, the docs UI at /docs and any
// generator reading either see the same document. Each rule below is the one place its fact is stated:
// the one error body in place of the framework's decode error; the answers the edge gives before routing (400
// host_invalid, 413, 415, 429, 503, 304, HEAD, OPTIONS, and 404/405 as shared responses); the header fields
// every response carries; and examples lifted from the schemas to their media types.
const BadRequestRef = "#/components/schemas/BadRequest"
const DecodeErrorRef = "#/components/schemas/HttpApiDecodeError"

const header = (description: string, schema: Record<string, unknown> = { type: "string" }) => ({
  description,
  schema
})
export const Headers = {
  "X-Request-Id": header(
    "The request's id: the client's own X-Request-Id when it is 1-64 characters of [A-Za-z0-9_.-], else req_ and 32 hex digits. Error bodies repeat it as request_id.",
    { type: "string", pattern: "^[\\w.-]{1,64}$" }
  ),
  Location: header("The URL of the transfer or refund made.", { type: "string", format: "uri" }),
  ETag: header("A strong validator of the representation; send it back as If-None-Match."),
  "Last-Modified": header("When the data last changed (an HTTP date); send it back as If-Modified-Since."),
  "Cache-Control": header("How long and by whom the answer may be cached."),
  Expires: header("When a public answer goes stale (an HTTP date)."),
  Allow: header("The methods the path takes, comma-separated.", {
    type: "string",
    pattern: "^[A-Z]+(, [A-Z]+)*$"
  }),
  "Retry-After": header("Seconds to wait before retrying.", { type: "string", pattern: "^[0-9]+$" }),
  "Idempotent-Replayed": header(
    "`true` when the answer is the replay of the first request with this Idempotency-Key.",
    { type: "string", enum: ["true"] }
  ),
  "Content-Disposition": header("The CSV export as an attachment with a file name.")
} as const
type HeaderName = keyof typeof Headers

const headerRefs = (names: ReadonlyArray<HeaderName>) =>
  Object.fromEntries(names.map((name) => [name, { $ref: `#/components/headers/${name}` }]))

const ErrorCodeOf: Readonly<Record<string, ErrorCode>> = {
  "400": "parameter_invalid",
  "401": "api_key_invalid",
  "402": "card_declined",
  "404": "resource_missing",
  "405": "method_not_allowed",
  "409": "duplicate_reference",
  "413": "body_too_large",
  "415": "unsupported_media_type",
  "422": "idempotency_key_reused",
  "429": "rate_limited",
  "500": "internal_error",
  "503": "card_network_unavailable"
}

const errorExample = (baseUrl: string, code: ErrorCode) => ({
  error: {
    type: ErrorCatalog[code].type,
    code,
    message: ErrorCatalog[code].summary,
    ...(code === "parameter_invalid" ? { param: "payment_transfer.amount" } : {}),
    doc_url: `${baseUrl}/docs/errors#${code}`,
    request_id: "req_6f1c0b7e2a9d4c3b8e5f0a1b2c3d4e5f"
  }
})

const errorResponse = (description: string, headers: ReadonlyArray<HeaderName> = []) => ({
  description,
  headers: headerRefs(headers),
  content: { "application/json": { schema: { $ref: BadRequestRef } } }
})

const Examples: Readonly<Record<string, string>> = {
  "text/html":
    "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Subscribe</title></head>\n<body><h1>Subscribe</h1>...</body></html>\n",
  "text/csv": "email,name,status,created\r\nann@example.com,Ann,active,2026-01-05T10:00:00.000Z\r\n",
  "text/plain; version=0.0.4": "# TYPE http_requests_total counter\nhttp_requests_total{status=\"200\"} 1\n"
}

// What one endpoint answers beyond its schemas, stated where it is declared: statuses that also come as pages
// or files (HttpApi declares a text success only under JSON when a JSON one shares its status), and header
// fields of some answers, by status.
const IgnoredQuery = {
  name: "ignored",
  in: "query",
  required: false,
  style: "form",
  explode: true,
  description: "A public resource ignores query members it does not take (cache busters, a link's tracking).",
  schema: { type: "object", additionalProperties: { type: "string" } }
}

interface Answers {
  // A page reached by a link: the query members it does not read are ignored (SubscriptionsApi's linkParams).
  readonly linkQuery?: true
  readonly pages?: Readonly<Record<number, ReadonlyArray<"text/html" | "text/csv">>>
  readonly headers?: Readonly<Record<number, ReadonlyArray<HeaderName>>>
}
const answers = (extra: Answers) => (operation: Record<string, any>) => {
  if (extra.linkQuery) operation.parameters = [...operation.parameters, IgnoredQuery]
  for (const [status, types] of Object.entries(extra.pages ?? {})) {
    const response = operation.responses[status] ??= { description: "A page" }
    response.content ??= {}
    const json = response.content["application/json"]
    if (Array.isArray(json?.schema?.anyOf)) {
      const anyOf = json.schema.anyOf.filter((s: any) => s?.type !== "string")
      json.schema = anyOf.length === 1 ? anyOf[0] : { ...json.schema, anyOf }
    }
    for (const type of types) response.content[type] = { schema: { type: "string" } }
  }
  for (const [status, names] of Object.entries(extra.headers ?? {})) {
    const response = operation.responses[status]
    if (response !== undefined) response.headers = { ...response.headers, ...headerRefs(names) }
  }
  return operation
}

// An endpoint's summary and description, and what it answers beyond its schemas.
export const documented = (summary: string, description: string, extra?: Answers) =>
  OpenApi.annotations({ summary, description, ...(extra === undefined ? {} : { transform: answers(extra) }) })

const withoutDecodeError = (schema: any) => {
  if (schema?.$ref === DecodeErrorRef) return { $ref: BadRequestRef }
  if (!Array.isArray(schema?.anyOf)) return schema
  const anyOf = schema.anyOf.filter((s: any) => s?.$ref !== DecodeErrorRef)
  return anyOf.length === 0 ? { $ref: BadRequestRef } : anyOf.length === 1 ? anyOf[0] : { ...schema, anyOf }
}

const resolve = (spec: Record<string, any>, schema: any): any =>
  typeof schema?.$ref === "string" ? resolve(spec, spec.components.schemas[schema.$ref.split("/").pop()]) : schema
const requiresMember = (spec: Record<string, any>, schema: any): boolean => {
  const s = resolve(spec, schema)
  if (Array.isArray(s?.anyOf)) return s.anyOf.every((m: any) => requiresMember(spec, m))
  return Array.isArray(s?.required) && s.required.length > 0
}
const exampleOf = (spec: Record<string, any>, schema: any): unknown => {
  const s = resolve(spec, schema)
  if (Array.isArray(s?.examples) && s.examples.length > 0) return s.examples[0]
  return Array.isArray(s?.anyOf) ? s.anyOf.map((m: any) => exampleOf(spec, m)).find((e: unknown) => e) : undefined
}

// Served without reading the database: no 503 for these.
const noDatabase = new Set(["meta.healthz", "meta.openapi", "meta.docs", "meta.errors"])
const methods = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]

export const pipelineAnswers = (document: Record<string, any>): Record<string, any> => {
  const spec = structuredClone(document)
  const baseUrl: string = spec.servers?.[0]?.url ?? "http://localhost:3000"
  spec.components.headers = Headers
  for (const [path, item] of Object.entries<any>(spec.paths)) {
    for (const operation of Object.values<any>(item)) {
      const { responses } = operation
      for (const response of Object.values<any>(responses)) {
        const json = response.content?.["application/json"]
        if (json !== undefined) json.schema = withoutDecodeError(json.schema)
      }
      responses["400"] ??= errorResponse(ErrorCatalog.host_invalid.summary)
      // A public operation without query parameters ignores its query (the pipeline, Endpoint.ts): said so.
      const query = (operation.parameters ?? []).some((p: any) => p.in === "query")
      if (!query && (operation.security ?? []).length === 0) {
        operation.parameters = [...(operation.parameters ?? []), IgnoredQuery]
      }
      if (operation.requestBody !== undefined) {
        // A body whose schema requires no member may be left out, as the pipeline serves it (Endpoint.ts).
        operation.requestBody.required = Object.values<any>(operation.requestBody.content).some((media) =>
          requiresMember(spec, media.schema)
        )
        responses["413"] ??= errorResponse(ErrorCatalog.body_too_large.summary)
        responses["415"] ??= errorResponse(ErrorCatalog.unsupported_media_type.summary)
      }
      if ((path === "/subscribe" && operation.requestBody !== undefined) || path.startsWith("/merchant/")) {
        responses["429"] = errorResponse(ErrorCatalog.rate_limited.summary, ["Retry-After"])
      }
      if (!noDatabase.has(operation.operationId)) {
        responses["503"] = {
          ...(responses["503"] ?? errorResponse("A dependency (the database, the card network) is unavailable.")),
          headers: headerRefs(["Retry-After"])
        }
      }
      // The conditional GETs: declared by their If-None-Match parameter.
      if (operation.parameters?.some((p: any) => p.name === "if-none-match")) {
        const dated = operation.parameters.some((p: any) => p.name === "if-modified-since")
        const caching: Array<HeaderName> = [
          "ETag",
          ...(dated ? ["Last-Modified" as const] : []),
          "Cache-Control",
          "Expires"
        ]
        responses["200"].headers = { ...responses["200"].headers, ...headerRefs(caching) }
        responses["304"] = {
          description: dated
            ? "Not modified: the representation matches If-None-Match (or is not newer than If-Modified-Since)."
            : "Not modified: the representation matches If-None-Match.",
          headers: headerRefs(caching)
        }
      }
      for (const response of Object.values<any>(responses)) {
        response.headers = { ...headerRefs(["X-Request-Id"]), ...response.headers }
      }
    }
    // HEAD wherever GET is served: the GET's answers without their bodies.
    if (item.get !== undefined) {
      const { content: _, ...rest } = item.get
      item.head = {
        ...rest,
        operationId: `${item.get.operationId}.head`,
        summary: `${item.get.summary ?? path} (header fields only)`,
        description: `HEAD of ${path}: the header fields GET would send, Content-Length included, without the body.`,
        responses: Object.fromEntries(
          Object.entries<any>(item.get.responses).map(([status, { content: _, ...response }]) => [status, response])
        )
      }
    }
    const allowed = methods.filter((m) => item[m] !== undefined).concat("options").map((m) => m.toUpperCase())
    const first = item[methods.find((m) => item[m] !== undefined)!]
    const pathParameters = (first.parameters ?? []).filter((p: any) => p.in === "path")
    // TRACE echoes the request as message/http (HTTP_TRACE=on, the default), or answers 405 with Allow.
    item.trace = {
      tags: first.tags,
      operationId: `${first.operationId}.trace`,
      summary: `Echo a request to ${path}`,
      description:
        "The request as the server received it, as message/http (RFC 9110 9.3.8), for debugging proxies; with HTTP_TRACE=off, 405 and Allow.",
      security: [],
      parameters: pathParameters,
      responses: {
        "200": {
          description: "The request as received.",
          headers: headerRefs(["X-Request-Id"]),
          content: {
            "message/http": { schema: { type: "string" }, example: `TRACE ${path} HTTP/1.1\r\nhost: api\r\n\r\n` }
          }
        },
        "400": errorResponse(ErrorCatalog.host_invalid.summary, ["X-Request-Id"]),
        "405": { $ref: "#/components/responses/MethodNotAllowed" }
      }
    }
    item.options = {
      tags: first.tags,
      operationId: `${first.operationId}.options`,
      parameters: pathParameters,
      summary: `Methods of ${path}`,
      description: `The methods ${path} takes, in Allow (${
        allowed.join(", ")
      }). From an origin in SUBSCRIBE_ALLOWED_ORIGINS, POST /subscribe's preflight also answers CORS.`,
      security: [],
      responses: {
        "204": { description: "The methods this path takes.", headers: headerRefs(["X-Request-Id", "Allow"]) },
        "400": errorResponse(ErrorCatalog.host_invalid.summary, ["X-Request-Id"])
      }
    }
  }
  for (const item of Object.values<any>(spec.paths)) {
    for (const operation of Object.values<any>(item)) {
      for (const [status, response] of Object.entries<any>(operation.responses)) {
        if (response.$ref !== undefined) continue
        for (const [type, media] of Object.entries<any>(response.content ?? {})) {
          if (media.example !== undefined) continue
          if (type !== "application/json") {
            if (type === "text/html") response.headers = { ...response.headers, ...headerRefs(["Cache-Control"]) }
            media.example = Examples[type] ?? Examples["text/html"]
            continue
          }
          const code = ErrorCodeOf[status]
          const lifted = exampleOf(spec, media.schema)
          if (lifted !== undefined) media.example = lifted
          else if (code !== undefined && Number(status) >= 400) media.example = errorExample(baseUrl, code)
        }
      }
      for (const media of Object.values<any>(operation.requestBody?.content ?? {})) {
        const lifted = exampleOf(spec, media.schema)
        if (lifted !== undefined) media.example = lifted
      }
    }
  }
  // What any path answers to a method it does not take (TRACE's 405 refers to it too).
  const methodNotAllowed = errorResponse(ErrorCatalog.method_not_allowed.summary, ["X-Request-Id", "Allow"])
  spec.components.responses = {
    MethodNotAllowed: {
      ...methodNotAllowed,
      content: {
        "application/json": {
          ...methodNotAllowed.content["application/json"],
          example: errorExample(baseUrl, "method_not_allowed")
        }
      }
    }
  }
  for (const item of Object.values<any>(spec.paths)) {
    for (const operation of Object.values<any>(item)) {
      const samples = codeSamples(baseUrl, operation.operationId)
      if (samples !== undefined) operation["x-codeSamples"] = samples
    }
  }
  spec.info.contact = { name: "paysub API", url: `${baseUrl}/docs` }
  delete spec.components.schemas.HttpApiDecodeError
  delete spec.components.schemas.Issue
  delete spec.components.schemas.PropertyKey
  return readerLayout(spec)
}

// The API as documented at one base URL: its servers and the error catalogue's address are known only at start.
export const documentedApi = (api: HttpApi.HttpApi.Any, baseUrl: string): HttpApi.HttpApi.Any =>
  (api as HttpApi.HttpApi.AnyWithProps).annotateContext(OpenApi.annotations({
    description: [
      `Payment transfers and newsletter subscriptions. Every error has one body, {"error": {type, code, message, param?, doc_url, request_id}}; the codes are at ${baseUrl}/docs/errors. A member a body or an API call's query does not declare is refused with 400 parameter_unknown. What every path answers to HEAD, OPTIONS, TRACE and a method it does not take (405), and when a GET answers 304, is in the last section, ${HttpSemantics.displayName}.`,
      gettingStartedMarkdown(baseUrl)
    ].join("\n\n"),
    servers: [{ url: baseUrl }]
  }))

export const openApiDocument = (api: HttpApi.HttpApi.Any, baseUrl: string) =>
  OpenApi.fromApi(documentedApi(api, baseUrl) as any)
