import {
  HttpApiBuilder,
  HttpApiError,
  type HttpApp,
  HttpIncomingMessage,
  HttpServerError,
  HttpServerRequest,
  HttpServerResponse
} from "@effect/platform"
import { Cause, Clock, Effect, FiberRef, Option } from "effect"
import { globalValue } from "effect/GlobalValue"
import { createHash } from "node:crypto"
import { SiteSettings } from "../../core/SiteSettings.ts"
import { type ApiError, apiError, isApiError, statusOf } from "./ApiError.ts"
import { makeRateLimiter, type RateLimit } from "./RateLimiter.ts"
import type { RouteTable } from "./Routes.ts"

// The HTTP edge both apps share. Every error, whoever raised it (a handler, the payload decoder, the
// router, a defect), leaves as the one documented error body with its status, doc_url and request id; and
// what the router cannot know (OPTIONS, 405 + Allow, TRACE, HEAD's Content-Length, limits) is decided here.
export const RequestIdHeader = "x-request-id"
const acceptedBodies = ["application/json", "application/x-www-form-urlencoded"]

export interface EdgeOptions {
  readonly maxBodyBytes: number
  readonly routes: RouteTable
  readonly trace: boolean
  readonly subscribeLimit: RateLimit
  readonly merchantLimit: RateLimit
}

// Handlers that render a body to keep (idempotent replays) read the request id from here.
export const CurrentRequestId = globalValue("paysub/CurrentRequestId", () => FiberRef.unsafeMake(""))

export const errorBody = (baseUrl: string, e: ApiError, requestId: string) => ({
  error: { ...e.error, doc_url: `${baseUrl}/docs/errors#${e.error.code}`, request_id: requestId }
})

const hasBody = (request: HttpServerRequest.HttpServerRequest) =>
  request.headers["transfer-encoding"] !== undefined || Number(request.headers["content-length"] ?? 0) > 0

const mediaType = (request: HttpServerRequest.HttpServerRequest) =>
  (request.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase()

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

const toApiError = (cause: Cause.Cause<unknown>): ApiError | undefined => {
  const e = Cause.squash(cause)
  if (isApiError(e)) return e
  if (e instanceof HttpApiError.HttpApiDecodeError) return fromDecodeError(e)
  if (e instanceof HttpServerError.RouteNotFound) return apiError("route_not_found", "No such route.")
  if (e instanceof HttpServerError.RequestError && (e.cause as Error | undefined)?.message === "maxBytes exceeded") {
    return apiError("body_too_large", "The request body is too large.")
  }
  if (e instanceof HttpServerError.RequestError && e.reason === "Decode") {
    return apiError("body_invalid", "The request body could not be parsed as its Content-Type.")
  }
  return undefined
}

const newRequestId = () => `req_${crypto.randomUUID().replaceAll("-", "")}`

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

const limitKey = (
  request: HttpServerRequest.HttpServerRequest,
  path: string
): [string, "subscribe" | "merchant"] | undefined => {
  if (path === "/subscribe" && request.method === "POST") {
    return [`ip:${Option.getOrElse(request.remoteAddress, () => "unknown")}`, "subscribe"]
  }
  const authorization = request.headers.authorization
  if (path.startsWith("/merchant/") && authorization !== undefined) {
    return [`key:${createHash("sha256").update(authorization).digest("base64url")}`, "merchant"]
  }
  return undefined
}

export const edgeLayer = (options: EdgeOptions) =>
  HttpApiBuilder.middleware(Effect.gen(function*() {
    const site = yield* SiteSettings
    const limiters = {
      subscribe: makeRateLimiter(options.subscribeLimit),
      merchant: makeRateLimiter(options.merchantLimit)
    }
    const render = (e: ApiError, requestId: string, headers: Record<string, string> = {}) =>
      HttpServerResponse.unsafeJson(errorBody(site.baseUrl, e, requestId), { status: statusOf(e), headers })

    const route = (
      app: HttpApp.Default<unknown>,
      request: HttpServerRequest.HttpServerRequest,
      requestId: string,
      now: number
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
      const limited = limitKey(request, path)
      const wait = limited === undefined ? 0 : limiters[limited[1]](limited[0], now)
      if (wait > 0) {
        return Effect.succeed(render(
          apiError("rate_limited", `Too many requests: retry in ${wait} s.`),
          requestId,
          { "retry-after": String(wait) }
        ))
      }
      if (Number(request.headers["content-length"] ?? 0) > options.maxBodyBytes) {
        return Effect.fail(apiError("body_too_large", `The request body is larger than ${options.maxBodyBytes} bytes.`))
      }
      if (hasBody(request) && !acceptedBodies.includes(mediaType(request))) {
        return Effect.fail(
          apiError("unsupported_media_type", `Content-Type must be one of ${acceptedBodies.join(", ")}.`)
        )
      }
      return app.pipe(
        HttpIncomingMessage.withMaxBodySize(Option.some(options.maxBodyBytes)),
        Effect.locally(CurrentRequestId, requestId)
      )
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
        const incoming = request.headers[RequestIdHeader]
        const requestId = incoming !== undefined && /^[\w.-]{1,64}$/.test(incoming) ? incoming : newRequestId()
        const response = yield* route(app, request, requestId, yield* Clock.currentTimeMillis).pipe(
          Effect.catchAllCause((cause) => {
            const known = toApiError(cause)
            if (known !== undefined) return Effect.succeed(render(known, requestId))
            // The client went away; nobody is left to answer and nothing went wrong on our side.
            if (Cause.isInterruptedOnly(cause)) return Effect.succeed(HttpServerResponse.empty({ status: 499 }))
            return Effect.as(
              Effect.logError("request failed", cause),
              render(apiError("internal_error", "An internal error occurred."), requestId)
            )
          }),
          Effect.annotateLogs("request_id", requestId)
        )
        return HttpServerResponse.setHeader(headLength(request, response), RequestIdHeader, requestId)
      })
  }))
