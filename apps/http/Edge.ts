import {
  HttpApiBuilder,
  HttpApiError,
  type HttpApp,
  HttpIncomingMessage,
  HttpServerError,
  HttpServerRequest,
  HttpServerResponse
} from "@effect/platform"
import { Cause, Clock, Context, Effect, FiberRef, Option } from "effect"
import { globalValue } from "effect/GlobalValue"
import { sha256 } from "../../adapters/crypto/Sha256.ts"
import { SiteSettings } from "../../core/SiteSettings.ts"
import { type ApiError, apiError, isApiError, statusOf } from "./ApiError.ts"
import { makeRateLimiter, type RateLimit, type RateLimiter } from "./RateLimiter.ts"
import type { RouteTable } from "./Routes.ts"

// The HTTP edge both apps share. Every error, whoever raised it (a handler, the payload decoder, the
// router, a defect), leaves as the one documented error body with its status, doc_url and request id; and
// what the router cannot know (OPTIONS, 405 + Allow, TRACE, HEAD's Content-Length, limits) is decided here.
export const RequestIdHeader = "x-request-id"
export const acceptedBodies = ["application/json", "application/x-www-form-urlencoded"]

export interface EdgeOptions {
  readonly maxBodyBytes: number
  readonly routes: RouteTable
  readonly trace: boolean
  readonly limiters: Limiters
}

// One pair of token buckets per process, shared by the edge and the hot path (apps/http/HotPath.ts).
export interface Limiters {
  readonly subscribe: RateLimiter
  readonly merchant: RateLimiter
}
export const makeLimiters = (limits: { readonly subscribe: RateLimit; readonly merchant: RateLimit }): Limiters => ({
  subscribe: makeRateLimiter(limits.subscribe),
  merchant: makeRateLimiter(limits.merchant)
})

// Handlers that render a body to keep (idempotent replays) read the request id from here.
export const CurrentRequestId = globalValue("paysub/CurrentRequestId", () => FiberRef.unsafeMake(""))

export const errorBody = (baseUrl: string, e: ApiError, requestId: string) => ({
  error: { ...e.error, doc_url: `${baseUrl}/docs/errors#${e.error.code}`, request_id: requestId }
})

export const hasBody = (headers: { readonly [name: string]: string | undefined }) =>
  headers["transfer-encoding"] !== undefined || Number(headers["content-length"] ?? 0) > 0

export const mediaType = (headers: { readonly [name: string]: string | undefined }) =>
  (headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase()

const pathname = (url: string) => url.split("?")[0]!

const fromDecodeError = (e: HttpApiError.HttpApiDecodeError): ApiError => {
  const issue = e.issues[0]
  const param = issue?.path.join(".") ?? ""
  if (issue === undefined || param === "") {
    return apiError("body_invalid", "The request body must be an object of parameters.")
  }
  if (issue._tag === "Missing") return apiError("parameter_missing", `Missing required parameter: ${param}.`, { param })
  const code = issue.path[issue.path.length - 1] === "email" ? "email_invalid" : "parameter_invalid"
  return apiError(code, issue.message, { param })
}

export const unparsableBody = () =>
  apiError("body_invalid", "The request body could not be parsed as its Content-Type.")

const toApiError = (cause: Cause.Cause<unknown>): ApiError | undefined => {
  const e = Cause.squash(cause)
  if (isApiError(e)) return e
  if (e instanceof HttpApiError.HttpApiDecodeError) return fromDecodeError(e)
  if (e instanceof HttpServerError.RouteNotFound) return apiError("route_not_found", "No such route.")
  if (e instanceof HttpServerError.RequestError && (e.cause as Error | undefined)?.message === "maxBytes exceeded") {
    return apiError("body_too_large", "The request body is too large.")
  }
  if (e instanceof HttpServerError.RequestError && e.reason === "Decode") return unparsableBody()
  return undefined
}

const newRequestId = () => `req_${crypto.randomUUID().replaceAll("-", "")}`

// The client's X-Request-Id when it is a sensible one, else a new id.
export const requestIdOf = (incoming: string | undefined) =>
  incoming !== undefined && /^[\w.-]{1,64}$/.test(incoming) ? incoming : newRequestId()

const redactedInTrace = new Set(["authorization", "cookie", "proxy-authorization"])

// TRACE: the request line and header fields as received (Node keeps their case and order in rawHeaders),
// credentials left out.
const traceEcho = (request: HttpServerRequest.HttpServerRequest) => {
  const source = request.source as { rawHeaders?: Array<string>; httpVersion?: string } | undefined
  const raw = source?.rawHeaders ?? Object.entries(request.headers).flat()
  const lines = [`${request.method} ${request.url} HTTP/${source?.httpVersion ?? "1.1"}`]
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!
    lines.push(redactedInTrace.has(name.toLowerCase()) ? `${name}: [removed]` : `${name}: ${raw[i + 1]}`)
  }
  return HttpServerResponse.text(`${lines.join("\r\n")}\r\n\r\n`, { contentType: "message/http" })
}

// The client's address, for servers whose request object cannot carry it: Deno.serve hands it to its handler
// beside the web Request, and the Deno app passes it on to the web handler as this per-request service.
export class ClientAddress extends Context.Tag("ClientAddress")<ClientAddress, string>() {}

// Which bucket a request draws from: POST /subscribe by client address, the merchant API by API key.
export const limitKey = (
  method: string,
  path: string,
  authorization: string | undefined,
  remoteAddress: string | undefined
): [string, keyof Limiters] | undefined => {
  if (path === "/subscribe" && method === "POST") return [`ip:${remoteAddress ?? "unknown"}`, "subscribe"]
  if (path.startsWith("/merchant/") && authorization !== undefined) {
    return [`key:${sha256(authorization, "base64url")}`, "merchant"]
  }
  return undefined
}

export const rateLimited = (wait: number) => apiError("rate_limited", `Too many requests: retry in ${wait} s.`)

// How every answer leaves: errors as the documented body (a defect is logged and becomes internal_error; an
// interrupted request, whose client went away, a 499 nobody reads), with the request id on every response.
export const makeResponder = (baseUrl: string) => {
  const render = (e: ApiError, requestId: string, headers: Record<string, string> = {}) =>
    HttpServerResponse.unsafeJson(errorBody(baseUrl, e, requestId), { status: statusOf(e), headers })
  const respond = <E, R>(
    requestId: string,
    effect: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, never, R> =>
    effect.pipe(
      Effect.catchAllCause((cause) => {
        const known = toApiError(cause)
        if (known !== undefined) return Effect.succeed(render(known, requestId))
        if (Cause.isInterruptedOnly(cause)) return Effect.succeed(HttpServerResponse.empty({ status: 499 }))
        return Effect.as(
          Effect.annotateLogs(Effect.logError("request failed", cause), "request_id", requestId),
          render(apiError("internal_error", "An internal error occurred."), requestId)
        )
      }),
      Effect.map((response) => HttpServerResponse.setHeader(response, RequestIdHeader, requestId))
    )
  return { render, respond }
}

export const edgeLayer = (options: EdgeOptions) =>
  HttpApiBuilder.middleware(Effect.gen(function*() {
    const site = yield* SiteSettings
    const { render, respond } = makeResponder(site.baseUrl)

    const route = (
      app: HttpApp.Default<unknown>,
      request: HttpServerRequest.HttpServerRequest,
      requestId: string,
      now: number,
      clientAddress: string | undefined
    ): HttpApp.Default<unknown> => {
      const path = pathname(request.url)
      const allowed = options.routes.allowed(path)
      if ((request.method as string) === "TRACE") {
        if (!options.trace && allowed === undefined) return Effect.fail(apiError("route_not_found", "No such route."))
        return options.trace
          ? Effect.succeed(traceEcho(request))
          : Effect.succeed(render(
            apiError("method_not_allowed", "TRACE is disabled on this server."),
            requestId,
            { allow: allowed!.join(", ") }
          ))
      }
      if (allowed !== undefined && request.method === "OPTIONS") {
        return Effect.succeed(HttpServerResponse.empty({ status: 204, headers: { allow: allowed.join(", ") } }))
      }
      if (allowed !== undefined && !allowed.includes(request.method)) {
        return Effect.succeed(render(
          apiError("method_not_allowed", `${request.method} is not allowed on ${path}.`),
          requestId,
          { allow: allowed.join(", ") }
        ))
      }
      const limited = limitKey(request.method, path, request.headers.authorization, clientAddress)
      const wait = limited === undefined ? 0 : options.limiters[limited[1]](limited[0], now)
      if (wait > 0) return Effect.succeed(render(rateLimited(wait), requestId, { "retry-after": String(wait) }))
      if (Number(request.headers["content-length"] ?? 0) > options.maxBodyBytes) {
        return Effect.fail(apiError("body_too_large", `The request body is larger than ${options.maxBodyBytes} bytes.`))
      }
      if (hasBody(request.headers) && !acceptedBodies.includes(mediaType(request.headers))) {
        return Effect.fail(
          apiError("unsupported_media_type", `Content-Type must be one of ${acceptedBodies.join(", ")}.`)
        )
      }
      return HttpIncomingMessage.withMaxBodySize(app, Option.some(options.maxBodyBytes))
    }

    // HEAD answers carry the Content-Length the GET would have, without the body.
    const headLength = (
      request: HttpServerRequest.HttpServerRequest,
      response: HttpServerResponse.HttpServerResponse
    ) =>
      request.method === "HEAD" && response.body._tag === "Uint8Array"
        ? HttpServerResponse.setHeader(response, "content-length", String(response.body.body.length))
        : response

    return (app: HttpApp.Default<unknown>): HttpApp.Default =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const requestId = requestIdOf(request.headers[RequestIdHeader])
        const clientAddress = Option.isSome(request.remoteAddress)
          ? request.remoteAddress.value
          : Option.getOrUndefined(yield* Effect.serviceOption(ClientAddress))
        const routed = route(app, request, requestId, yield* Clock.currentTimeMillis, clientAddress)
        const response = yield* respond(requestId, routed).pipe(
          Effect.locally(CurrentRequestId, requestId),
          Effect.annotateLogs("request_id", requestId)
        )
        return headLength(request, response)
      })
  }))
