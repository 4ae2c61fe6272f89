import { Context, type Effect, type Option, type Redacted, Schema } from "effect"
import type { Expiry } from "./Card.ts"
import type { CurrencyCode } from "./Currency.ts"
import type { RefundOutcome } from "./Refund.ts"

export const CardErrorCode = Schema.Literal(
  "card_declined",
  "expired_card",
  "incorrect_number",
  "incorrect_cvc",
  "insufficient_funds",
  "processing_error",
  "authentication_required"
)
export type CardErrorCode = typeof CardErrorCode.Type

// Stripe's wording, which payment developers and their users already know.
export const cardErrorMessages: Record<CardErrorCode, string> = {
  card_declined: "Your card was declined.",
  expired_card: "Your card has expired. Check the expiration date or use a different card.",
  incorrect_number: "Your card number is incorrect.",
  incorrect_cvc: "Your card's security code is incorrect.",
  insufficient_funds: "Your card has insufficient funds.",
  processing_error: "An error occurred while processing your card. Try again in a little bit.",
  authentication_required: "Your card was declined. This transaction requires authentication."
}

export interface AuthorizationRequest {
  // Our transfer id: a processor that supports idempotency uses it so a retried call cannot charge twice.
  readonly transferId: string
  readonly pan: Redacted.Redacted<string>
  readonly expiry: Expiry
  readonly cvc: Redacted.Redacted<string>
  readonly authenticationValue: Option.Option<Redacted.Redacted<string>>
  readonly amount: bigint
  readonly currency: CurrencyCode
  readonly merchantId: string
}

export type Authorization =
  | { readonly _tag: "Approved"; readonly authorizationCode: string }
  | { readonly _tag: "Declined"; readonly code: CardErrorCode; readonly declineCode?: string }

// The network certainly did not get the request (connection refused, DNS, an error status it answered):
// nothing was charged.
export class CardNetworkUnavailable extends Schema.TaggedError<CardNetworkUnavailable>()("CardNetworkUnavailable", {
  reason: Schema.String
}) {}

// The request was sent and no answer came back (a time-out, a dropped connection, an answer that cannot be
// read): the card may have been charged. The transfer is recorded as `unknown` and reconciled by `lookup`.
export class CardNetworkOutcomeUnknown extends Schema.TaggedError<CardNetworkOutcomeUnknown>()(
  "CardNetworkOutcomeUnknown",
  { reason: Schema.String }
) {}

// What the network says about a transfer id it was (maybe) asked to authorize: its final answer, still
// undecided, or never received (nothing was charged).
export type AuthorizationLookup =
  | Authorization
  | { readonly _tag: "Undecided" }
  | { readonly _tag: "NotFound" }

// A refund of (part of) an approved transfer, named by our refund id: a processor that supports idempotency
// uses it so a retried call cannot refund twice. The transfer's authorization code names the charge.
export interface RefundRequest {
  readonly refundId: string
  readonly transferId: string
  readonly authorizationCode: string
  readonly amount: bigint
  readonly currency: CurrencyCode
}

// What the network says about a refund id it was (maybe) asked to make: its answer, still undecided, or never
// received (nothing moved).
export type RefundLookup = RefundOutcome | { readonly _tag: "Undecided" } | { readonly _tag: "NotFound" }

// Every call is bounded in time by the adapter itself, even when it runs in an uninterruptible region: the
// core holds a reservation across `authorize` and must get an answer or a failure back. And a call is not cut
// short by its caller's interruption (a client hanging up): an adapter whose call must stay interruptible for
// its own time-out runs it on a fiber of its own (adapters/cardnetwork/HttpCardNetwork.ts).
export interface CardNetworkShape {
  readonly authorize: (
    request: AuthorizationRequest
  ) => Effect.Effect<Authorization, CardNetworkUnavailable | CardNetworkOutcomeUnknown>
  readonly lookup: (transferId: string) => Effect.Effect<AuthorizationLookup, CardNetworkUnavailable>
  // The same two calls for refunds, with the same failures: unavailable (nothing moved), or the outcome
  // unknown (the refund is reconciled by lookupRefund).
  readonly refund: (
    request: RefundRequest
  ) => Effect.Effect<RefundOutcome, CardNetworkUnavailable | CardNetworkOutcomeUnknown>
  readonly lookupRefund: (refundId: string) => Effect.Effect<RefundLookup, CardNetworkUnavailable>
}

export class CardNetwork extends Context.Tag("CardNetwork")<CardNetwork, CardNetworkShape>() {}
