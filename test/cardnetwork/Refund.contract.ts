// What every CardNetwork must answer to refunds: the charge is named by its transfer id and the authorization
// code its approval got, and the sandbox's refund cards decide through that code (an "SBF" code's refunds fail,
// an "SBT" code's time out and then reconcile as succeeded, any other succeeds). The codes come from
// authorizing first with the card, as in a real flow.
import { assert, it } from "@effect/vitest"
import { Effect } from "effect"
import { randomUUID } from "node:crypto"
import { sandboxRefundCards } from "../../adapters/cardnetwork/SandboxCardNetwork.ts"
import { CardNetwork, type RefundRequest } from "../../core/payments/CardNetwork.ts"
import { CurrencyCode } from "../../core/payments/Currency.ts"
import type { RefundOutcome } from "../../core/payments/Refund.ts"
import { authorizationRequest } from "./CardRequests.ts"

export const FailingRefundCard = sandboxRefundCards.find((card) => card.codePrefix === "SBF")!.pan
export const TimeoutRefundCard = sandboxRefundCards.find((card) => card.codePrefix === "SBT")!.pan

// A refund id as the core makes them: `re_` and 24 letters or digits.
export const refundId = (): string => `re_${randomUUID().replaceAll("-", "").slice(0, 24)}`

// Authorizes `pan` for 123.45 EUR and gives the request to refund `amount` of it.
export const approvedCharge = (pan: string) =>
  Effect.gen(function*() {
    const network = yield* CardNetwork
    const charge = authorizationRequest(pan)
    const approval = yield* network.authorize(charge)
    assert.strictEqual(approval._tag, "Approved", pan)
    const authorizationCode = approval._tag === "Approved" ? approval.authorizationCode : ""
    return (amount = charge.amount): RefundRequest => ({
      refundId: refundId(),
      transferId: charge.transferId,
      authorizationCode,
      amount,
      currency: CurrencyCode.make("EUR")
    })
  })

export const refundContract = <E>(
  run: <A, E2>(self: Effect.Effect<A, E2, CardNetwork>) => Effect.Effect<A, E | E2>
): void => {
  it.live("approves the refund cards like any other card", () =>
    run(Effect.gen(function*() {
      for (const card of sandboxRefundCards) yield* approvedCharge(card.pan)
    })))

  it.live("a refund of an approved charge succeeds, in full or in parts, and again for the same refund id", () =>
    run(Effect.gen(function*() {
      const network = yield* CardNetwork
      const refundOf = yield* approvedCharge("4242424242424242")
      assert.deepStrictEqual(yield* network.refund(refundOf()), { _tag: "Succeeded" })
      const part = refundOf(45n)
      assert.deepStrictEqual(yield* network.refund(part), { _tag: "Succeeded" })
      assert.deepStrictEqual(yield* network.refund(part), { _tag: "Succeeded" })
      assert.deepStrictEqual(yield* network.refund(refundOf(12_300n)), { _tag: "Succeeded" })
    })))

  it.live(`a refund of a ${FailingRefundCard} charge fails with expired_or_canceled_card`, () =>
    run(Effect.gen(function*() {
      const network = yield* CardNetwork
      const refundOf = yield* approvedCharge(FailingRefundCard)
      const expected: RefundOutcome = { _tag: "Failed", reason: "expired_or_canceled_card" }
      assert.deepStrictEqual(yield* network.refund(refundOf()), expected)
      assert.deepStrictEqual(yield* network.refund(refundOf(1n)), expected)
    })))

  it.live(`a refund of a ${TimeoutRefundCard} charge times out, then a lookup answers Succeeded`, () =>
    run(Effect.gen(function*() {
      const network = yield* CardNetwork
      const refundOf = yield* approvedCharge(TimeoutRefundCard)
      const request = refundOf(100n)
      const error = yield* Effect.flip(network.refund(request))
      assert.strictEqual(error._tag, "CardNetworkOutcomeUnknown", error.reason)
      assert.deepStrictEqual(yield* network.lookupRefund(request.refundId), { _tag: "Succeeded" })
      assert.deepStrictEqual(yield* network.lookupRefund(request.refundId), { _tag: "Succeeded" })
    })))

  it.live("a refund it was never asked about is NotFound to a lookup", () =>
    run(Effect.gen(function*() {
      const network = yield* CardNetwork
      assert.deepStrictEqual(yield* network.lookupRefund(refundId()), { _tag: "NotFound" })
    })))

  it.live("answers concurrent refunds each by its own charge", () =>
    run(Effect.gen(function*() {
      const network = yield* CardNetwork
      const charges = yield* Effect.forEach(
        ["4242424242424242", FailingRefundCard, "5555555555554444", FailingRefundCard],
        approvedCharge,
        { concurrency: "unbounded" }
      )
      const outcomes = yield* Effect.forEach(charges, (refundOf) => network.refund(refundOf()), {
        concurrency: "unbounded"
      })
      assert.deepStrictEqual(outcomes.map((o) => o._tag), ["Succeeded", "Failed", "Succeeded", "Failed"])
    })))
}
