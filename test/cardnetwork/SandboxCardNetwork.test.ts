// The sandbox's own promises, beyond the contract every adapter keeps (test/cardnetwork/CardNetwork.contract.ts):
// its tables, its authorization codes, and what it remembers of the calls it left unanswered.
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import {
  sandboxAuthorizationCode,
  SandboxCardNetwork,
  sandboxCards,
  sandboxDecision,
  sandboxRefundBehaviour,
  sandboxRefundCards,
  sandboxTimeoutCards
} from "../../adapters/cardnetwork/SandboxCardNetwork.ts"
import { luhn } from "../../core/payments/Card.ts"
import { CardNetwork } from "../../core/payments/CardNetwork.ts"
import { CurrencyCode } from "../../core/payments/Currency.ts"
import { authorizationRequest, randomLuhnPan } from "./CardNetwork.contract.ts"

const Visa = "4242424242424242"

describe("SandboxCardNetwork", () => {
  it("lists distinct, Luhn-valid card numbers, and the sandbox decides by that table", () => {
    assert.lengthOf(new Set(sandboxCards.map((card) => card.pan)), sandboxCards.length)
    for (const card of sandboxCards) {
      assert.isTrue(luhn(card.pan), card.pan)
      assert.deepStrictEqual(sandboxDecision(card.pan, false), card.outcome, card.pan)
    }
    assert.deepStrictEqual(sandboxDecision(randomLuhnPan(), false), { _tag: "Approved" })
    assert.deepStrictEqual(sandboxDecision("4000002760003184", true), { _tag: "Approved" })
  })

  it.effect("gives a six-character authorization code, the same for the same transfer", () =>
    Effect.gen(function*() {
      const network = yield* Effect.provide(CardNetwork, SandboxCardNetwork.layer)
      const request = authorizationRequest(Visa, { transferId: "tr_sandbox_1" })
      const first = yield* network.authorize(request)
      assert.deepStrictEqual(first, { _tag: "Approved", authorizationCode: sandboxAuthorizationCode("tr_sandbox_1") })
      assert.match(sandboxAuthorizationCode("tr_sandbox_1"), /^SBX[0-9]{3}$/)
      assert.deepStrictEqual(yield* network.authorize(request), first)
    }))

  it.effect("its time-out test cards answer a time-out first, then their outcome to a lookup", () =>
    Effect.gen(function*() {
      const network = yield* Effect.provide(CardNetwork, SandboxCardNetwork.layer)
      const [approves, declines] = sandboxTimeoutCards
      for (const card of sandboxTimeoutCards) {
        assert.isTrue(luhn(card.pan), card.pan)
        assert.isFalse(sandboxCards.some((c) => c.pan === card.pan))
      }
      const first = authorizationRequest(approves!.pan)
      const second = authorizationRequest(declines!.pan)
      assert.strictEqual((yield* Effect.flip(network.authorize(first)))._tag, "CardNetworkOutcomeUnknown")
      assert.strictEqual((yield* Effect.flip(network.authorize(second)))._tag, "CardNetworkOutcomeUnknown")
      assert.deepStrictEqual(yield* network.lookup(first.transferId), {
        _tag: "Approved",
        authorizationCode: sandboxAuthorizationCode(first.transferId)
      })
      assert.deepStrictEqual(yield* network.lookup(second.transferId), {
        _tag: "Declined",
        code: "card_declined",
        declineCode: "generic_decline"
      })
      assert.deepStrictEqual(yield* network.lookup(authorizationRequest(Visa).transferId), { _tag: "NotFound" })
    }))

  it("lists refund cards that are Luhn-valid and in no other table, each with its own code prefix", () => {
    const others = new Set([...sandboxCards, ...sandboxTimeoutCards].map((card) => card.pan))
    assert.lengthOf(new Set(sandboxRefundCards.map((card) => card.codePrefix)), sandboxRefundCards.length)
    for (const card of sandboxRefundCards) {
      assert.isTrue(luhn(card.pan), card.pan)
      assert.isFalse(others.has(card.pan), card.pan)
      assert.match(card.codePrefix, /^SB[A-Z]$/)
      assert.notStrictEqual(card.codePrefix, "SBX")
      assert.deepStrictEqual(sandboxRefundBehaviour(`${card.codePrefix}123`), card.refunds)
    }
    for (const code of ["SBX123", "TP0001", "", "SB"]) {
      assert.deepStrictEqual(sandboxRefundBehaviour(code), { _tag: "Answers", outcome: { _tag: "Succeeded" } }, code)
    }
  })

  it.effect("carries a refund card's behaviour in its authorization code; remembers only refunds it left unanswered", () =>
    Effect.gen(function*() {
      const network = yield* Effect.provide(CardNetwork, SandboxCardNetwork.layer)
      const codeOf = (pan: string) =>
        Effect.map(
          network.authorize(authorizationRequest(pan)),
          (a) => a._tag === "Approved" ? a.authorizationCode : ""
        )
      assert.match(yield* codeOf("4000000000005126"), /^SBF[0-9]{3}$/)
      const timesOut = yield* codeOf("4000000000007726")
      assert.match(timesOut, /^SBT[0-9]{3}$/)
      const refund = (authorizationCode: string, refundId: string) =>
        network.refund({
          refundId,
          transferId: "tr_x",
          authorizationCode,
          amount: 1n,
          currency: CurrencyCode.make("EUR")
        })
      assert.deepStrictEqual(yield* refund(yield* codeOf(Visa), "re_answered"), { _tag: "Succeeded" })
      assert.deepStrictEqual(yield* network.lookupRefund("re_answered"), { _tag: "NotFound" })
      assert.strictEqual((yield* Effect.flip(refund(timesOut, "re_unanswered")))._tag, "CardNetworkOutcomeUnknown")
      assert.deepStrictEqual(yield* network.lookupRefund("re_unanswered"), { _tag: "Succeeded" })
      // A restart: a new sandbox knows none of them, and the refund reconciles as never received.
      const restarted = yield* Effect.provide(CardNetwork, SandboxCardNetwork.layer)
      assert.deepStrictEqual(yield* restarted.lookupRefund("re_unanswered"), { _tag: "NotFound" })
    }))

  it.effect("checks neither the Luhn digit nor the expiry: the core does that before asking", () =>
    Effect.gen(function*() {
      const network = yield* Effect.provide(CardNetwork, SandboxCardNetwork.layer)
      const badLuhn = yield* network.authorize(authorizationRequest("4242424242424241"))
      assert.strictEqual(badLuhn._tag, "Approved")
      const expired = yield* network.authorize(authorizationRequest(Visa, { expiry: { year: 2001, month: 1 } }))
      assert.strictEqual(expired._tag, "Approved")
    }))
})
