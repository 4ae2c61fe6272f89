// One call to the card processor's JSON API, the same for every endpoint (adapters/cardnetwork/HttpCardNetwork.ts):
// retried on transient failures under the caller's idempotency key, bounded by one time-out, and failing with
// CardNetworkUnavailable (the request certainly did not reach the processor, or it refused it with a 4xx) or
// CardNetworkOutcomeUnknown (it may have: a time-out, a connection dropped after sending, a 5xx, a 2xx that
// cannot be read). Reasons are built from status codes and error tags only: card data never reaches a reason,
// a log or a span.
import { type HttpClient, type HttpClientError, HttpClientRequest } from "@effect/platform"
import { Data, Duration, Effect, Either, Fiber, type Redacted, Schedule, Schema } from "effect"
import { CardNetworkOutcomeUnknown, CardNetworkUnavailable } from "../../core/payments/CardNetwork.ts"

export const DefaultTimeout = Duration.seconds(10)
// Transient failures are tried again at most this many times, after about 100 ms and then 200 ms.
export const MaxRetries = 2
export const RetryBase = Duration.millis(100)

// One try that went wrong; `transient` ones are retried. `maybeSent`: the processor may have got the request
// (it was sent and the answer was lost or unreadable), so the outcome is unknown.
export class AttemptFailed extends Data.TaggedError("AttemptFailed")<{
  readonly reason: string
  readonly transient: boolean
  readonly maybeSent: boolean
}> {}

const retryStatuses: ReadonlySet<number> = new Set([502, 503, 504])

// The processor answered with an error status. A 4xx refuses the request (a wrong key, a request it cannot
// read): nothing was done. A 5xx says it failed somewhere on its side, possibly after the money moved: the
// request reached it, so the outcome is unknown until a lookup tells (docs/unknown-outcomes.md).
export const answeredStatus = (status: number) =>
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

export const parseBaseUrl = (url: string): URL => {
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

// A decoder of the processor's answers: status and body text to a value, or the failure of that attempt.
export type Decode<A> = (status: number, text: string) => Effect.Effect<A, AttemptFailed>

// A 2xx whose JSON is `schema`, as `A`. The parse issue may quote the body: only its kind (`what`) is kept.
export const decodeAnswer = <S, I, A>(schema: Schema.Schema<S, I>, what: string, to: (s: S) => A): Decode<A> => {
  const decode = Schema.decodeUnknownEither(schema)
  return (status, text) => {
    if (status < 200 || status > 299) return Effect.fail(answeredStatus(status))
    return Either.flatMap(parseJson(status, text), (json) =>
      Either.mapBoth(decode(json), {
        onLeft: () =>
          new AttemptFailed({
            reason: `card network answered HTTP ${status} with JSON that is not ${what}`,
            transient: false,
            maybeSent: true
          }),
        onRight: to
      }))
  }
}

// A lookup's answer while the processor has not decided yet.
const Undecided = Schema.Struct({ status: Schema.Literal("pending") })
const isUndecided = Schema.is(Undecided)
export type Undecided = { readonly _tag: "Undecided" }
export type NotFound = { readonly _tag: "NotFound" }

// A lookup's answer: 404 (never received), `{"status": "pending"}`, or an answer that is `schema`.
export const decodeLookup = <S, I, A>(
  schema: Schema.Schema<S, I>,
  what: string,
  to: (s: S) => A
): Decode<A | Undecided | NotFound> => {
  const read = decodeAnswer(
    Schema.Union(Undecided, schema),
    what,
    (answer): A | Undecided => isUndecided(answer) ? { _tag: "Undecided" } : to(answer as S)
  )
  return (status, text) => status === 404 ? Effect.succeed({ _tag: "NotFound" }) : read(status, text)
}

export interface CallOptions {
  readonly client: HttpClient.HttpClient
  readonly apiKey: Redacted.Redacted<string> | undefined
  readonly timeout: Duration.Duration
  readonly host: string
}

// One call with its retries and its time-out. It fails with OutcomeUnknown once any attempt may have reached
// the processor (sent, and then no answer that can be read), else with Unavailable.
export const makeCall = ({ apiKey, client, host, timeout }: CallOptions) => {
  const retry = Schedule.exponential(RetryBase).pipe(Schedule.intersect(Schedule.recurs(MaxRetries)))
  return <A>(
    name: string,
    attributes: Readonly<Record<string, string>>,
    httpRequest: HttpClientRequest.HttpClientRequest,
    decode: Decode<A>
  ): Effect.Effect<A, CardNetworkUnavailable | CardNetworkOutcomeUnknown> => {
    const request = apiKey === undefined ? httpRequest : HttpClientRequest.bearerToken(httpRequest, apiKey)
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
      Effect.withSpan(name, { attributes: { "card_network.host": host, ...attributes } })
    )
  }
}
