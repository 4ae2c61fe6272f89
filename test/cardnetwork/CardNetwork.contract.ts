// What every CardNetwork must answer for the sandbox's card table, whatever carries the request: the
// in-memory sandbox, or an HTTP adapter talking to a processor that decides by the same table.
import { assert, describe, it } from "@effect/vitest"
import { Effect, type Layer } from "effect"
import { sandboxCards } from "../../adapters/cardnetwork/SandboxCardNetwork.ts"
import { type Authorization, type AuthorizationRequest, CardNetwork } from "../../core/payments/CardNetwork.ts"
import { CurrencyCode } from "../../core/payments/Currency.ts"
import { authenticated, authorizationRequest, randomLuhnPan } from "./CardRequests.ts"
import { refundContract } from "./Refund.contract.ts"

export {
  authenticated,
  authorizationRequest,
  randomLuhnPan,
  SampleAuthenticationValue,
  SampleCvc
} from "./CardRequests.ts"

const threeDSecure = sandboxCards.find((card) => card.approvedWhenAuthenticated === true)!

const assertApproved = (result: Authorization, message: string) => {
  assert.strictEqual(result._tag, "Approved", message)
  if (result._tag === "Approved") {
    assert.isString(result.authorizationCode, message)
    assert.isAbove(result.authorizationCode.length, 0, message)
  }
}

export const cardNetworkContract = <E>(name: string, makeLayer: () => Layer.Layer<CardNetwork, E>): void => {
  describe(`CardNetwork contract: ${name}`, () => {
    // Live: an HTTP adapter's time-outs and back-offs must run on the real clock.
    const run = <A, E2>(self: Effect.Effect<A, E2, CardNetwork>) => Effect.provide(self, makeLayer())
    const authorize = (request: AuthorizationRequest) => Effect.flatMap(CardNetwork, (n) => n.authorize(request))

    for (const card of sandboxCards) {
      it.live(`${card.pan} (${card.description}) without authentication: ${card.outcome._tag}`, () =>
        run(Effect.gen(function*() {
          const result = yield* authorize(authorizationRequest(card.pan))
          if (card.outcome._tag === "Approved") assertApproved(result, card.pan)
          // Exactly the table's answer: a declineCode only where the table has one.
          else assert.deepStrictEqual(result, card.outcome, card.pan)
        })))
    }

    it.live(`${threeDSecure.pan} is declined with authentication_required without an authentication value`, () =>
      run(Effect.gen(function*() {
        const result = yield* authorize(authorizationRequest(threeDSecure.pan))
        assert.deepStrictEqual(result, { _tag: "Declined", code: "authentication_required" })
      })))

    it.live(`${threeDSecure.pan} is approved with an authentication value`, () =>
      run(Effect.gen(function*() {
        const result = yield* authorize(authorizationRequest(threeDSecure.pan, { authenticationValue: authenticated }))
        assertApproved(result, threeDSecure.pan)
      })))

    it.live("an authentication value does not turn another decline into an approval", () =>
      run(Effect.gen(function*() {
        for (const card of sandboxCards.filter((c) => c.outcome._tag === "Declined" && !c.approvedWhenAuthenticated)) {
          const result = yield* authorize(authorizationRequest(card.pan, { authenticationValue: authenticated }))
          assert.deepStrictEqual(result, card.outcome, card.pan)
        }
      })))

    it.live("approves a random Luhn-valid card number that is not in the table", () =>
      run(Effect.gen(function*() {
        for (let i = 0; i < 5; i++) {
          const pan = randomLuhnPan()
          assertApproved(yield* authorize(authorizationRequest(pan)), `random card ${pan}`)
        }
      })))

    it.live("approves with or without an authentication value, for any amount and currency", () =>
      run(Effect.gen(function*() {
        const requests = [
          authorizationRequest("4242424242424242", { authenticationValue: authenticated }),
          authorizationRequest("5555555555554444", { amount: 1n, currency: CurrencyCode.make("JPY") }),
          authorizationRequest("4242424242424242", { amount: 123_456_789_012_345_678_901n }),
          authorizationRequest("5555555555554444", { amount: 5n, currency: CurrencyCode.make("KWD") })
        ]
        for (const request of requests) assertApproved(yield* authorize(request), String(request.amount))
      })))

    it.live("asked twice for the same transfer, gives the same answer", () =>
      run(Effect.gen(function*() {
        for (const pan of ["4242424242424242", "4000000000009995"]) {
          const request = authorizationRequest(pan)
          const first = yield* authorize(request)
          const second = yield* authorize(request)
          assert.deepStrictEqual(second, first, pan)
        }
      })))

    it.live("a transfer it was never asked about is NotFound to a lookup", () =>
      run(Effect.gen(function*() {
        const network = yield* CardNetwork
        assert.deepStrictEqual(yield* network.lookup(authorizationRequest("4242424242424242").transferId), {
          _tag: "NotFound"
        })
      })))

    it.live("answers concurrent requests for different transfers each by its own card", () =>
      run(Effect.gen(function*() {
        const results = yield* Effect.forEach(
          sandboxCards,
          (card) => Effect.map(authorize(authorizationRequest(card.pan)), (result) => [card, result] as const),
          { concurrency: "unbounded" }
        )
        for (const [card, result] of results) {
          if (card.outcome._tag === "Approved") assertApproved(result, card.pan)
          else assert.deepStrictEqual(result, card.outcome, card.pan)
        }
      })))

    refundContract(run)
  })
}
