import { HttpServerResponse } from "@effect/platform"
import { Cause, Effect, FiberRef } from "effect"
import { globalValue } from "effect/GlobalValue"
import { sha256 } from "../../../adapters/crypto/Sha256.ts"
import { type ApiError, apiError, isApiError, statusOf } from "./ApiError.ts"
import { makeRateLimiter, type RateLimit, type RateLimiter } from "./RateLimiter.ts"
import { jsonAnswer } from "./TextBody.ts"

// The edge of the pipeline (apps/http/pipeline/Pipeline.ts): every error, whoever raised it (a handler, a decoder, the
// router, a defect), leaves as the one documented error body with its status, doc_url and request id; request
// ids, media types and the rate limits' buckets are read here.
export const RequestIdHeader = "x-request-id"
export const acceptedBodies = ["application/json", "application/x-www-form-urlencoded"]

// One set of token buckets per process.
export interface Limiters {
  readonly subscribe: RateLimiter
  readonly merchant: RateLimiter & { readonly enabled: boolean }
  readonly signIn: RateLimiter
}
export const makeLimiters = (
  limits: { readonly subscribe: RateLimit; readonly merchant: RateLimit; readonly signIn: RateLimit }
): Limiters => ({
  subscribe: makeRateLimiter(limits.subscribe),
  merchant: Object.assign(makeRateLimiter(limits.merchant), { enabled: limits.merchant.limit > 0 }),
  signIn: makeRateLimiter(limits.signIn)
})

// Handlers that render a body to keep (idempotent replays) read the request id from here: the pipeline sets it
// as it forks the request's fiber.
export const CurrentRequestId = globalValue("paysub/CurrentRequestId", () => FiberRef.unsafeMake(""))
export const currentRequestId: Effect.Effect<string> = FiberRef.get(CurrentRequestId)

export const errorBody = (baseUrl: string, e: ApiError, requestId: string) => ({
  error: { ...e.error, doc_url: `${baseUrl}/docs/errors#${e.error.code}`, request_id: requestId }
})

export const hasBody = (headers: { readonly [name: string]: string | undefined }) =>
  headers["transfer-encoding"] !== undefined || Number(headers["content-length"] ?? 0) > 0

export const mediaType = (headers: { readonly [name: string]: string | undefined }) =>
  (headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase()

export const unparsableBody = () =>
  apiError("body_invalid", "The request body could not be parsed as its Content-Type.")

// Decode failures are ApiErrors already (the pipeline's decoders make them), so every known error is one.
const toApiError = (cause: Cause.Cause<unknown>): ApiError | undefined => {
  const e = Cause.squash(cause)
  return isApiError(e) ? e : undefined
}

// 32 hex digits: 80 random bits per process, then a counter (12 digits), unique without a UUID per request.
const requestIdPrefix = `req_${Buffer.from(crypto.getRandomValues(new Uint8Array(10))).toString("hex")}`
let requestCount = 0
const newRequestId = () => `${requestIdPrefix}${(requestCount++).toString(16).padStart(12, "0")}`

// The client's X-Request-Id when it is a sensible one, else a new id.
export const requestIdOf = (incoming: string | undefined) =>
  incoming !== undefined && /^[\w.-]{1,64}$/.test(incoming) ? incoming : newRequestId()

// Which bucket a request draws from: POST /subscribe and the console's sign-in by client address, the merchant
// API by API key.
export const limitKey = (
  method: string,
  path: string,
  authorization: string | undefined,
  remoteAddress: string | undefined,
  limiters: Limiters
): [string, keyof Limiters] | undefined => {
  if (path === "/subscribe" && method === "POST") return [`ip:${remoteAddress ?? "unknown"}`, "subscribe"]
  if (path === "/console/sign-in" && method === "POST") return [`ip:${remoteAddress ?? "unknown"}`, "signIn"]
  // A limit that is off costs no hash of the key.
  if (path.startsWith("/merchant/") && authorization !== undefined && limiters.merchant.enabled) {
    return [`key:${sha256(authorization, "base64url")}`, "merchant"]
  }
  return undefined
}

// RFC 9110 7.2 and RFC 3986 3.2: a Host is a host (an IP literal in brackets, or a name of unreserved,
// sub-delim and %-encoded characters) and an optional port of at most 65535. A request with another answers
// 400 before anything else reads it: some code builds a URL from it (a handler's whole request does), and an
// unparsable one must not reach that code. The last good one is kept: a client sends the same Host every time.
const authority = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})*?(?::(\d{0,5}))?$/
let lastGoodHost = ""
export const validHost = (host: string | undefined): boolean => {
  // An empty Host is what RFC 9110 asks of a client whose target has no authority.
  if (host === undefined || host === "" || host === lastGoodHost) return true
  const match = authority.exec(host)
  if (match === null || Number(match[1] ?? 0) > 65535) return false
  try {
    new URL(`http://${host}/`)
  } catch {
    return false
  }
  lastGoodHost = host
  return true
}

export const rateLimited = (wait: number) => apiError("rate_limited", `Too many requests: retry in ${wait} s.`)

// The storage is away or cannot take writes (StorageHealth.isUnavailable, each adapter's own): nothing was
// written, and the
// same request, with the same Idempotency-Key, may succeed a moment later.
export const StorageRetryAfter = 1
const storageUnavailable = apiError(
  "service_unavailable",
  "The database cannot take this request now; nothing was written. Retry after the Retry-After seconds with the same Idempotency-Key."
)

// How every answer leaves: errors as the documented body (a storage fault is service_unavailable, any other
// defect is logged and becomes internal_error; an interrupted request, whose client went away, a 499 nobody
// reads), with the request id on every response.
export const makeResponder = (baseUrl: string, isUnavailable: (error: unknown) => boolean) => {
  // A failure whose every error and defect is the storage's being away.
  const storageAway = (cause: Cause.Cause<unknown>) => {
    const all = [...Cause.failures(cause), ...Cause.defects(cause)]
    return all.length > 0 && all.every(isUnavailable)
  }
  const render = (e: ApiError, requestId: string, headers: Record<string, string> = {}) =>
    jsonAnswer(errorBody(baseUrl, e, requestId), { status: statusOf(e), headers })
  const respond = <E, R>(
    requestId: string,
    effect: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, never, R> => {
    // One step for both outcomes: a success only gets its request id.
    return Effect.matchCauseEffect(effect, {
      onSuccess: (response) => Effect.succeed(HttpServerResponse.setHeader(response, RequestIdHeader, requestId)),
      onFailure: (cause) => {
        const withId = (response: HttpServerResponse.HttpServerResponse) =>
          HttpServerResponse.setHeader(response, RequestIdHeader, requestId)
        const known = toApiError(cause)
        if (known !== undefined) return Effect.succeed(withId(render(known, requestId)))
        if (Cause.isInterruptedOnly(cause)) return Effect.succeed(withId(HttpServerResponse.empty({ status: 499 })))
        // Not logged per request: the background loops log the outage once (docs/operations.md).
        if (storageAway(cause)) {
          return Effect.succeed(
            withId(render(storageUnavailable, requestId, { "retry-after": String(StorageRetryAfter) }))
          )
        }
        return Effect.as(
          Effect.annotateLogs(Effect.logError("request failed", cause), "request_id", requestId),
          withId(render(apiError("internal_error", "An internal error occurred."), requestId))
        )
      }
    })
  }
  return { render, respond }
}
