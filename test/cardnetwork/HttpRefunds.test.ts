// HttpCardNetwork's refunds against a real HTTP processor (test/support/TestProcessor.ts): the JSON it posts,
// and what each failure of the processor means, as for authorizations (test/cardnetwork/CardNetwork.test.ts).
import { assert, describe, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { HttpCardNetwork, type HttpCardNetworkOptions } from "../../adapters/cardnetwork/HttpCardNetwork.ts"
import { CardNetwork, type RefundRequest } from "../../core/payments/CardNetwork.ts"
import { stopProcessor, TestProcessor } from "../support/TestProcessor.ts"
import { approvedCharge, FailingRefundCard, refundId } from "./Refund.contract.ts"

const ApiKey = "sk_test_processor_key"
const Visa = "4242424242424242"

const withProcessor = (networkOptions: Partial<HttpCardNetworkOptions> = {}) =>
  Effect.gen(function*() {
    const processor = yield* TestProcessor.scoped({ apiKey: ApiKey })
    const network = yield* Effect.provide(
      CardNetwork,
      HttpCardNetwork.layerFetch({ url: processor.url, apiKey: Redacted.make(ApiKey), ...networkOptions })
    )
    // A charge approved by this processor, and the request to refund part of it.
    const refundOf = yield* Effect.provideService(approvedCharge(Visa), CardNetwork, network)
    return { processor, network, refundOf }
  })

const forKey = (processor: TestProcessor, key: string) =>
  processor.requests.filter((r) => r.idempotencyKey === key).map((r) => `${r.handling} ${r.status ?? "-"}`)

describe("HttpCardNetwork refunds", () => {
  it.scopedLive("posts the agreed JSON with the refund id as Idempotency-Key, and no card data", () =>
    Effect.gen(function*() {
      const { network, processor, refundOf } = yield* withProcessor()
      const request = refundOf(4_500n)
      assert.deepStrictEqual(yield* network.refund(request), { _tag: "Succeeded" })
      const asked = processor.requests.filter((r) => r.kind === "refund")
      assert.lengthOf(asked, 1)
      const { authorizationCode, fields, handling, idempotencyKey, last4, method, path, status, ...rest } = asked[0]!
      assert.deepStrictEqual({ method, path, idempotencyKey, handling, status }, {
        method: "POST",
        path: "/refunds",
        idempotencyKey: request.refundId,
        handling: "decided",
        status: 200
      })
      assert.deepStrictEqual(fields, ["amount", "authorization_code", "currency", "id", "transfer"])
      assert.strictEqual(authorizationCode, request.authorizationCode)
      assert.strictEqual(rest.refundId, request.refundId)
      assert.strictEqual(rest.transferId, request.transferId)
      assert.strictEqual(rest.amount, "4500")
      assert.strictEqual(rest.currency, "EUR")
      assert.strictEqual(rest.authorization, `Bearer ${ApiKey}`)
      assert.isUndefined(last4)
      assert.strictEqual(processor.refunds, 1)
    }))

  it.scopedLive("a repeated refund id is answered from the processor's memory, not refunded twice", () =>
    Effect.gen(function*() {
      const { network, processor, refundOf } = yield* withProcessor()
      const request = refundOf(100n)
      assert.deepStrictEqual(yield* network.refund(request), { _tag: "Succeeded" })
      assert.deepStrictEqual(yield* network.refund(request), { _tag: "Succeeded" })
      assert.strictEqual(processor.refunds, 1)
      assert.deepStrictEqual(forKey(processor, request.refundId), ["decided 200", "replayed 200"])
    }))

  it.scopedLive("retries 502/503/504 at most twice; then the outcome is unknown", () =>
    Effect.gen(function*() {
      const { network, processor, refundOf } = yield* withProcessor()
      processor.failNext(1, 503)
      processor.failNext(1, 502)
      const recovered = refundOf(1n)
      assert.deepStrictEqual(yield* network.refund(recovered), { _tag: "Succeeded" })
      assert.deepStrictEqual(forKey(processor, recovered.refundId), ["failed 503", "failed 502", "decided 200"])

      processor.failNext(3, 504)
      const request = refundOf(2n)
      const error = yield* Effect.flip(network.refund(request))
      assert.strictEqual(error._tag, "CardNetworkOutcomeUnknown")
      assert.strictEqual(error.reason, "card network answered HTTP 504 (3 attempts)")
      assert.strictEqual(processor.refunds, 1)
    }))

  it.scopedLive("an error status it answered: a 4xx is unavailable (nothing moved), a 500 unknown", () =>
    Effect.gen(function*() {
      const { network, processor, refundOf } = yield* withProcessor()
      processor.failNext(1, 400)
      const refused = yield* Effect.flip(network.refund(refundOf(1n)))
      assert.strictEqual(refused._tag, "CardNetworkUnavailable")
      assert.strictEqual(refused.reason, "card network answered HTTP 400")

      const wrongKey = yield* Effect.provide(
        CardNetwork,
        HttpCardNetwork.layerFetch({ url: processor.url, apiKey: Redacted.make("sk_wrong") })
      )
      const unauthorized = refundOf(1n)
      const rejected = yield* Effect.flip(wrongKey.refund(unauthorized))
      assert.strictEqual(rejected._tag, "CardNetworkUnavailable")
      assert.deepStrictEqual(forKey(processor, unauthorized.refundId), ["rejected 401"])

      processor.failNext(1, 500)
      const failed = yield* Effect.flip(network.refund(refundOf(1n)))
      assert.strictEqual(failed._tag, "CardNetworkOutcomeUnknown")
      assert.strictEqual(processor.refunds, 0)
    }))

  it.scopedLive("a refused connection is unavailable; a dropped one is unknown", () =>
    Effect.gen(function*() {
      const { network, processor, refundOf } = yield* withProcessor()
      processor.dropNext(3)
      const dropped = yield* Effect.flip(network.refund(refundOf(1n)))
      assert.strictEqual(dropped._tag, "CardNetworkOutcomeUnknown", dropped.reason)
      yield* stopProcessor(processor)
      const refused = yield* Effect.flip(network.refund(refundOf(1n)))
      assert.strictEqual(refused._tag, "CardNetworkUnavailable", refused.reason)
    }))

  it.scopedLive("a processor that hangs: unknown within the time-out, pending to a lookup, then its decision", () =>
    Effect.gen(function*() {
      const { network, processor, refundOf } = yield* withProcessor({ timeout: "400 millis" })
      processor.hangNext(1)
      const request = refundOf(10n)
      const started = Date.now()
      const error = yield* Effect.flip(Effect.uninterruptible(network.refund(request)))
      const elapsed = Date.now() - started
      assert.isAtLeast(elapsed, 350)
      assert.isBelow(elapsed, 2000)
      assert.strictEqual(error._tag, "CardNetworkOutcomeUnknown")
      assert.include(error.reason, "no answer within 400ms")
      assert.deepStrictEqual(yield* network.lookupRefund(request.refundId), { _tag: "Undecided" })
      processor.decideHung()
      assert.deepStrictEqual(yield* network.lookupRefund(request.refundId), { _tag: "Succeeded" })
      assert.deepStrictEqual(processor.refundLookupsOf(request.refundId), [200, 200])
      // The same refund sent again gets the decision, without a second refund.
      assert.deepStrictEqual(yield* network.refund(request), { _tag: "Succeeded" })
      assert.strictEqual(processor.refunds, 1)
    }))

  it.scopedLive("looks a refund up: its outcome, NotFound when never received, unavailable when down", () =>
    Effect.gen(function*() {
      const { network, processor } = yield* withProcessor()
      const failing = (yield* Effect.provideService(approvedCharge(FailingRefundCard), CardNetwork, network))()
      const failed = { _tag: "Failed", reason: "expired_or_canceled_card" } as const
      assert.deepStrictEqual(yield* network.refund(failing), failed)
      assert.deepStrictEqual(yield* network.lookupRefund(failing.refundId), failed)
      assert.deepStrictEqual(yield* network.lookupRefund(refundId()), { _tag: "NotFound" })
      // A lookup of a transfer id is not a refund's: the two are asked at their own paths.
      assert.deepStrictEqual(yield* network.lookup(failing.refundId), { _tag: "NotFound" })
      yield* stopProcessor(processor)
      assert.strictEqual((yield* Effect.flip(network.lookupRefund(failing.refundId)))._tag, "CardNetworkUnavailable")
    }))

  it.scopedLive("an answer that is not a refund's is an unknown outcome, without retrying", () =>
    Effect.gen(function*() {
      const { network, processor, refundOf } = yield* withProcessor()
      const malformed: ReadonlyArray<readonly [string, string]> = [
        ["{not json", "not JSON"],
        ["{\"status\":\"failed\"}", "not a refund answer"],
        ["{\"status\":\"failed\",\"failure_reason\":\"bank_said_no\"}", "not a refund answer"],
        ["{\"status\":\"approved\",\"authorization_code\":\"TP0001\"}", "not a refund answer"],
        ["{\"status\":\"pending\"}", "not a refund answer"]
      ]
      for (const [body, expected] of malformed) {
        processor.replyNext(1, { body })
        const request: RefundRequest = refundOf(1n)
        const error = yield* Effect.flip(network.refund(request))
        assert.strictEqual(error._tag, "CardNetworkOutcomeUnknown", body)
        assert.include(error.reason, expected, body)
        assert.deepStrictEqual(forKey(processor, request.refundId), ["scripted 200"], body)
      }
    }))
})
