import { assert, describe, it } from "@effect/vitest"
import { Duration, Either, Schema } from "effect"
import * as fc from "effect/FastCheck"
import { ConfirmTokenTtl, isUsable, Token, TokenBytes } from "../../core/subscriptions/Token.ts"
import { stringFrom } from "./arbitraries.ts"

const decode = Schema.decodeUnknownEither(Token)
const rejects = (input: unknown) => assert.isTrue(Either.isLeft(decode(input)), `accepted ${JSON.stringify(input)}`)

const base64url = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
const token43 = stringFrom(base64url, { minLength: 43, maxLength: 43 })
const time = fc.integer({ min: 0, max: 2 ** 45 }) // milliseconds since the epoch, up to the year 3084

describe("Token", () => {
  it.prop("the encoding of 32 random bytes is a token", [
    fc.uint8Array({ minLength: TokenBytes, maxLength: TokenBytes })
  ], ([bytes]) => {
    const encoded = Buffer.from(bytes).toString("base64url")
    assert.strictEqual(encoded.length, 43)
    assert.deepStrictEqual(decode(encoded), Either.right(Token.make(encoded)))
  })

  it.prop("accepts every string of exactly 43 base64url characters", [token43], ([s]) => {
    assert.isTrue(Either.isRight(decode(s)))
  })

  it.prop("the schema's own values are 43 base64url characters", [Token], ([t]) => {
    assert.match(t, /^[A-Za-z0-9_-]{43}$/)
  })

  it.prop("rejects any other length", [stringFrom(base64url, { maxLength: 100 })], ([s]) => {
    fc.pre(s.length !== 43)
    rejects(s)
  })

  it.prop("rejects a character outside base64url anywhere", [
    token43,
    fc.nat({ max: 42 }),
    fc.oneof(
      fc.constantFrom("+", "/", "=", " ", "\n", ".", "%"),
      fc.string({ unit: "binary", minLength: 1, maxLength: 1 })
    )
  ], ([t, i, c]) => {
    fc.pre(!base64url.includes(c))
    rejects(t.slice(0, i) + c + t.slice(i + 1))
    rejects(t + c)
    rejects(c + t)
    rejects(t + "\n")
  })

  it.prop("standard base64 with padding is not a token", [
    fc.uint8Array({ minLength: TokenBytes, maxLength: TokenBytes })
  ], ([bytes]) => {
    const standard = Buffer.from(bytes).toString("base64")
    assert.strictEqual(standard.length, 44) // ends with "="
    rejects(standard)
  })
})

describe("isUsable", () => {
  it.prop("an unused token is usable strictly before its expiry, not at or after it", [
    time,
    fc.integer({ min: -(2 ** 40), max: 2 ** 40 })
  ], ([expiresAt, offset]) => {
    const now = expiresAt + offset
    assert.strictEqual(isUsable({ usedAt: null, expiresAt }, now), offset < 0)
    assert.isTrue(isUsable({ usedAt: null, expiresAt }, expiresAt - 1))
    assert.isFalse(isUsable({ usedAt: null, expiresAt }, expiresAt))
    assert.isFalse(isUsable({ usedAt: null, expiresAt }, expiresAt + 1))
  })

  it.prop("a used token is never usable", [time, fc.option(time, { nil: null }), time], ([usedAt, expiresAt, now]) => {
    assert.isFalse(isUsable({ usedAt, expiresAt }, now))
  })

  it.prop("a token without expiry never expires", [time], ([now]) => {
    assert.isTrue(isUsable({ usedAt: null, expiresAt: null }, now))
    assert.isTrue(isUsable({ usedAt: null, expiresAt: null }, Number.MAX_SAFE_INTEGER))
  })

  it.prop("usability only ends: usable at some time means usable at every earlier time", [
    fc.record({ usedAt: fc.option(time, { nil: null }), expiresAt: fc.option(time, { nil: null }) }),
    time,
    time
  ], ([token, a, b]) => {
    const [earlier, later] = a <= b ? [a, b] : [b, a]
    if (isUsable(token, later)) assert.isTrue(isUsable(token, earlier))
  })

  it.prop("a confirmation token lives exactly ConfirmTokenTtl", [time], ([issuedAt]) => {
    const token = { usedAt: null, expiresAt: issuedAt + Duration.toMillis(ConfirmTokenTtl) }
    assert.isTrue(isUsable(token, issuedAt))
    assert.isTrue(isUsable(token, issuedAt + Duration.toMillis(Duration.hours(48)) - 1))
    assert.isFalse(isUsable(token, issuedAt + Duration.toMillis(Duration.hours(48))))
  })
})
