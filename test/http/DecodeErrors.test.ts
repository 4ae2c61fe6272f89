import { assert, describe, it } from "@effect/vitest"
import { Either, Schema } from "effect"
import * as fc from "effect/FastCheck"
import { fromParseError } from "../../apps/http/pipeline/DecodeErrors.ts"
import { SubscribePayload } from "../../apps/http/subscriptions/SubscriptionsApi.ts"
import { CreateTransferPayload } from "../../apps/http/transfers/TransfersApi.ts"
import { leaks, mutated, secretsArb, validSubscription, validTransfer } from "../support/Mutations.ts"

// In process: the error body's message and param for a body that does not decode, for mutations of valid
// requests. The black-box suites send such bodies over HTTP (test/http/Fuzz.http.test.ts).
const decodeTransfer = Schema.decodeUnknownEither(CreateTransferPayload)
const decodeSubscription = Schema.decodeUnknownEither(SubscribePayload)

const errorOf = (decode: (u: unknown) => Either.Either<unknown, any>, body: unknown) => {
  const result = decode(body)
  return Either.isLeft(result) ? fromParseError(result.left).error : undefined
}

describe("decode errors", () => {
  it("the valid bodies decode", () => {
    for (const s of fc.sample(secretsArb, { numRuns: 20, seed: 1 })) {
      assert.isUndefined(errorOf(decodeTransfer, validTransfer(s)))
      assert.isUndefined(errorOf(decodeSubscription, validSubscription(s)))
    }
  })

  it.prop("a mutated transfer's error names a param and repeats nothing it was sent", [mutated(validTransfer)], (
    [{ body, mutations, secrets }]
  ) => {
    const error = errorOf(decodeTransfer, body)
    if (error === undefined) return
    const text = JSON.stringify(error)
    assert.deepStrictEqual(leaks(text, secrets), [], `${mutations.join(", ")}: ${text}`)
    if (error.code !== "body_invalid") assert.match(error.param ?? "", /^payment_transfer(\.[a-z_]+)*$/)
  }, { fastCheck: { numRuns: 2000 } })

  it.prop("a mutated signup's error repeats nothing it was sent", [mutated(validSubscription)], (
    [{ body, mutations, secrets }]
  ) => {
    const error = errorOf(decodeSubscription, body)
    if (error === undefined) return
    const text = JSON.stringify(error)
    assert.deepStrictEqual(leaks(text, secrets), [], `${mutations.join(", ")}: ${text}`)
  }, { fastCheck: { numRuns: 500 } })

  it("the fuzzer's findings: payment_transfer in an array, a number as currency", () => {
    const [s] = fc.sample(secretsArb, { numRuns: 1, seed: 2 })
    const valid = validTransfer(s!)
    const wrapped = errorOf(decodeTransfer, { payment_transfer: [valid.payment_transfer] })
    assert.deepStrictEqual(wrapped, {
      type: "invalid_request_error",
      code: "parameter_invalid",
      message: "payment_transfer must be an object of the transfer's parameters.",
      param: "payment_transfer"
    })
    const currency = errorOf(decodeTransfer, {
      payment_transfer: { ...valid.payment_transfer, currency: Number(s!.pan) }
    })
    assert.strictEqual(
      currency?.message,
      "payment_transfer.currency must be an ISO 4217 code in upper case, such as USD."
    )
    assert.strictEqual(currency?.param, "payment_transfer.currency")
  })

  it("keeps the schemas' own messages, which say what is wrong", () => {
    const [s] = fc.sample(secretsArb, { numRuns: 1, seed: 3 })
    const valid = validTransfer(s!).payment_transfer
    const cvc = errorOf(decodeTransfer, {
      payment_transfer: { ...valid, sender_account_uri: `pan:${s!.pan};exp=2031-07;cvc=12` }
    })
    assert.strictEqual(cvc?.message, "The CVC must be 3 or 4 digits.")
    const { currency: _, ...withoutCurrency } = valid
    const missing = errorOf(decodeTransfer, { payment_transfer: withoutCurrency })
    assert.strictEqual(missing?.code, "parameter_missing")
    assert.strictEqual(missing?.param, "payment_transfer.currency")
  })
})
