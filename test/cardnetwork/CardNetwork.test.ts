import { assert, describe, it, layer } from "@effect/vitest"
import { Cause, Duration, Effect, Exit, Layer, Option, Redacted } from "effect"
import {
  DefaultTimeout,
  HttpCardNetwork,
  type HttpCardNetworkOptions
} from "../../adapters/cardnetwork/HttpCardNetwork.ts"
import { SandboxCardNetwork, sandboxCards, sandboxDecision } from "../../adapters/cardnetwork/SandboxCardNetwork.ts"
import {
  type AuthorizationRequest,
  CardNetwork,
  type CardNetworkOutcomeUnknown,
  type CardNetworkUnavailable
} from "../../core/payments/CardNetwork.ts"
import {
  startProcessor,
  stopProcessor,
  TestCardProcessor,
  TestProcessor,
  type TestProcessorOptions
} from "../support/TestProcessor.ts"
import {
  authenticated,
  authorizationRequest,
  cardNetworkContract,
  randomLuhnPan,
  SampleAuthenticationValue,
  SampleCvc
} from "./CardNetwork.contract.ts"

const ApiKey = "sk_test_processor_key"
const Visa = "4242424242424242"

// ---------------------------------------------------------------------------------------------------------
// The contract, against both adapters.

cardNetworkContract("SandboxCardNetwork", () => SandboxCardNetwork.layer)

// The time-out is short so that the refund card that times out does not hold a test for the 10 s default.
cardNetworkContract("HttpCardNetwork over a real HTTP processor", () =>
  Layer.unwrapScoped(
    Effect.map(
      TestProcessor.scoped({ apiKey: ApiKey }),
      (processor) =>
        HttpCardNetwork.layerFetch({ url: processor.url, apiKey: Redacted.make(ApiKey), timeout: "2 seconds" })
    )
  ))

// ---------------------------------------------------------------------------------------------------------

const withProcessor = (
  processorOptions: TestProcessorOptions = { apiKey: ApiKey },
  networkOptions: Partial<HttpCardNetworkOptions> = {}
) =>
  Effect.gen(function*() {
    const processor = yield* TestProcessor.scoped(processorOptions)
    const network = yield* Effect.provide(
      CardNetwork,
      HttpCardNetwork.layerFetch({ url: processor.url, apiKey: Redacted.make(ApiKey), ...networkOptions })
    )
    return { processor, network }
  })

const forKey = (processor: TestProcessor, key: string) =>
  processor.requests.filter((r) => r.idempotencyKey === key).map((r) => `${r.handling} ${r.status ?? "-"}`)

// No card data in the failure: neither its reason, its message, its JSON nor its rendering as text.
const assertNoCardData = (error: CardNetworkUnavailable | CardNetworkOutcomeUnknown, request: AuthorizationRequest) => {
  const secrets = [Redacted.value(request.pan), Redacted.value(request.cvc), SampleAuthenticationValue]
  for (const text of [error.reason, error.message, String(error), JSON.stringify(error)]) {
    for (const secret of secrets) assert.notInclude(text, secret, `${secret} in ${text}`)
  }
}

describe("HttpCardNetwork", () => {
  it.scopedLive("posts the agreed JSON with the Idempotency-Key and the API key, and no card data is recorded", () =>
    Effect.gen(function*() {
      const { network, processor } = yield* withProcessor()
      const request = authorizationRequest("4000002760003184", {
        authenticationValue: authenticated,
        amount: 123_456_789_012_345_678_901n,
        merchantId: "merchant_42"
      })
      const result = yield* network.authorize(request)
      assert.strictEqual(result._tag, "Approved")

      assert.lengthOf(processor.requests, 1)
      const { handling, status, ...received } = processor.requests[0]!
      assert.strictEqual(handling, "decided")
      assert.strictEqual(status, 200)
      assert.deepStrictEqual(received, {
        method: "POST",
        path: "/authorizations",
        kind: "authorization",
        idempotencyKey: request.transferId,
        authorization: `Bearer ${ApiKey}`,
        contentType: "application/json",
        transferId: request.transferId,
        refundId: undefined,
        authorizationCode: undefined,
        last4: "3184",
        expMonth: 7,
        expYear: 2031,
        cvcLength: SampleCvc.length,
        hasAuthenticationValue: true,
        amount: "123456789012345678901",
        currency: "EUR",
        merchantId: "merchant_42",
        fields: ["amount", "authentication_value", "card", "currency", "merchant_id", "transfer_id"]
      })
      const recorded = JSON.stringify(processor.requests)
      assert.notInclude(recorded, "4000002760003184")
      assert.notInclude(recorded, SampleAuthenticationValue)
    }))

  it.scopedLive("leaves authentication_value out without one, and the Authorization header without an API key", () =>
    Effect.gen(function*() {
      const processor = yield* TestProcessor.scoped()
      const network = yield* Effect.provide(CardNetwork, HttpCardNetwork.layerFetch({ url: `${processor.url}/` }))
      const result = yield* network.authorize(authorizationRequest("4000002760003184"))
      assert.deepStrictEqual(result, { _tag: "Declined", code: "authentication_required" })
      const received = processor.requests[0]!
      assert.strictEqual(received.path, "/authorizations", "a trailing slash on the base URL is dropped")
      assert.isUndefined(received.authorization)
      assert.isFalse(received.hasAuthenticationValue)
    }))

  it.scopedLive("fails with CardNetworkUnavailable while the processor is down, and authorizes once it is back", () =>
    Effect.gen(function*() {
      const { network, processor } = yield* withProcessor()
      yield* stopProcessor(processor)
      const request = authorizationRequest(Visa)
      const error = yield* Effect.flip(network.authorize(request))
      assert.strictEqual(error._tag, "CardNetworkUnavailable")
      assert.include(error.reason, "unreachable")
      assert.include(error.reason, "ECONNREFUSED")
      assert.include(error.reason, "3 attempts", "tried again twice")
      assertNoCardData(error, request)

      yield* startProcessor(processor)
      const result = yield* network.authorize(request)
      assert.strictEqual(result._tag, "Approved")
      assert.strictEqual(processor.authorizations, 1)
    }))

  it.scopedLive("retries a 503 with the same Idempotency-Key: approved, with one authorization at the processor", () =>
    Effect.gen(function*() {
      const { network, processor } = yield* withProcessor()
      processor.failNext(1, 503)
      const request = authorizationRequest(Visa)
      const result = yield* network.authorize(request)
      assert.strictEqual(result._tag, "Approved")
      assert.strictEqual(processor.authorizations, 1)
      assert.deepStrictEqual(forKey(processor, request.transferId), ["failed 503", "decided 200"])
    }))

  it.scopedLive("retries 502 and 504 too, at most twice, then gives up", () =>
    Effect.gen(function*() {
      const { network, processor } = yield* withProcessor()
      processor.failNext(1, 502)
      processor.failNext(1, 504)
      const recovered = authorizationRequest(Visa)
      assert.strictEqual((yield* network.authorize(recovered))._tag, "Approved")
      assert.deepStrictEqual(forKey(processor, recovered.transferId), ["failed 502", "failed 504", "decided 200"])

      processor.failNext(3, 503)
      const request = authorizationRequest(Visa)
      const error = yield* Effect.flip(network.authorize(request))
      // It reached the processor, which failed on its side: the outcome is unknown, not a refusal.
      assert.strictEqual(error._tag, "CardNetworkOutcomeUnknown")
      assert.strictEqual(error.reason, "card network answered HTTP 503 (3 attempts)")
      assert.deepStrictEqual(forKey(processor, request.transferId), ["failed 503", "failed 503", "failed 503"])
      assert.strictEqual(processor.authorizations, 1)
      assertNoCardData(error, request)
    }))

  it.scopedLive("does not retry other statuses (500, 401, 400)", () =>
    Effect.gen(function*() {
      const { network, processor } = yield* withProcessor()
      processor.failNext(1, 500)
      const request = authorizationRequest(Visa)
      const error = yield* Effect.flip(network.authorize(request))
      assert.strictEqual(error._tag, "CardNetworkOutcomeUnknown")
      assert.strictEqual(error.reason, "card network answered HTTP 500")
      assert.deepStrictEqual(forKey(processor, request.transferId), ["failed 500"])

      const wrongKey = yield* Effect.provide(
        CardNetwork,
        HttpCardNetwork.layerFetch({ url: processor.url, apiKey: Redacted.make("sk_wrong") })
      )
      const unauthorized = authorizationRequest(Visa)
      const refused = yield* Effect.flip(wrongKey.authorize(unauthorized))
      // A 4xx refuses the request: nothing was authorized, nothing is unknown.
      assert.strictEqual(refused._tag, "CardNetworkUnavailable")
      assert.strictEqual(refused.reason, "card network answered HTTP 401")
      assert.deepStrictEqual(forKey(processor, unauthorized.transferId), ["rejected 401"])

      const invalid = authorizationRequest(Visa, { cvc: Redacted.make("12") })
      assert.strictEqual((yield* Effect.flip(network.authorize(invalid))).reason, "card network answered HTTP 400")
      assert.strictEqual(processor.authorizations, 0)
    }))

  it.scopedLive("a repeated transfer is answered from the processor's memory, not authorized twice", () =>
    Effect.gen(function*() {
      const { network, processor } = yield* withProcessor()
      const request = authorizationRequest(Visa)
      const first = yield* network.authorize(request)
      const second = yield* network.authorize(request)
      assert.deepStrictEqual(second, first)
      assert.strictEqual(processor.authorizations, 1)
      assert.deepStrictEqual(forKey(processor, request.transferId), ["decided 200", "replayed 200"])
    }))

  it.scopedLive("gives up with CardNetworkOutcomeUnknown within the configured time-out on a processor that hangs", () =>
    Effect.gen(function*() {
      const { network, processor } = yield* withProcessor(undefined, { timeout: "400 millis" })
      processor.hangNext(1)
      const request = authorizationRequest(Visa)
      const started = Date.now()
      const error = yield* Effect.flip(network.authorize(request))
      const elapsed = Date.now() - started
      assert.isAtLeast(elapsed, 350)
      assert.isBelow(elapsed, 2000, "well before the 10 s default")
      assert.strictEqual(error._tag, "CardNetworkOutcomeUnknown")
      assert.include(error.reason, "no answer within 400ms")
      assertNoCardData(error, request)

      // The hanging request did not decide anything; the same transfer goes through afterwards.
      assert.strictEqual((yield* network.authorize(request))._tag, "Approved")
      assert.strictEqual(processor.authorizations, 1)
    }))

  // Regression test: Transfers.submit runs the call inside an uninterruptible region, where Effect.timeout
  // could not interrupt it, and a processor that never answered made the merchant's request hang for good.
  it.scopedLive("times out inside an uninterruptible region too", () =>
    Effect.gen(function*() {
      const { network, processor } = yield* withProcessor(undefined, { timeout: "300 millis" })
      processor.hangNext(1)
      const started = Date.now()
      const error = yield* Effect.flip(Effect.uninterruptible(network.authorize(authorizationRequest(Visa))))
      assert.isBelow(Date.now() - started, 2000)
      assert.strictEqual(error._tag, "CardNetworkOutcomeUnknown")
    }))

  it.scopedLive("a connection dropped after the request was sent is an unknown outcome; refused is unavailable", () =>
    Effect.gen(function*() {
      const { network, processor } = yield* withProcessor()
      processor.dropNext(3)
      const dropped = yield* Effect.flip(network.authorize(authorizationRequest(Visa)))
      assert.strictEqual(dropped._tag, "CardNetworkOutcomeUnknown", dropped.reason)
      yield* stopProcessor(processor)
      const refused = yield* Effect.flip(network.authorize(authorizationRequest(Visa)))
      assert.strictEqual(refused._tag, "CardNetworkUnavailable", refused.reason)
    }))

  it.scopedLive("looks a transfer up: its decision, pending while undecided, NotFound when never received", () =>
    Effect.gen(function*() {
      const { network, processor } = yield* withProcessor()
      const decided = authorizationRequest("4000000000009995")
      yield* network.authorize(decided)
      assert.deepStrictEqual(yield* network.lookup(decided.transferId), {
        _tag: "Declined",
        code: "insufficient_funds"
      })
      assert.deepStrictEqual(yield* network.lookup("tr_never_sent"), { _tag: "NotFound" })
      const hung = authorizationRequest(Visa)
      processor.hangNext(1)
      const timedOut = yield* Effect.flip(
        Effect.provide(
          Effect.flatMap(CardNetwork, (n) => n.authorize(hung)),
          HttpCardNetwork.layerFetch({ url: processor.url, apiKey: Redacted.make(ApiKey), timeout: "300 millis" })
        )
      )
      assert.strictEqual(timedOut._tag, "CardNetworkOutcomeUnknown")
      assert.deepStrictEqual(yield* network.lookup(hung.transferId), { _tag: "Undecided" })
      processor.decideHung()
      assert.strictEqual((yield* network.lookup(hung.transferId))._tag, "Approved")
      assert.deepStrictEqual(processor.lookupsOf(hung.transferId), [200, 200])
      yield* stopProcessor(processor)
      const down = yield* Effect.flip(network.lookup(hung.transferId))
      assert.strictEqual(down._tag, "CardNetworkUnavailable")
    }))

  it.scopedLive("the time-out bounds the retries as well", () =>
    Effect.gen(function*() {
      const { network, processor } = yield* withProcessor(undefined, { timeout: "250 millis" })
      processor.failNext(1, 503)
      processor.hangNext(1)
      const started = Date.now()
      const error = yield* Effect.flip(network.authorize(authorizationRequest(Visa)))
      assert.isBelow(Date.now() - started, 2000)
      assert.include(error.reason, "no answer within 250ms (2 attempts)")
    }))

  it("defaults to a 10 s time-out", () => {
    assert.isTrue(Duration.equals(DefaultTimeout, Duration.seconds(10)))
  })

  it.scopedLive("fails with CardNetworkOutcomeUnknown on a malformed 2xx answer, without retrying", () =>
    Effect.gen(function*() {
      const { network, processor } = yield* withProcessor()
      const malformed: ReadonlyArray<readonly [string, string, string?]> = [
        ["{not json", "not JSON"],
        ["", "not JSON"],
        ["<html><body>OK</body></html>", "not JSON", "text/html"],
        ["{\"status\":\"declined\",\"code\":\"do_not_honor\"}", "not an authorization answer"],
        ["{\"status\":\"approved\"}", "not an authorization answer"],
        ["{\"status\":\"approved\",\"authorization_code\":\"\"}", "not an authorization answer"],
        ["{\"status\":\"pending\"}", "not an authorization answer"],
        ["[]", "not an authorization answer"]
      ]
      for (const [body, expected, contentType] of malformed) {
        processor.replyNext(1, contentType === undefined ? { body } : { body, contentType })
        const request = authorizationRequest(Visa)
        const error = yield* Effect.flip(network.authorize(request))
        assert.strictEqual(error._tag, "CardNetworkOutcomeUnknown", body)
        assert.include(error.reason, expected, body)
        assert.deepStrictEqual(forKey(processor, request.transferId), ["scripted 200"], body)
      }
    }))

  it.scopedLive("accepts a declined answer with a null decline_code as one without", () =>
    Effect.gen(function*() {
      const { network, processor } = yield* withProcessor()
      processor.replyNext(1, { body: "{\"status\":\"declined\",\"code\":\"card_declined\",\"decline_code\":null}" })
      assert.deepStrictEqual(yield* network.authorize(authorizationRequest(Visa)), {
        _tag: "Declined",
        code: "card_declined"
      })
    }))

  it.scopedLive("never puts the card number, CVC or authentication value into a failure, even when echoed", () =>
    Effect.gen(function*() {
      const { network, processor } = yield* withProcessor(undefined, { timeout: "300 millis" })
      const pan = randomLuhnPan()
      const request = authorizationRequest(pan, { authenticationValue: authenticated })
      const echo = `card ${pan} cvc ${SampleCvc} ucaf ${SampleAuthenticationValue}`
      const scenarios: ReadonlyArray<readonly [string, Effect.Effect<void>]> = [
        ["500 echoing the card", Effect.sync(() => processor.replyNext(1, { status: 500, body: echo }))],
        ["200 echoing the card", Effect.sync(() => processor.replyNext(1, { body: JSON.stringify({ echo }) }))],
        ["200 not JSON", Effect.sync(() => processor.replyNext(1, { body: echo }))],
        [
          "unknown code echoing the card",
          Effect.sync(() => processor.replyNext(1, { body: JSON.stringify({ status: "declined", code: echo }) }))
        ],
        ["503 three times", Effect.sync(() => processor.failNext(3, 503))],
        ["hang", Effect.sync(() => processor.hangNext(1))],
        ["down", stopProcessor(processor)]
      ]
      for (const [name, arrange] of scenarios) {
        yield* arrange
        const exit = yield* Effect.exit(network.authorize(request))
        assert.isTrue(Exit.isFailure(exit), name)
        if (Exit.isFailure(exit)) {
          const failure = Cause.failureOption(exit.cause)
          assert.isTrue(Option.isSome(failure), `${name}: a failure, not a defect`)
          if (Option.isSome(failure)) assertNoCardData(failure.value, request)
          assert.notInclude(Cause.pretty(exit.cause), pan, name)
          assert.notInclude(Cause.pretty(exit.cause), SampleAuthenticationValue, name)
        }
      }
    }))

  it.scoped("dies on a bad URL without repeating it", () =>
    Effect.gen(function*() {
      for (
        const url of ["http://user:s3cretpass@127.0.0.1:1", "not a url s3cretpass", "ftp://s3cretpass.example.com"]
      ) {
        const exit = yield* Effect.exit(Layer.build(HttpCardNetwork.layerFetch({ url })))
        assert.isTrue(Exit.isFailure(exit) && Cause.isDie(exit.cause), url)
        if (Exit.isFailure(exit)) {
          const pretty = Cause.pretty(exit.cause)
          assert.notInclude(pretty, "s3cretpass")
          assert.include(pretty, "card network URL")
        }
      }
    }))
})

// One processor shared by the tests of this block, as a layer; on the real clock.
layer(TestCardProcessor.layer({ apiKey: ApiKey }), { excludeTestServices: true })(
  "HttpCardNetwork against a shared processor",
  (it) => {
    it.effect(
      "answers concurrent transfers exactly once each, and the processor keeps only last four digits",
      () =>
        Effect.gen(function*() {
          const processor = yield* TestCardProcessor
          const network = yield* Effect.provide(
            CardNetwork,
            HttpCardNetwork.layerFetch({ url: processor.url, apiKey: Redacted.make(ApiKey) })
          )
          const requests = Array.from(
            { length: 20 },
            (_, i) => authorizationRequest(sandboxCards[i % sandboxCards.length]!.pan)
          )
          const before = processor.authorizations
          const results = yield* Effect.forEach(requests, (r) => network.authorize(r), { concurrency: 10 })
          assert.strictEqual(processor.authorizations - before, requests.length)
          for (const [i, request] of requests.entries()) {
            const expected = sandboxDecision(Redacted.value(request.pan), false)
            assert.strictEqual(results[i]!._tag, expected._tag)
            assert.deepStrictEqual(forKey(processor, request.transferId), ["decided 200"])
          }
          const recorded = JSON.stringify(processor.requests)
          for (const card of sandboxCards) {
            assert.notInclude(recorded, card.pan)
          }
        }).pipe(Effect.timeout("10 seconds")),
      { timeout: 20_000 }
    )
  }
)
