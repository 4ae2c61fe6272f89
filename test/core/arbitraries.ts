// Shared fast-check arbitraries for the property tests of the pure core. Not a test file itself.
import * as fc from "effect/FastCheck"

const lower = "abcdefghijklmnopqrstuvwxyz"
const upper = lower.toUpperCase()
const digits = "0123456789"
export const alpha = lower + upper
export const alnum = alpha + digits

// RFC 5322 atext: the characters an unquoted (dot-atom) local part may use.
export const atext = alnum + "!#$%&'*+/=?^_`{|}~-"

export const charFrom = (chars: string) => fc.constantFrom(...chars.split(""))
export const stringFrom = (chars: string, constraints: { minLength?: number; maxLength?: number } = {}) =>
  fc.string({ ...constraints, unit: charFrom(chars) })

// Dot-atoms: non-empty runs of atext joined by single dots.
export const atom = (maxLength = 12) => stringFrom(atext, { minLength: 1, maxLength })
export const localPart = fc
  .array(atom(), { minLength: 1, maxLength: 4 })
  .map((atoms) => atoms.join("."))
  .filter((s) => s.length <= 64)

// LDH label: letters, digits and hyphens, 1-63 characters, neither starting nor ending with a hyphen.
export const ldhLabel = (maxInner = 12) =>
  fc.oneof(
    charFrom(alnum),
    fc
      .tuple(charFrom(alnum), stringFrom(alnum + "-", { maxLength: maxInner }), charFrom(alnum))
      .map(([a, mid, b]) => a + mid + b)
  )
export const topLabel = stringFrom(alpha, { minLength: 2, maxLength: 10 })

export interface EmailParts {
  readonly local: string
  readonly labels: ReadonlyArray<string>
  readonly tld: string
}
export const render = (p: EmailParts) => `${p.local}@${[...p.labels, p.tld].join(".")}`

export const emailParts: fc.Arbitrary<EmailParts> = fc
  .record({ local: localPart, labels: fc.array(ldhLabel(), { minLength: 1, maxLength: 3 }), tld: topLabel })
  .filter((p) => render(p).length <= 254)

export const validEmail: fc.Arbitrary<string> = emailParts.map(render)

// Whitespace that String.prototype.trim (and so Schema.Trim) removes.
export const trimmable = stringFrom(" \t\n\r\u00a0\u2003\u3000\ufeff", { maxLength: 4 })

// Every code point of Unicode general category Cc (C0, DEL and C1).
export const controlChar = fc
  .oneof(fc.integer({ min: 0x00, max: 0x1f }), fc.integer({ min: 0x7f, max: 0x9f }))
  .map((c) => String.fromCharCode(c))

export const hasControl = (s: string) => /\p{Cc}/u.test(s)

// Flip the case of the letters selected by `mask`.
export const flipCase = (s: string, mask: ReadonlyArray<boolean>) =>
  s
    .split("")
    .map((
      c,
      i
    ) => (mask[i % Math.max(mask.length, 1)] ? (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase()) : c))
    .join("")
