import { Context, type Effect, type Option, type Redacted, Schema } from "effect"
import type { Expiry } from "./Card.ts"
import type { CurrencyCode } from "./Currency.ts"

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

// The network could not be asked (down, time-out, garbage answer): nothing is known to be charged.
export class CardNetworkUnavailable extends Schema.TaggedError<CardNetworkUnavailable>()("CardNetworkUnavailable", {
  reason: Schema.String
}) {}

export interface CardNetworkShape {
  readonly authorize: (request: AuthorizationRequest) => Effect.Effect<Authorization, CardNetworkUnavailable>
}

export class CardNetwork extends Context.Tag("CardNetwork")<CardNetwork, CardNetworkShape>() {}
