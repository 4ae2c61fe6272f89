// A card network in memory that answers by card number, after Stripe's test cards, so that every answer
// the port can give is reachable from a request without a processor account. Like a real network it
// checks neither the Luhn digit nor the expiry date: the core has done that before it asks. A refund names
// its charge by authorization code, never by card: the code an approval gets says how its refunds go
// (sandboxRefundCards).
import { Effect, Layer, Option, Redacted } from "effect"
import {
  type Authorization,
  type AuthorizationLookup,
  type AuthorizationRequest,
  type CardErrorCode,
  CardNetwork,
  CardNetworkOutcomeUnknown,
  type CardNetworkShape,
  type RefundLookup
} from "../../core/payments/CardNetwork.ts"
import type { RefundOutcome } from "../../core/payments/Refund.ts"

// What a card decides, before an adapter gives an approval its authorization code.
export type SandboxOutcome =
  | { readonly _tag: "Approved" }
  | { readonly _tag: "Declined"; readonly code: CardErrorCode; readonly declineCode?: string }

export interface SandboxCard {
  readonly pan: string
  readonly description: string
  readonly outcome: SandboxOutcome
  // 3-D Secure: declined with authentication_required unless the request carries an authentication value,
  // and approved when it does.
  readonly approvedWhenAuthenticated?: true
}

const approved: SandboxOutcome = { _tag: "Approved" }
const declined = (code: CardErrorCode, declineCode?: string): SandboxOutcome =>
  declineCode === undefined ? { _tag: "Declined", code } : { _tag: "Declined", code, declineCode }

// The table, as data for the documentation and the tests. Any card number not listed is approved.
export const sandboxCards: ReadonlyArray<SandboxCard> = [
  { pan: "4242424242424242", description: "Visa, approved", outcome: approved },
  { pan: "5555555555554444", description: "Mastercard, approved", outcome: approved },
  { pan: "4000000000000069", description: "expired card", outcome: declined("expired_card") },
  { pan: "4000000000000002", description: "generic decline", outcome: declined("card_declined", "generic_decline") },
  { pan: "4000000000009995", description: "insufficient funds", outcome: declined("insufficient_funds") },
  { pan: "4000000000000127", description: "incorrect CVC", outcome: declined("incorrect_cvc") },
  { pan: "4000000000000119", description: "processing error", outcome: declined("processing_error") },
  { pan: "4000000000009987", description: "lost card", outcome: declined("card_declined", "lost_card") },
  { pan: "4000000000009979", description: "stolen card", outcome: declined("card_declined", "stolen_card") },
  {
    pan: "4000002760003184",
    description: "3-D Secure required",
    outcome: declined("authentication_required"),
    approvedWhenAuthenticated: true
  }
]

const byPan: ReadonlyMap<string, SandboxCard> = new Map(sandboxCards.map((card) => [card.pan, card]))

// The decision for a card number (plain digits) and whether an authentication value came with it.
export const sandboxDecision = (pan: string, authenticated: boolean): SandboxOutcome => {
  const card = byPan.get(pan)
  if (card === undefined) return approved
  if (card.approvedWhenAuthenticated === true && authenticated) return approved
  return card.outcome
}

// The prefix ("SBX", or a refund card's) and three digits from the transfer id: the same transfer gets the
// same code, as it would from a processor that honours idempotency keys.
export const sandboxAuthorizationCode = (transferId: string, prefix = "SBX"): string => {
  let hash = 0
  for (let i = 0; i < transferId.length; i++) hash = (hash * 31 + transferId.charCodeAt(i)) >>> 0
  return `${prefix}${String(hash % 1000).padStart(3, "0")}`
}

// Cards whose first answer is a time-out (the outcome is unknown: the service answers 202 and records the
// transfer as `unknown`), and whose outcome the reconciler then learns by asking again. The sandbox keeps
// these outcomes in memory: after a restart it knows none, and such a transfer reconciles as never received
// (declined, processing_error), as does a transfer whose request died before the sandbox answered it.
export const sandboxTimeoutCards: ReadonlyArray<SandboxCard> = [
  { pan: "4000000000000903", description: "time-out, then reconciled as approved", outcome: approved },
  {
    pan: "4000000000000911",
    description: "time-out, then reconciled as declined",
    outcome: declined("card_declined", "generic_decline")
  }
]
const timesOut: ReadonlyMap<string, SandboxCard> = new Map(sandboxTimeoutCards.map((card) => [card.pan, card]))

// How the refunds of a charge go: answered at once, or a time-out first, the outcome then told by
// lookupRefund (kept in memory, like the time-out cards' authorizations).
export type SandboxRefundBehaviour =
  | { readonly _tag: "Answers"; readonly outcome: RefundOutcome }
  | { readonly _tag: "TimesOut"; readonly outcome: RefundOutcome }

export interface SandboxRefundCard {
  readonly pan: string
  readonly description: string
  // The first three characters of the approval's authorization code: stored with the transfer, the code
  // carries the card's refund behaviour to refund time, when the network sees no card.
  readonly codePrefix: string
  readonly refunds: SandboxRefundBehaviour
}

const succeeded: RefundOutcome = { _tag: "Succeeded" }
const refundsSucceed: SandboxRefundBehaviour = { _tag: "Answers", outcome: succeeded }

// Cards approved like any other, whose refunds do not simply succeed (after Stripe's refund test cards).
// Every other approved charge ("SBX" codes, or any code a processor gave) refunds successfully.
export const sandboxRefundCards: ReadonlyArray<SandboxRefundCard> = [
  {
    pan: "4000000000005126",
    description: "approved; its refunds fail with expired_or_canceled_card",
    codePrefix: "SBF",
    refunds: { _tag: "Answers", outcome: { _tag: "Failed", reason: "expired_or_canceled_card" } }
  },
  {
    pan: "4000000000007726",
    description: "approved; its refunds time out, then reconcile as succeeded",
    codePrefix: "SBT",
    refunds: { _tag: "TimesOut", outcome: succeeded }
  }
]
const refundCardByPan: ReadonlyMap<string, SandboxRefundCard> = new Map(
  sandboxRefundCards.map((card) => [card.pan, card])
)
const refundCardByPrefix: ReadonlyMap<string, SandboxRefundCard> = new Map(
  sandboxRefundCards.map((card) => [card.codePrefix, card])
)

// The authorization code's prefix for an approval of this card number.
export const sandboxAuthorizationPrefix = (pan: string): string => refundCardByPan.get(pan)?.codePrefix ?? "SBX"

// How the refunds of the charge with this authorization code go.
export const sandboxRefundBehaviour = (authorizationCode: string): SandboxRefundBehaviour =>
  refundCardByPrefix.get(authorizationCode.slice(0, 3))?.refunds ?? refundsSucceed

const answerOf = (outcome: SandboxOutcome, transferId: string, prefix: string): Authorization =>
  outcome._tag === "Approved"
    ? { _tag: "Approved", authorizationCode: sandboxAuthorizationCode(transferId, prefix) }
    : outcome

const authorize = (request: AuthorizationRequest): Effect.Effect<Authorization> =>
  Effect.sync(() => {
    const pan = Redacted.value(request.pan)
    return answerOf(
      sandboxDecision(pan, Option.isSome(request.authenticationValue)),
      request.transferId,
      sandboxAuthorizationPrefix(pan)
    )
  })

// Only the calls it left unanswered are remembered, by id: a lookup of one it answered at once is NotFound,
// as is any after a restart (the reconciler asks only about calls whose answer was lost).
const make = Effect.sync((): CardNetworkShape => {
  // The time-out cards are not refund cards: their approvals get "SBX" codes.
  const unanswered = new Map<string, SandboxOutcome>()
  const unansweredRefunds = new Map<string, RefundOutcome>()
  return {
    authorize: (request) => {
      const card = timesOut.get(Redacted.value(request.pan))
      if (card === undefined) return authorize(request)
      return Effect.suspend(() => {
        unanswered.set(request.transferId, card.outcome)
        return new CardNetworkOutcomeUnknown({ reason: "sandbox test card: the first answer is a time-out" })
      })
    },
    lookup: (transferId) =>
      Effect.sync((): AuthorizationLookup => {
        const outcome = unanswered.get(transferId)
        return outcome === undefined ? { _tag: "NotFound" } : answerOf(outcome, transferId, "SBX")
      }),
    refund: (request) =>
      Effect.suspend(() => {
        const behaviour = sandboxRefundBehaviour(request.authorizationCode)
        if (behaviour._tag === "Answers") return Effect.succeed(behaviour.outcome)
        unansweredRefunds.set(request.refundId, behaviour.outcome)
        return new CardNetworkOutcomeUnknown({ reason: "sandbox test card: a refund's first answer is a time-out" })
      }),
    lookupRefund: (refundId) => Effect.sync((): RefundLookup => unansweredRefunds.get(refundId) ?? { _tag: "NotFound" })
  }
})

const layer: Layer.Layer<CardNetwork> = Layer.effect(CardNetwork, make)

export const SandboxCardNetwork = { layer, authorize } as const
