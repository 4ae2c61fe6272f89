import { Schema } from "effect"

// A practical subset of RFC 5321/5322 that mail providers actually deliver to: ASCII dot-atom local part,
// a domain of LDH labels with an alphabetic top-level label. Quoted local parts and address literals are
// refused on purpose; they are a common vector for header tricks and nobody subscribes with them.
const localPart = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/
const label = /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/
const topLabel = /^[A-Za-z]{2,63}$/

export const MaxEmailLength = 254

export const isEmail = (s: string): boolean => {
  if (s.length > MaxEmailLength) return false
  const at = s.lastIndexOf("@")
  if (at < 1 || at !== s.indexOf("@")) return false
  const local = s.slice(0, at)
  const labels = s.slice(at + 1).split(".")
  return (
    local.length <= 64 &&
    localPart.test(local) &&
    labels.length >= 2 &&
    labels.every((l) => label.test(l)) &&
    topLabel.test(labels[labels.length - 1]!)
  )
}

// The document shows the encoded side of a transformation only: the address's constraints are stated there.
export const EmailJsonSchema = { type: "string", format: "email", minLength: 1, maxLength: MaxEmailLength }
export const Email = Schema.String.annotations({ jsonSchema: EmailJsonSchema }).pipe(
  Schema.compose(Schema.Trim),
  Schema.nonEmptyString({ message: () => "Enter an e-mail address." }),
  Schema.maxLength(MaxEmailLength, { message: () => `An e-mail address has at most ${MaxEmailLength} characters.` }),
  Schema.filter(isEmail, { message: () => "Enter a valid e-mail address, like name@example.com." }),
  Schema.brand("Email")
)
export type Email = typeof Email.Type

// Addresses are matched case-insensitively: providers treat the local part that way, and a subscriber who
// types "Ann@Example.com" and later "ann@example.com" is one person.
export const normalizeEmail = (email: Email): string => email.toLowerCase()
