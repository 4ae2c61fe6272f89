import { assert, describe, it } from "@effect/vitest"
import { DateTime } from "effect"
import * as fc from "effect/FastCheck"
import {
  brandOf,
  type CardBrand,
  expiresAt,
  type Expiry,
  holdsCardData,
  isExpired,
  luhn
} from "../../../core/payments/Card.ts"
import { digitString, luhnCheckDigit, luhnValid, withCheckDigit } from "./arbitraries.ts"

const testCards = [
  "4242424242424242",
  "5555555555554444",
  "4000000000000069",
  "4000000000000002",
  "4000000000009995",
  "4000000000000127",
  "4000000000000119",
  "4000000000009987",
  "4000000000009979",
  "4000002760003184"
]

describe("luhn", () => {
  it("accepts the processors' test cards", () => {
    for (const pan of testCards) {
      assert.isTrue(luhn(pan), pan)
      // And the independent check digit agrees.
      assert.strictEqual(luhnCheckDigit(pan.slice(0, -1)), pan.slice(-1), pan)
    }
  })

  it("accepts other well-known valid numbers and refuses near misses", () => {
    for (const pan of ["378282246310005", "371449635398431", "6011111111111117", "3566002020360505", "79927398713"]) {
      assert.isTrue(luhn(pan), pan)
    }
    for (const pan of ["4242424242424241", "79927398710", "1234567812345678"]) assert.isFalse(luhn(pan), pan)
    assert.isFalse(luhn(""))
  })

  it.prop("appending the check digit to 11 to 18 digits gives a number luhn accepts", [digitString(11, 18)], (
    [payload]
  ) => {
    const pan = withCheckDigit(payload)
    assert.isTrue(luhn(pan), pan)
    assert.include([12, 13, 14, 15, 16, 17, 18, 19], pan.length)
  })

  it.prop("exactly one of the ten possible last digits is accepted", [digitString(11, 18)], ([payload]) => {
    const accepted = "0123456789".split("").filter((d) => luhn(payload + d))
    assert.deepStrictEqual(accepted, [luhnCheckDigit(payload)])
  })

  it.prop("changing any single digit of a valid number makes it invalid", [
    luhnValid,
    fc.nat(),
    fc.integer({ min: 1, max: 9 })
  ], ([pan, i, delta]) => {
    const at = i % pan.length
    const changed = String((Number(pan[at]) + delta) % 10)
    const mutated = pan.slice(0, at) + changed + pan.slice(at + 1)
    assert.notStrictEqual(mutated, pan)
    assert.isFalse(luhn(mutated), `${pan} -> ${mutated}`)
  })

  it.prop("swapping two adjacent different digits makes it invalid, except 09 and 90", [luhnValid, fc.nat()], (
    [pan, i]
  ) => {
    const at = i % (pan.length - 1)
    const a = pan[at]!
    const b = pan[at + 1]!
    fc.pre(a !== b)
    const swapped = pan.slice(0, at) + b + a + pan.slice(at + 2)
    const nineAndZero = (a === "0" && b === "9") || (a === "9" && b === "0")
    assert.strictEqual(luhn(swapped), nineAndZero, `${pan} -> ${swapped}`)
  })

  it.prop("agrees with the textbook check on any digit string", [digitString(1, 25)], ([digits]) => {
    assert.strictEqual(luhn(digits), luhnCheckDigit(digits.slice(0, -1)) === digits.slice(-1))
  })
})

describe("brandOf", () => {
  // Prefix ranges, and the brand each must give; the rest of the number is random.
  const cases: ReadonlyArray<readonly [brand: CardBrand, label: string, prefixes: ReadonlyArray<string>]> = [
    ["visa", "4", ["4"]],
    ["mastercard", "51-55 and 2221-2720", [...range(51, 55), ...range(2221, 2720)]],
    ["amex", "34 and 37", ["34", "37"]],
    ["discover", "6011, 644-649 and 65", ["6011", "65", ...range(644, 649)]],
    ["jcb", "3528-3589", range(3528, 3589)],
    ["diners", "300-305, 36, 38 and 39", ["36", "38", "39", ...range(300, 305)]],
    ["unionpay", "62", ["62"]]
  ]

  function range(from: number, to: number): Array<string> {
    return Array.from({ length: to - from + 1 }, (_, i) => String(from + i))
  }

  it("names the test cards", () => {
    assert.strictEqual(brandOf("4242424242424242"), "visa")
    assert.strictEqual(brandOf("5555555555554444"), "mastercard")
    assert.strictEqual(brandOf("2223003122003222"), "mastercard")
    assert.strictEqual(brandOf("378282246310005"), "amex")
    assert.strictEqual(brandOf("6011111111111117"), "discover")
    assert.strictEqual(brandOf("3566002020360505"), "jcb")
    assert.strictEqual(brandOf("36227206271667"), "diners")
    assert.strictEqual(brandOf("6200000000000005"), "unionpay")
    for (const pan of testCards.filter((p) => p.startsWith("4"))) assert.strictEqual(brandOf(pan), "visa")
  })

  for (const [brand, label, prefixes] of cases) {
    it.prop(`${brand} for ${label}`, [
      fc.constantFrom(...prefixes),
      digitString(12, 15)
    ], ([prefix, rest]) => {
      const pan = withCheckDigit((prefix + rest).slice(0, 18))
      assert.isTrue(pan.startsWith(prefix))
      assert.strictEqual(brandOf(pan), brand, pan)
    })
  }

  it.prop("unknown outside every range", [
    fc.constantFrom(
      "0",
      "1",
      "7",
      "8",
      "9",
      "2220",
      "2721",
      "50",
      "56",
      "31",
      "33",
      "3500",
      "306",
      "3527",
      "3590",
      "600",
      "6012",
      "643",
      "66"
    ),
    digitString(12, 15)
  ], ([prefix, rest]) => {
    const pan = withCheckDigit(prefix + rest)
    assert.strictEqual(brandOf(pan), "unknown", pan)
  })

  it("the mastercard 2-series edges", () => {
    assert.strictEqual(brandOf("2220999999999999"), "unknown")
    assert.strictEqual(brandOf("2221000000000009"), "mastercard")
    assert.strictEqual(brandOf("2720999999999999"), "mastercard")
    assert.strictEqual(brandOf("2721000000000000"), "unknown")
  })
})

describe("expiry", () => {
  // The first instant of a month (month 1-12), computed without Date.UTC's mapping of years 0-99 to 1900-1999.
  const startOfMonth = (year: number, month: number): number => {
    const d = new Date(0)
    d.setUTCFullYear(year, month - 1, 1)
    d.setUTCHours(0, 0, 0, 0)
    return d.getTime()
  }
  const nextMonth = (
    { month, year }: Expiry
  ): Expiry => (month === 12 ? { year: year + 1, month: 1 } : { year, month: month + 1 })
  const at = (millis: number) => DateTime.unsafeMake(millis)
  const iso = (millis: number) => new Date(millis).toISOString()

  const expiry = fc.record({ year: fc.integer({ min: 100, max: 9999 }), month: fc.integer({ min: 1, max: 12 }) })

  it.prop("expiresAt is the first instant of the next month, UTC", [expiry], ([e]) => {
    const next = nextMonth(e)
    assert.strictEqual(DateTime.toEpochMillis(expiresAt(e)), startOfMonth(next.year, next.month))
  })

  it.prop("not expired at any instant of the expiry month, nor before it", [
    expiry,
    fc.double({ min: 0, max: 1, noNaN: true }),
    fc.nat({ max: 2 ** 40 })
  ], ([e, fraction, before]) => {
    const start = startOfMonth(e.year, e.month)
    const next = nextMonth(e)
    const end = startOfMonth(next.year, next.month) // exclusive
    const within = start + Math.min(end - start - 1, Math.floor(fraction * (end - start)))
    assert.isFalse(isExpired(e, at(within)), iso(within))
    assert.isFalse(isExpired(e, at(start)), iso(start))
    assert.isFalse(isExpired(e, at(end - 1)), iso(end - 1))
    assert.isFalse(isExpired(e, at(start - before)), iso(start - before))
  })

  it.prop("expired from the first instant of the next month on", [expiry, fc.nat({ max: 2 ** 40 })], ([e, after]) => {
    const next = nextMonth(e)
    const end = startOfMonth(next.year, next.month)
    assert.isTrue(isExpired(e, at(end)), iso(end))
    assert.isTrue(isExpired(e, at(end + after)), iso(end + after))
  })

  it("the exact boundary: last millisecond of the month valid, first of the next expired", () => {
    const cases: ReadonlyArray<readonly [Expiry, string, string]> = [
      [{ year: 2030, month: 1 }, "2030-01-31T23:59:59.999Z", "2030-02-01T00:00:00.000Z"],
      [{ year: 2025, month: 12 }, "2025-12-31T23:59:59.999Z", "2026-01-01T00:00:00.000Z"],
      [{ year: 2099, month: 12 }, "2099-12-31T23:59:59.999Z", "2100-01-01T00:00:00.000Z"],
      [{ year: 2024, month: 2 }, "2024-02-29T23:59:59.999Z", "2024-03-01T00:00:00.000Z"],
      [{ year: 2100, month: 2 }, "2100-02-28T23:59:59.999Z", "2100-03-01T00:00:00.000Z"],
      [{ year: 2000, month: 2 }, "2000-02-29T23:59:59.999Z", "2000-03-01T00:00:00.000Z"],
      [{ year: 2027, month: 4 }, "2027-04-30T23:59:59.999Z", "2027-05-01T00:00:00.000Z"]
    ]
    for (const [e, last, first] of cases) {
      assert.isFalse(isExpired(e, DateTime.unsafeMake(last)), last)
      assert.isTrue(isExpired(e, DateTime.unsafeMake(first)), first)
      assert.isFalse(
        isExpired(e, DateTime.unsafeMake(`${e.year}-${String(e.month).padStart(2, "0")}-01T00:00:00.000Z`))
      )
      assert.strictEqual(DateTime.formatIso(expiresAt(e)), first)
    }
  })

  it("December expires on January 1 of the next year", () => {
    const e = { year: 2029, month: 12 }
    assert.strictEqual(DateTime.formatIso(expiresAt(e)), "2030-01-01T00:00:00.000Z")
    assert.isFalse(isExpired(e, DateTime.unsafeMake(Date.UTC(2029, 11, 31, 23, 59, 59, 999))))
    assert.isTrue(isExpired(e, DateTime.unsafeMake(Date.UTC(2030, 0, 1))))
    // Not in January of the same year, as a 0-based month slip would give.
    assert.isFalse(isExpired(e, DateTime.unsafeMake(Date.UTC(2029, 0, 1, 0, 0, 0, 1))))
  })

  // Regression test (found by the property tests).
  it("years 0-99 are not mapped to 1900-1999", () => {
    const e = { year: 50, month: 1 }
    assert.strictEqual(DateTime.toEpochMillis(expiresAt(e)), startOfMonth(50, 2))
  })
})

describe("holdsCardData", () => {
  it.prop("finds a card number of a known brand anywhere in a text, with or without separators", [
    fc.constantFrom("4", "51", "2221", "34", "6011", "3528", "62"),
    fc.integer({ min: 13, max: 19 }),
    digitString(19),
    fc.constantFrom("", " ", "-"),
    fc.string({ maxLength: 10 }).filter((s) => !/[0-9]$/.test(s))
  ], ([prefix, length, fill, separator, before]) => {
    const pan = withCheckDigit((prefix + fill).slice(0, length - 1))
    const spaced = pan.match(/.{1,4}/g)!.join(separator)
    assert.isTrue(holdsCardData(`${before}${spaced}`), spaced)
  })

  it("finds the markers of the secret formats, and leaves ordinary values alone", () => {
    for (const text of ["pan:4242", "x UCAF:abc", "ucaf:jJJLtQa+Iws8AREAEbjsA1MAAAA"]) {
      assert.isTrue(holdsCardData(text))
    }
    for (
      const text of [
        "order-1001",
        "Ann Example",
        "merchant_1",
        "4242424242424241",
        "12345678901",
        "2031-07-15",
        "panel:x"
      ]
    ) assert.isFalse(holdsCardData(text), text)
  })
})
