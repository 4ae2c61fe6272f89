import { assert, describe, it } from "@effect/vitest"
import { Either, Schema } from "effect"
import * as fc from "effect/FastCheck"
import { CurrencyCode, currencyCodes, exponentOf } from "../../../core/payments/Currency.ts"
import { flipCase, stringFrom } from "../arbitraries.ts"
import { code, currency } from "./arbitraries.ts"

const decode = Schema.decodeUnknownEither(CurrencyCode)
const rejects = (input: unknown) =>
  assert.isTrue(
    Either.isLeft(decode(input)),
    `accepted ${typeof input === "string" ? JSON.stringify(input) : typeof input}`
  )

describe("CurrencyCode", () => {
  it("decodes every code in currencyCodes to itself", () => {
    assert.isAbove(currencyCodes.length, 150)
    for (const c of currencyCodes) {
      assert.match(c, /^[A-Z]{3}$/)
      assert.deepStrictEqual(decode(c), Either.right(c as CurrencyCode))
    }
  })

  it("lists every code once", () => {
    assert.strictEqual(new Set(currencyCodes).size, currencyCodes.length)
  })

  it.prop("rejects a known code in lower or mixed case", [currency, fc.array(fc.boolean(), { minLength: 1 })], (
    [c, mask]
  ) => {
    rejects(c.toLowerCase())
    const mixed = flipCase(c, mask)
    if (mixed !== c) rejects(mixed)
  })

  it("rejects unknown, testing and no-minor-unit codes, and near misses", () => {
    for (
      const input of [
        "XXX",
        "XTS",
        "XAU",
        "XAG",
        "XDR",
        "ABC",
        "US",
        "U",
        "",
        "USDD",
        " USD",
        "USD ",
        "U SD",
        "USD\n",
        "ＵＳＤ",
        "EUR\u0000",
        "usd",
        "Usd",
        "__proto__",
        "constructor",
        "toString",
        "hasOwnProperty"
      ]
    ) rejects(input)
  })

  it.prop("rejects every string that is not one of the codes", [
    fc.oneof(stringFrom("ABCDEFGHIJKLMNOPQRSTUVWXYZ", { maxLength: 4 }), fc.string(), fc.fullUnicodeString())
  ], ([s]) => {
    const result = decode(s)
    assert.strictEqual(Either.isRight(result), currencyCodes.includes(s), s)
  })

  it.prop("rejects non-strings", [fc.anything().filter((x) => typeof x !== "string")], ([x]) => {
    rejects(x)
  })

  it("rejects non-strings that look like codes", () => {
    rejects(["USD"])
    rejects({ USD: 2 })
    rejects(new String("USD"))
    rejects(840)
    rejects(null)
    rejects(undefined)
  })
})

describe("exponentOf", () => {
  it("gives the ISO 4217 minor unit", () => {
    const expected: Record<string, number> = {
      USD: 2,
      EUR: 2,
      GBP: 2,
      JPY: 0,
      KRW: 0,
      CLP: 0,
      ISK: 0,
      VND: 0,
      BHD: 3,
      KWD: 3,
      JOD: 3,
      OMR: 3,
      TND: 3,
      IQD: 3,
      LYD: 3,
      UYW: 4
    }
    for (const [c, e] of Object.entries(expected)) assert.strictEqual(exponentOf(code(c)), e, c)
  })

  it("is 0, 2, 3 or 4 for every code", () => {
    for (const c of currencyCodes) assert.include([0, 2, 3, 4], exponentOf(code(c)), c)
  })
})
