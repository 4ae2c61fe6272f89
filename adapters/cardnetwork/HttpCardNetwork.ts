// CardNetwork over a processor's JSON API: POST {url}/authorizations with the transfer id as the
// Idempotency-Key, so a retried request (ours, after a lost connection or a 502/503/504) cannot authorize
// twice. Every failure becomes CardNetworkUnavailable with a reason built from status codes and error tags
// only: card data never reaches a reason, a log or a span.
import { FetchHttpClient, HttpClient, type HttpClientError, HttpClientRequest } from "@effect/platform"
import { Data, Duration, Effect, Either, Layer, Option, Redacted, Schedule, Schema } from "effect"
import {
  type Authorization,
  type AuthorizationRequest,
  CardErrorCode,
  CardNetwork,
  type CardNetworkShape,
  CardNetworkUnavailable
} from "../../core/CardNetwork.ts"

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

// One try that went wrong; `transient` ones are retried.
class AttemptFailed
  extends Data.TaggedError("AttemptFailed")<{ readonly reason: string; readonly transient: boolean }>
{}

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
  return new AttemptFailed({
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

    const authorize = (request: AuthorizationRequest): Effect.Effect<Authorization, CardNetworkUnavailable> => {
      let httpRequest = HttpClientRequest.post(endpoint).pipe(
        HttpClientRequest.setHeader("Idempotency-Key", request.transferId),
        HttpClientRequest.acceptJson,
        HttpClientRequest.bodyUnsafeJson(requestBody(request))
      )
      if (options.apiKey !== undefined) httpRequest = HttpClientRequest.bearerToken(httpRequest, options.apiKey)
      let attempts = 0
      const tries = () => `${attempts} ${attempts === 1 ? "attempt" : "attempts"}`

      const attempt = Effect.suspend(() => {
        attempts++
        return client.execute(httpRequest)
      }).pipe(
        Effect.mapError(requestFailed),
        Effect.flatMap((response) =>
          Effect.flatMap(Effect.mapError(response.text, requestFailed), (text) => {
            const status = response.status
            if (status < 200 || status > 299) {
              return Effect.fail(
                new AttemptFailed({
                  reason: `card network answered HTTP ${status}`,
                  transient: retryStatuses.has(status)
                })
              )
            }
            let json: unknown
            try {
              json = JSON.parse(text)
            } catch {
              return Effect.fail(
                new AttemptFailed({
                  reason: `card network answered HTTP ${status} with a body that is not JSON`,
                  transient: false
                })
              )
            }
            return Either.match(decodeAnswer(json), {
              // The parse issue may quote the body: only its kind is kept.
              onLeft: () =>
                Effect.fail(
                  new AttemptFailed({
                    reason: `card network answered HTTP ${status} with JSON that is not an authorization answer`,
                    transient: false
                  })
                ),
              onRight: (answer) => Effect.succeed(toAuthorization(answer))
            })
          })
        )
      )

      return attempt.pipe(
        Effect.retry({ schedule: retry, while: (failure) => failure.transient }),
        Effect.mapError((failure) =>
          new CardNetworkUnavailable({
            reason: attempts > 1 ? `${failure.reason} (${tries()})` : failure.reason
          })
        ),
        Effect.timeoutFail({
          duration: timeout,
          onTimeout: () =>
            new CardNetworkUnavailable({
              reason: `card network gave no answer within ${Duration.format(timeout)} (${tries()})`
            })
        }),
        Effect.withSpan("HttpCardNetwork.authorize", {
          attributes: { "card_network.host": base.host, "card_network.transfer_id": request.transferId }
        })
      )
    }

    return CardNetwork.of({ authorize })
  })

const layer = (options: HttpCardNetworkOptions): Layer.Layer<CardNetwork, never, HttpClient.HttpClient> =>
  Layer.effect(CardNetwork, make(options))

// With the fetch-based HttpClient, which Node (18+) and Deno both have.
const layerFetch = (options: HttpCardNetworkOptions): Layer.Layer<CardNetwork> =>
  Layer.provide(layer(options), FetchHttpClient.layer)

export const HttpCardNetwork = { layer, layerFetch, make } as const
