// CardNetwork over a processor's JSON API: POST {url}/authorizations with the transfer id as the
// Idempotency-Key, so a retried request (ours, after a lost connection or a 502/503/504) cannot authorize
// twice; GET {url}/authorizations/{transfer id} for the outcome of one whose answer was lost. A failure before
// the request could reach the processor (connection refused, DNS) or a 4xx it answered is
// CardNetworkUnavailable; a time-out, a connection dropped after sending, a 5xx, or a 2xx that cannot be read
// is CardNetworkOutcomeUnknown. Reasons are built from status codes and error tags only: card data never
// reaches a reason, a log or a span.
import { FetchHttpClient, HttpClient, type HttpClientError, HttpClientRequest } from "@effect/platform"
import { Data, Duration, Effect, Either, Fiber, Layer, Option, Redacted, Schedule, Schema } from "effect"
import {
  type Authorization,
  type AuthorizationLookup,
  type AuthorizationRequest,
  CardErrorCode,
  CardNetwork,
  CardNetworkOutcomeUnknown,
  type CardNetworkShape,
  CardNetworkUnavailable
} from "../../core/payments/CardNetwork.ts"

export interface HttpCardNetworkOptions {
  // The processor's base URL, e.g. https://processor.example.com/v1 (no credentials: use apiKey).
  readonly url: string
  // Sent as `Authorization: Bearer <apiKey>` when given.
  readonly apiKey?: Redacted.Redacted<string>
  // Upper bound for one authorize call, retries included. Defaults to DefaultTimeout.
  readonly timeout?: Duration.DurationInput
}

export const DefaultTimeout = Duration.seconds(10)
// Transient failures are tried again at most this many times, after about 100 ms and then 200 ms.
export const MaxRetries = 2
export const RetryBase = Duration.millis(100)

// A lookup's answer while the processor has not decided yet.
const Undecided = Schema.Struct({ status: Schema.Literal("pending") })

// The processor's answer to a 2xx.
export const ProcessorAnswer = Schema.Union(
  Schema.Struct({
    status: Schema.Literal("approved"),
    authorization_code: Schema.NonEmptyString
  }),
  Schema.Struct({
    status: Schema.Literal("declined"),
    code: CardErrorCode,
    decline_code: Schema.optionalWith(Schema.String, { exact: true, nullable: true })
  })
)
export type ProcessorAnswer = typeof ProcessorAnswer.Type

const decodeAnswer = Schema.decodeUnknownEither(ProcessorAnswer)

// One try that went wrong; `transient` ones are retried. `maybeSent`: the processor may have got the request
// (it was sent and the answer was lost or unreadable), so the outcome is unknown.
class AttemptFailed extends Data.TaggedError("AttemptFailed")<{
  readonly reason: string
  readonly transient: boolean
  readonly maybeSent: boolean
}> {}

// The processor answered with an error status. A 4xx refuses the request (a wrong key, a request it cannot
// read): nothing was authorized. A 5xx says it failed somewhere on its side, possibly after the charge was
// made: the request reached it, so the outcome is unknown until a lookup tells (docs/unknown-outcomes.md).
const answeredStatus = (status: number) =>
  new AttemptFailed({
    reason: `card network answered HTTP ${status}`,
    transient: retryStatuses.has(status),
    maybeSent: status >= 500
  })

// Connection failures that happen before a byte of the request is sent.
const notSentCodes: ReadonlySet<string> = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "UND_ERR_CONNECT_TIMEOUT"
])
// Deno's fetch names no code: its message says the connection could not be made ("tcp connect error",
// "dns error"). Read only to decide, never kept: it quotes the URL.
const notSentMessage = /connect error|connection refused|dns error|failed to lookup/i
const messages = (cause: unknown): string => {
  let text = ""
  let current = cause
  for (let depth = 0; depth < 4 && typeof current === "object" && current !== null; depth++) {
    const message = (current as { readonly message?: unknown }).message
    if (typeof message === "string") text += ` ${message}`
    current = (current as { readonly cause?: unknown }).cause
  }
  return text
}

const retryStatuses: ReadonlySet<number> = new Set([502, 503, 504])

// A system error code (ECONNREFUSED, ECONNRESET, UND_ERR_SOCKET ...) from the cause chain, if there is one:
// a code is safe to show, a message might quote anything.
const errorCode = (cause: unknown): string | undefined => {
  let current = cause
  for (let depth = 0; depth < 4 && typeof current === "object" && current !== null; depth++) {
    const code = (current as { readonly code?: unknown }).code
    if (typeof code === "string" && /^[A-Z][A-Z0-9_]{1,40}$/.test(code)) return code
    current = (current as { readonly cause?: unknown }).cause
  }
  return undefined
}

const requestFailed = (error: HttpClientError.HttpClientError): AttemptFailed => {
  const code = errorCode(error.cause)
  const transport = error._tag === "RequestError" && error.reason === "Transport"
  const notSent = transport &&
    (code === undefined ? notSentMessage.test(messages(error.cause)) : notSentCodes.has(code))
  return new AttemptFailed({
    maybeSent: !notSent,
    reason: `card network ${
      error.reason === "Transport" ? "unreachable" : "request failed"
    }: ${error._tag} ${error.reason}${code === undefined ? "" : ` ${code}`}`,
    // A request that may not have arrived can be sent again: the Idempotency-Key makes it safe.
    transient: error._tag === "RequestError" && error.reason === "Transport"
  })
}

const parseBaseUrl = (url: string): URL => {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    // The TypeError of URL quotes the input; keep it out of logs all the same.
    throw new Error("card network URL is not a valid URL (expected https://host/path)")
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new Error(`card network URL must start with http:// or https://, not ${parsed.protocol}//`)
  }
  if (parsed.username !== "" || parsed.password !== "") {
    throw new Error("card network URL must not hold credentials: pass the API key as apiKey")
  }
  if (parsed.search !== "" || parsed.hash !== "") {
    throw new Error("card network URL must not have a query or fragment")
  }
  return parsed
}

const requestBody = (request: AuthorizationRequest) => ({
  transfer_id: request.transferId,
  card: {
    number: Redacted.value(request.pan),
    exp_month: request.expiry.month,
    exp_year: request.expiry.year,
    cvc: Redacted.value(request.cvc)
  },
  ...Option.match(request.authenticationValue, {
    onNone: () => ({}),
    onSome: (value) => ({ authentication_value: Redacted.value(value) })
  }),
  amount: request.amount.toString(),
  currency: request.currency,
  merchant_id: request.merchantId
})

const toAuthorization = (answer: ProcessorAnswer): Authorization =>
  answer.status === "approved"
    ? { _tag: "Approved", authorizationCode: answer.authorization_code }
    : answer.decline_code === undefined
    ? { _tag: "Declined", code: answer.code }
    : { _tag: "Declined", code: answer.code, declineCode: answer.decline_code }

// The body of a 2xx, as JSON, or the failure that says it was not.
const parseJson = (status: number, text: string): Either.Either<unknown, AttemptFailed> => {
  try {
    return Either.right(JSON.parse(text))
  } catch {
    return Either.left(
      new AttemptFailed({
        reason: `card network answered HTTP ${status} with a body that is not JSON`,
        transient: false,
        maybeSent: true
      })
    )
  }
}

// The parse issue may quote the body: only its kind is kept.
const notAnAnswer = (status: number, what: string) =>
  new AttemptFailed({
    reason: `card network answered HTTP ${status} with JSON that is not ${what}`,
    transient: false,
    maybeSent: true
  })

const decodeAuthorization = (status: number, text: string): Effect.Effect<Authorization, AttemptFailed> => {
  if (status < 200 || status > 299) return Effect.fail(answeredStatus(status))
  return Either.flatMap(
    parseJson(status, text),
    (json) =>
      Either.mapBoth(decodeAnswer(json), {
        onLeft: () => notAnAnswer(status, "an authorization answer"),
        onRight: toAuthorization
      })
  )
}

const decodeLookup = (status: number, text: string): Effect.Effect<AuthorizationLookup, AttemptFailed> => {
  if (status === 404) return Effect.succeed({ _tag: "NotFound" })
  if (status < 200 || status > 299) return Effect.fail(answeredStatus(status))
  return Either.flatMap(parseJson(status, text), (json): Either.Either<AuthorizationLookup, AttemptFailed> => {
    if (Schema.is(Undecided)(json)) return Either.right({ _tag: "Undecided" })
    return Either.mapBoth(decodeAnswer(json), {
      onLeft: () => notAnAnswer(status, "an authorization's state"),
      onRight: toAuthorization
    })
  })
}

export const make = (
  options: HttpCardNetworkOptions
): Effect.Effect<CardNetworkShape, never, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    // A bad URL is a configuration bug: the layer dies, with a message that does not repeat the URL.
    const base = yield* Effect.sync(() => parseBaseUrl(options.url))
    const endpoint = `${base.origin}${base.pathname.replace(/\/+$/, "")}/authorizations`
    const timeout = options.timeout === undefined ? DefaultTimeout : Duration.decode(options.timeout)
    const client = yield* HttpClient.HttpClient
    const retry = Schedule.exponential(RetryBase).pipe(Schedule.intersect(Schedule.recurs(MaxRetries)))

    // One call with its retries and its time-out. It fails with OutcomeUnknown once any attempt may have reached
    // the processor (sent, and then no answer that can be read), else with Unavailable.
    const call = <A>(
      name: string,
      transferId: string,
      httpRequest: HttpClientRequest.HttpClientRequest,
      decode: (status: number, text: string) => Effect.Effect<A, AttemptFailed>
    ): Effect.Effect<A, CardNetworkUnavailable | CardNetworkOutcomeUnknown> => {
      const request = options.apiKey === undefined
        ? httpRequest
        : HttpClientRequest.bearerToken(httpRequest, options.apiKey)
      let attempts = 0
      let maybeSent = false
      const tries = () => `${attempts} ${attempts === 1 ? "attempt" : "attempts"}`
      const attempt = Effect.suspend(() => {
        attempts++
        return client.execute(request)
      }).pipe(
        Effect.mapError(requestFailed),
        Effect.flatMap((response) =>
          Effect.flatMap(Effect.mapError(response.text, requestFailed), (text) => decode(response.status, text))
        ),
        Effect.tapError((failure) => Effect.sync(() => (maybeSent ||= failure.maybeSent)))
      )
      return attempt.pipe(
        Effect.retry({ schedule: retry, while: (failure) => failure.transient }),
        Effect.mapError((failure) => {
          const reason = attempts > 1 ? `${failure.reason} (${tries()})` : failure.reason
          return maybeSent ? new CardNetworkOutcomeUnknown({ reason }) : new CardNetworkUnavailable({ reason })
        }),
        // Interruptible even when the caller is not (core/payments/Transfers.ts holds a reservation across the call):
        // otherwise the time-out below could not end a call that hangs.
        Effect.interruptible,
        Effect.timeoutFail({
          duration: timeout,
          onTimeout: () =>
            new CardNetworkOutcomeUnknown({
              reason: `card network gave no answer within ${Duration.format(timeout)} (${tries()})`
            })
        }),
        // On a fiber of its own, joined: a client hanging up interrupts the request's fiber, and, the call being
        // interruptible, that would reach the call and leave its transfer `pending` (core/payments/CardNetwork.ts).
        Effect.forkDaemon,
        Effect.flatMap(Fiber.join),
        Effect.withSpan(name, {
          attributes: { "card_network.host": base.host, "card_network.transfer_id": transferId }
        })
      )
    }

    const authorize = (request: AuthorizationRequest) =>
      call(
        "HttpCardNetwork.authorize",
        request.transferId,
        HttpClientRequest.post(endpoint).pipe(
          HttpClientRequest.setHeader("Idempotency-Key", request.transferId),
          HttpClientRequest.acceptJson,
          HttpClientRequest.bodyUnsafeJson(requestBody(request))
        ),
        decodeAuthorization
      )

    // A lookup changes nothing at the processor: whatever it fails with, the caller asks again later.
    const lookup = (transferId: string) =>
      call(
        "HttpCardNetwork.lookup",
        transferId,
        HttpClientRequest.get(`${endpoint}/${encodeURIComponent(transferId)}`).pipe(HttpClientRequest.acceptJson),
        decodeLookup
      ).pipe(
        Effect.catchTag("CardNetworkOutcomeUnknown", ({ reason }) => new CardNetworkUnavailable({ reason }))
      )

    return CardNetwork.of({ authorize, lookup })
  })

const layer = (options: HttpCardNetworkOptions): Layer.Layer<CardNetwork, never, HttpClient.HttpClient> =>
  Layer.effect(CardNetwork, make(options))

// With the fetch-based HttpClient, which Node (18+) and Deno both have.
const layerFetch = (options: HttpCardNetworkOptions): Layer.Layer<CardNetwork> =>
  Layer.provide(layer(options), FetchHttpClient.layer)

export const HttpCardNetwork = { layer, layerFetch, make } as const
