import { assert, describe, it } from "@effect/vitest"
import { DateTime, Duration, Either, Redacted, Schema } from "effect"
import * as fc from "effect/FastCheck"
import {
  canonicalJson,
  decideStart,
  IdempotencyKey,
  IdempotencyKeyTtl,
  IdempotencyLease,
  KeptAnswer,
  type KeyRecord,
  RequestHash,
  requestHash
} from "../../../core/payments/Idempotency.ts"
import { PaymentTransferRequest, TransferId } from "../../../core/payments/Transfer.ts"
import { alnum, stringFrom, validEmail } from "../arbitraries.ts"
import { accountParts, currency, cvcParam, expParam, renderAccount, renderUri } from "./arbitraries.ts"

const printable = Array.from({ length: 0x7e - 0x20 }, (_, i) => String.fromCharCode(0x21 + i)).join("")

// A stand-in for the keyed hash: the canonical text itself, so that tests can see what is hashed.
const fingerprints = { of: (value: Redacted.Redacted<string>) => `h(${Redacted.value(value)})` }
const decode = Schema.decodeUnknownSync(PaymentTransferRequest)

// Every permutation of an object's keys, nested objects included, is the same JSON value.
const shuffled = (value: unknown, seed: number): unknown => {
  if (Array.isArray(value)) return value.map((v) => shuffled(v, seed))
  if (value === null || typeof value !== "object") return value
  const entries = Object.entries(value)
  const rotated = entries.slice(seed % (entries.length || 1)).concat(entries.slice(0, seed % (entries.length || 1)))
  return Object.fromEntries(rotated.reverse().map(([k, v]) => [k, shuffled(v, seed + 1)]))
}

describe("canonicalJson", () => {
  it.prop("is the same text for any key order, and the same value as JSON", [fc.jsonValue(), fc.nat()], ([v, seed]) => {
    assert.strictEqual(canonicalJson(shuffled(v, seed)), canonicalJson(v))
    assert.deepStrictEqual(JSON.parse(canonicalJson(v)), JSON.parse(JSON.stringify(v)))
  })
})

const body = (account: string, amount = "12.34") => ({
  reference: "order-1",
  amount,
  currency: "USD",
  sender_account_uri: account,
  sender: { first_name: "Ann", middle_name: "B", email: "ann@example.com" },
  recipient: { first_name: "Bob", email: "bob@example.com", merchant_id: "m-1" }
})

describe("requestHash", () => {
  it.prop(
    "same parameters, same hash: whatever the key order, white space or exp/cvc order of the body",
    [accountParts, fc.nat()],
    ([parts, seed]) => {
      const uri = (expFirst: boolean) =>
        renderUri(parts.pan, expFirst ? [expParam(parts), cvcParam(parts)] : [cvcParam(parts), expParam(parts)])
      const first = decode(JSON.parse(JSON.stringify(body(uri(true)))))
      const again = decode(JSON.parse(JSON.stringify(shuffled(body(uri(false)), seed), null, 2)))
      assert.strictEqual(requestHash(fingerprints, again), requestHash(fingerprints, first))
    }
  )

  it("other parameters, another hash; the request is hashed as the body it came in", () => {
    const uri = "pan:4242424242424242;exp=2030-12;cvc=123"
    const hash = requestHash(fingerprints, decode(body(uri)))
    assert.notStrictEqual(requestHash(fingerprints, decode(body(uri, "12.35"))), hash)
    assert.notStrictEqual(requestHash(fingerprints, decode(body(uri.replace("123", "124")))), hash)
    // Stored keys from before this rule hashed the body `{"payment_transfer": ...}` in canonical form.
    assert.strictEqual(hash, `h(${canonicalJson({ payment_transfer: body(uri) })})`)
  })
})

// Any request that decodes: names with any non-control text, optional middle names and authentication values,
// padded or not, every currency, any amount string.
const text = fc.string({ unit: "grapheme", minLength: 1, maxLength: 12 }).filter((s) => !/\p{Cc}/u.test(s))
const base64 = fc.base64String({ minLength: 4, maxLength: 40 })
const requestBody = fc.record({
  reference: stringFrom(printable, { minLength: 1, maxLength: 64 }),
  amount: fc.oneof(fc.string({ maxLength: 12 }), fc.stringMatching(/^[0-9]{1,6}(\.[0-9]{1,3})?$/)),
  currency: currency,
  sender_account_uri: accountParts.map(renderAccount),
  sender: fc.record({ first_name: text, middle_name: text, email: validEmail }, {
    requiredKeys: ["first_name", "email"]
  }),
  recipient: fc.record({
    first_name: text,
    middle_name: text,
    email: validEmail,
    merchant_id: stringFrom(`${alnum}_.:-`, { minLength: 1, maxLength: 64 })
  }, { requiredKeys: ["first_name", "email", "merchant_id"] }),
  authentication_value: base64.map((b) => `ucaf:${b.replace(/=+$/, "")}`)
}, { requiredKeys: ["reference", "amount", "currency", "sender_account_uri", "sender", "recipient"] })
const decodeEither = Schema.decodeUnknownEither(PaymentTransferRequest)
const encode = Schema.encodeSync(PaymentTransferRequest)

describe("requestHash's canonical text", () => {
  it.prop(
    "is what canonicalJson makes of the request encoded through its Schema (stored hashes stay the same)",
    [requestBody],
    ([raw]) => {
      const decoded = decodeEither(raw)
      fc.pre(Either.isRight(decoded))
      const request = (decoded as Either.Right<never, PaymentTransferRequest>).right
      assert.strictEqual(
        requestHash(fingerprints, request),
        `h(${canonicalJson({ payment_transfer: encode(request) })})`
      )
    },
    { fastCheck: { numRuns: 500 } }
  )
})

describe("decideStart", () => {
  const t0 = DateTime.unsafeMake(Date.UTC(2025, 0, 15))
  const lease = Duration.toMillis(IdempotencyLease)
  const claim = { key: IdempotencyKey.make("k"), requestHash: RequestHash.make("h1"), requestId: "req-2" }
  const answer = KeptAnswer.TransferMade({ transferId: TransferId.make(`tr_${"x".repeat(24)}`) })
  const record = (overrides: Partial<KeyRecord> = {}): KeyRecord => ({
    requestHash: RequestHash.make("h1"),
    requestId: "req-1",
    startedAt: t0,
    answer: undefined,
    ...overrides
  })
  const at = (ms: number) => DateTime.unsafeMake(DateTime.toEpochMillis(t0) + ms)

  it("a new key starts", () => {
    assert.strictEqual(decideStart(undefined, claim, t0)._tag, "Started")
  })

  const ttl = Duration.toMillis(IdempotencyKeyTtl)
  const withinTtl = fc.nat({ max: ttl - 1 })

  it.prop(
    "another hash is a mismatch, answered or not, while the key lives",
    [fc.boolean(), withinTtl],
    ([answered, ms]) => {
      const r = record({ requestHash: RequestHash.make("h2"), ...(answered ? { answer } : {}) })
      assert.strictEqual(decideStart(r, claim, at(ms))._tag, "Mismatch")
    }
  )

  it.prop("an answered key replays its answer and its first request id while it lives", [withinTtl], ([ms]) => {
    assert.deepStrictEqual(decideStart(record({ answer }), claim, at(ms)), {
      _tag: "Replay",
      answer,
      requestId: "req-1"
    } as any)
  })

  it.prop(
    "a key 24 h old or older is no key: any request with it starts, whatever it kept",
    [fc.boolean(), fc.boolean(), fc.nat({ max: 10 * ttl })],
    ([answered, sameHash, ms]) => {
      const r = record({ requestHash: RequestHash.make(sameHash ? "h1" : "h2"), ...(answered ? { answer } : {}) })
      assert.strictEqual(decideStart(r, claim, at(ttl + ms))._tag, "Started")
    }
  )

  it.prop(
    "a running key is in progress for the lease, then taken over",
    [fc.integer({ min: -lease, max: 3 * lease })],
    ([
      ms
    ]) => {
      assert.strictEqual(decideStart(record(), claim, at(ms))._tag, ms >= lease ? "Started" : "InProgress")
    }
  )
})
