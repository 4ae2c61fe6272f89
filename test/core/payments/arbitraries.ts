// Shared fast-check arbitraries for the payment core's property tests. Not a test file itself.
import { Schema } from "effect"
import * as fc from "effect/FastCheck"
import { CurrencyCode, currencyCodes } from "../../../core/payments/Currency.ts"
import { stringFrom } from "../arbitraries.ts"

export const decimalDigits = "0123456789"
export const digitString = (minLength: number, maxLength: number = minLength) =>
  stringFrom(decimalDigits, { minLength, maxLength })

export const code = (c: string): CurrencyCode => Schema.decodeUnknownSync(CurrencyCode)(c)
export const currency: fc.Arbitrary<CurrencyCode> = fc.constantFrom(...currencyCodes).map(code)

// Whitespace of several kinds: none of it is a digit, a key character, "=", ";" or ":".
export const whitespace = fc.constantFrom(" ", "\t", "\n", "\r", "\r\n", "\u00a0", "\u2003", "\u3000", "\ufeff")

// The Luhn check digit, the textbook way: from the right of the payload, double every other digit starting with
// the rightmost, subtract 9 from doubles above 9, and pick the digit that brings the total to a multiple of 10.
export const luhnCheckDigit = (payload: string): string => {
  const reversed = [...payload].reverse().map(Number)
  const total = reversed
    .map((d, i) => (i % 2 === 0 ? (d * 2 > 9 ? d * 2 - 9 : d * 2) : d))
    .reduce((a, b) => a + b, 0)
  return String((10 - (total % 10)) % 10)
}
export const withCheckDigit = (payload: string) => payload + luhnCheckDigit(payload)

// Valid (Luhn-correct) numbers of 12 to 19 digits.
export const luhnValid = digitString(11, 18).map(withCheckDigit)

// The parts of a well-formed sender_account_uri.
export interface AccountParts {
  readonly pan: string
  readonly year: string
  readonly month: string
  readonly cvc: string
  readonly expFirst: boolean
}

export const accountParts: fc.Arbitrary<AccountParts> = fc.record({
  pan: digitString(12, 19),
  year: digitString(4),
  month: fc.integer({ min: 1, max: 12 }).map((m) => String(m).padStart(2, "0")),
  cvc: digitString(3, 4),
  expFirst: fc.boolean()
})

export const expParam = (p: AccountParts) => `exp=${p.year}-${p.month}`
export const cvcParam = (p: AccountParts) => `cvc=${p.cvc}`

export const renderUri = (pan: string, parameters: ReadonlyArray<string>, prefix = "pan:") =>
  prefix + pan + parameters.map((x) => ";" + x).join("")

export const renderAccount = (p: AccountParts) =>
  renderUri(p.pan, p.expFirst ? [expParam(p), cvcParam(p)] : [cvcParam(p), expParam(p)])
