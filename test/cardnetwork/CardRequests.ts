// Card network requests for the tests: an authorization of any card with distinctive sample values, and
// card numbers that are in none of the sandbox's tables.
import { Option, Redacted } from "effect"
import { randomUUID } from "node:crypto"
import { sandboxCards, sandboxRefundCards, sandboxTimeoutCards } from "../../adapters/cardnetwork/SandboxCardNetwork.ts"
import { luhn } from "../../core/payments/Card.ts"
import type { AuthorizationRequest } from "../../core/payments/CardNetwork.ts"
import { CurrencyCode } from "../../core/payments/Currency.ts"

// Distinctive values, so that a search for them in errors and logs finds only real leaks.
export const SampleCvc = "864"
// The base64 part of a `ucaf:` value, as the decoder hands it on.
export const SampleAuthenticationValue = "AAABBJg0VhI0VniQEjRWAAAAAAA="

export const authorizationRequest = (
  pan: string,
  overrides: Partial<AuthorizationRequest> = {}
): AuthorizationRequest => ({
  transferId: `tr_${randomUUID()}`,
  pan: Redacted.make(pan),
  expiry: { year: 2031, month: 7 },
  cvc: Redacted.make(SampleCvc),
  authenticationValue: Option.none(),
  amount: 12_345n,
  currency: CurrencyCode.make("EUR"),
  merchantId: "merchant_contract",
  ...overrides
})

export const authenticated = Option.some(Redacted.make(SampleAuthenticationValue))

const tablePans: ReadonlySet<string> = new Set(
  [...sandboxCards, ...sandboxTimeoutCards, ...sandboxRefundCards].map((card) => card.pan)
)

// A 16-digit Visa-range number with a correct check digit that is in none of the sandbox's tables.
export const randomLuhnPan = (): string => {
  for (;;) {
    let body = "4"
    while (body.length < 15) body += String(Math.floor(Math.random() * 10))
    const check = [..."0123456789"].find((d) => luhn(body + d))!
    const pan = body + check
    if (!tablePans.has(pan)) return pan
  }
}
