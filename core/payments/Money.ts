import { Either } from "effect"
import { type CurrencyCode, exponentOf } from "./Currency.ts"

// Amounts travel as decimal strings ("12.34") and live as integer minor units (1234n): never a float.
export const MaxMinorUnits = 10n ** 15n

const decimal = /^(0|[1-9][0-9]{0,17})(?:\.([0-9]{1,18}))?$/

export const parseAmount = (text: string, currency: CurrencyCode): Either.Either<bigint, string> => {
  const exponent = exponentOf(currency)
  const match = decimal.exec(text)
  if (match === null) {
    return Either.left("An amount is a decimal string such as \"12.34\": digits, at most one point, no sign.")
  }
  const fraction = match[2] ?? ""
  if (fraction.length > exponent) {
    return Either.left(
      exponent === 0
        ? `${currency} has no minor unit: send a whole number.`
        : `${currency} allows at most ${exponent} decimal places.`
    )
  }
  const minor = BigInt(match[1]!) * 10n ** BigInt(exponent) + BigInt(fraction.padEnd(exponent, "0") || "0")
  if (minor <= 0n) return Either.left("The amount must be greater than zero.")
  if (minor >= MaxMinorUnits) return Either.left("The amount is too large.")
  return Either.right(minor)
}

export const formatAmount = (minor: bigint, currency: CurrencyCode): string => {
  const exponent = exponentOf(currency)
  const sign = minor < 0n ? "-" : ""
  const digits = (minor < 0n ? -minor : minor).toString().padStart(exponent + 1, "0")
  return exponent === 0
    ? `${sign}${digits}`
    : `${sign}${digits.slice(0, -exponent)}.${digits.slice(-exponent)}`
}
