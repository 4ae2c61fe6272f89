// CardNetwork over a processor's JSON API (docs/card-processor.md): POST {url}/authorizations with the
// transfer id as the Idempotency-Key, and POST {url}/refunds with the refund id as the key, so a retried
// request (ours, after a lost connection or a 502/503/504) cannot authorize or refund twice; GET
// {url}/authorizations/{transfer id} and GET {url}/refunds/{refund id} for the outcome of one whose answer
// was lost. Time-outs, retries and what each failure means are one call's (adapters/cardnetwork/ProcessorCall.ts).
// A refund carries no card data: it names the charge by transfer id and authorization code.
import { FetchHttpClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { Duration, Effect, Layer, Option, Redacted, Schema } from "effect"
import {
  type Authorization,
  type AuthorizationRequest,
  CardErrorCode,
  CardNetwork,
  type CardNetworkOutcomeUnknown,
  type CardNetworkShape,
  CardNetworkUnavailable,
  type RefundRequest
} from "../../core/payments/CardNetwork.ts"
import { RefundFailureReason, type RefundOutcome } from "../../core/payments/Refund.ts"
import { decodeAnswer, decodeLookup, DefaultTimeout, makeCall, parseBaseUrl } from "./ProcessorCall.ts"

export { DefaultTimeout, MaxRetries, RetryBase } from "./ProcessorCall.ts"

export interface HttpCardNetworkOptions {
  // The processor's base URL, e.g. https://processor.example.com/v1 (no credentials: use apiKey).
  readonly url: string
  // Sent as `Authorization: Bearer <apiKey>` when given.
  readonly apiKey?: Redacted.Redacted<string>
  // Upper bound for one call, retries included. Defaults to DefaultTimeout.
  readonly timeout?: Duration.DurationInput
}

// The processor's answer to an authorization.
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

// The processor's answer to a refund.
export const ProcessorRefundAnswer = Schema.Union(
  Schema.Struct({ status: Schema.Literal("succeeded") }),
  Schema.Struct({ status: Schema.Literal("failed"), failure_reason: RefundFailureReason })
)
export type ProcessorRefundAnswer = typeof ProcessorRefundAnswer.Type

const authorizationBody = (request: AuthorizationRequest) => ({
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

const refundBody = (request: RefundRequest) => ({
  id: request.refundId,
  transfer: request.transferId,
  authorization_code: request.authorizationCode,
  amount: request.amount.toString(),
  currency: request.currency
})

const toAuthorization = (answer: ProcessorAnswer): Authorization =>
  answer.status === "approved"
    ? { _tag: "Approved", authorizationCode: answer.authorization_code }
    : answer.decline_code === undefined
    ? { _tag: "Declined", code: answer.code }
    : { _tag: "Declined", code: answer.code, declineCode: answer.decline_code }

const toRefundOutcome = (answer: ProcessorRefundAnswer): RefundOutcome =>
  answer.status === "succeeded" ? { _tag: "Succeeded" } : { _tag: "Failed", reason: answer.failure_reason }

const decodeAuthorization = decodeAnswer(ProcessorAnswer, "an authorization answer", toAuthorization)
const decodeAuthorizationLookup = decodeLookup(ProcessorAnswer, "an authorization's state", toAuthorization)
const decodeRefund = decodeAnswer(ProcessorRefundAnswer, "a refund answer", toRefundOutcome)
const decodeRefundLookup = decodeLookup(ProcessorRefundAnswer, "a refund's state", toRefundOutcome)

// A lookup changes nothing at the processor: whatever it fails with, the caller asks again later.
const asUnavailable = <A>(self: Effect.Effect<A, CardNetworkUnavailable | CardNetworkOutcomeUnknown>) =>
  Effect.catchTag(self, "CardNetworkOutcomeUnknown", ({ reason }) => new CardNetworkUnavailable({ reason }))

export const make = (
  options: HttpCardNetworkOptions
): Effect.Effect<CardNetworkShape, never, HttpClient.HttpClient> =>
  Effect.gen(function*() {
    // A bad URL is a configuration bug: the layer dies, with a message that does not repeat the URL.
    const base = yield* Effect.sync(() => parseBaseUrl(options.url))
    const root = `${base.origin}${base.pathname.replace(/\/+$/, "")}`
    const authorizations = `${root}/authorizations`
    const refunds = `${root}/refunds`
    const call = makeCall({
      client: yield* HttpClient.HttpClient,
      apiKey: options.apiKey,
      timeout: options.timeout === undefined ? DefaultTimeout : Duration.decode(options.timeout),
      host: base.host
    })
    const post = (url: string, key: string, body: object) =>
      HttpClientRequest.post(url).pipe(
        HttpClientRequest.setHeader("Idempotency-Key", key),
        HttpClientRequest.acceptJson,
        HttpClientRequest.bodyUnsafeJson(body)
      )
    const get = (url: string, id: string) =>
      HttpClientRequest.get(`${url}/${encodeURIComponent(id)}`).pipe(HttpClientRequest.acceptJson)
    const transfer = (id: string) => ({ "card_network.transfer_id": id })

    return CardNetwork.of({
      authorize: (request) =>
        call(
          "HttpCardNetwork.authorize",
          transfer(request.transferId),
          post(authorizations, request.transferId, authorizationBody(request)),
          decodeAuthorization
        ),
      lookup: (transferId) =>
        call("HttpCardNetwork.lookup", transfer(transferId), get(authorizations, transferId), decodeAuthorizationLookup)
          .pipe(asUnavailable),
      refund: (request) =>
        call(
          "HttpCardNetwork.refund",
          { ...transfer(request.transferId), "card_network.refund_id": request.refundId },
          post(refunds, request.refundId, refundBody(request)),
          decodeRefund
        ),
      lookupRefund: (refundId) =>
        call(
          "HttpCardNetwork.lookupRefund",
          { "card_network.refund_id": refundId },
          get(refunds, refundId),
          decodeRefundLookup
        ).pipe(asUnavailable)
    })
  })

const layer = (options: HttpCardNetworkOptions): Layer.Layer<CardNetwork, never, HttpClient.HttpClient> =>
  Layer.effect(CardNetwork, make(options))

// With the fetch-based HttpClient, which Node (18+) and Deno both have.
const layerFetch = (options: HttpCardNetworkOptions): Layer.Layer<CardNetwork> =>
  Layer.provide(layer(options), FetchHttpClient.layer)

export const HttpCardNetwork = { layer, layerFetch, make } as const
