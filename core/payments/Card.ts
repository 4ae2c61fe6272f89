import { DateTime, Either, ParseResult, Redacted, Schema } from "effect"

export const luhn = (digits: string): boolean => {
  let sum = 0
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48
    if (i % 2 === 1) d = d * 2 > 9 ? d * 2 - 9 : d * 2
    sum += d
  }
  return digits.length > 0 && sum % 10 === 0
}

export const CardBrand = Schema.Literal(
  "visa",
  "mastercard",
  "amex",
  "discover",
  "jcb",
  "diners",
  "unionpay",
  "unknown"
)
export type CardBrand = typeof CardBrand.Type

export const brandOf = (pan: string): CardBrand => {
  const n = (digits: number) => Number(pan.slice(0, digits))
  if (pan.startsWith("4")) return "visa"
  if ((n(2) >= 51 && n(2) <= 55) || (n(4) >= 2221 && n(4) <= 2720)) return "mastercard"
  if (n(2) === 34 || n(2) === 37) return "amex"
  if (pan.startsWith("6011") || pan.startsWith("65") || (n(3) >= 644 && n(3) <= 649)) return "discover"
  if (n(4) >= 3528 && n(4) <= 3589) return "jcb"
  if (n(2) === 36 || n(2) === 38 || n(2) === 39 || (n(3) >= 300 && n(3) <= 305)) return "diners"
  if (pan.startsWith("62")) return "unionpay"
  return "unknown"
}

// Card data in a field not meant for it (a reference, a name, a merchant id) would be stored and shown in
// clear, so such values are refused, as Stripe refuses card numbers in metadata: the markers of our two
// secret formats, or 12-19 digits in groups (split by spaces or dashes) that pass Luhn and start like a card
// of a known brand. A single run of 20 digits or more is taken for a number, not searched inside.
const holdsCardNumber = (run: string): boolean => {
  const groups = run.split(/[ -]/)
  for (let first = 0; first < groups.length; first++) {
    let digits = ""
    for (let next = first; next < groups.length && digits.length < 19; next++) {
      digits += groups[next]
      if (digits.length >= 12 && digits.length <= 19 && luhn(digits) && brandOf(digits) !== "unknown") return true
    }
  }
  return false
}

const markers = /pan:|ucaf:/i
const digitRuns = /[0-9]+(?:[ -][0-9]+)*/g
export const holdsCardData = (text: string): boolean =>
  markers.test(text) || (text.match(digitRuns) ?? []).some(holdsCardNumber)

export interface Expiry {
  readonly year: number
  readonly month: number
}

// A card is valid through the last day of its expiry month (UTC): it expires at the first instant of the
// next month.
export const expiresAt = (expiry: Expiry): DateTime.Utc => {
  // setUTCFullYear, not Date.UTC: Date.UTC reads the years 0-99 as 1900-1999.
  const date = new Date(0)
  date.setUTCFullYear(expiry.year, expiry.month, 1)
  return DateTime.unsafeMake(date.getTime())
}

export const isExpired = (expiry: Expiry, now: DateTime.Utc): boolean =>
  DateTime.toEpochMillis(now) >= DateTime.toEpochMillis(expiresAt(expiry))

export interface CardAccount {
  readonly pan: Redacted.Redacted<string>
  readonly expiry: Expiry
  readonly cvc: Redacted.Redacted<string>
}

// `pan:<12-19 digits>;exp=<YYYY-MM>;cvc=<3-4 digits>`, the parameters in any order. Messages name the part
// that is wrong and never repeat the input: it is card data.
export const parseAccountUri = (input: string): Either.Either<CardAccount, string> => {
  if (input.length > 128 || !input.startsWith("pan:")) {
    return Either.left("sender_account_uri must look like pan:<card number>;exp=<YYYY-MM>;cvc=<CVC>.")
  }
  const [pan, ...parameters] = input.slice(4).split(";")
  if (!/^[0-9]{12,19}$/.test(pan!)) return Either.left("The card number must be 12 to 19 digits.")
  const values = new Map<string, string>()
  for (const parameter of parameters) {
    const eq = parameter.indexOf("=")
    const key = eq < 0 ? parameter : parameter.slice(0, eq)
    if ((key !== "exp" && key !== "cvc") || eq < 0) {
      return Either.left("sender_account_uri takes exactly the parameters exp and cvc.")
    }
    if (values.has(key)) return Either.left(`sender_account_uri has the parameter ${key} twice.`)
    values.set(key, parameter.slice(eq + 1))
  }
  const exp = /^([0-9]{4})-([0-9]{2})$/.exec(values.get("exp") ?? "")
  if (exp === null) return Either.left("The expiry (exp) must be YYYY-MM.")
  const month = Number(exp[2])
  if (month < 1 || month > 12) return Either.left("The expiry month (exp) must be 01 to 12.")
  const cvc = values.get("cvc") ?? ""
  if (!/^[0-9]{3,4}$/.test(cvc)) return Either.left("The CVC must be 3 or 4 digits.")
  return Either.right({ pan: Redacted.make(pan!), expiry: { year: Number(exp[1]), month }, cvc: Redacted.make(cvc) })
}

// A string that holds secrets, decoded so that no issue ever holds it: Effect's transformations keep their input
// in the issue tree (`actual`), where a logger or anything that serialises the tree finds it. A declaration
// keeps only what it is given, here a placeholder and a fixed message.
const secretString = <A>(options: {
  readonly placeholder: string
  readonly notString: string
  readonly parse: (input: string) => Either.Either<A, string>
  readonly format: (value: A) => string
  readonly description: string
  readonly pattern: string
}) =>
  Schema.declare<A, string, readonly []>([], {
    decode: () => (input, _, ast) => {
      const parsed = typeof input === "string" ? options.parse(input) : Either.left(options.notString)
      return Either.mapLeft(parsed, (message) => new ParseResult.Type(ast, options.placeholder, message))
    },
    encode: () => (value) => ParseResult.succeed(options.format(value as A))
  }, {
    description: options.description,
    jsonSchema: { type: "string", pattern: options.pattern, description: options.description }
  })

export const formatAccountUri = (account: CardAccount) =>
  `pan:${Redacted.value(account.pan)};exp=${String(account.expiry.year).padStart(4, "0")}-${
    String(account.expiry.month).padStart(2, "0")
  };cvc=${Redacted.value(account.cvc)}`

export const SenderAccountUri = secretString<CardAccount>({
  placeholder: "[card data]",
  notString: "sender_account_uri must be a string.",
  parse: parseAccountUri,
  format: formatAccountUri,
  description:
    // No run of three digits or more: the schema is in a failed decode's issue tree, where one could pass for a CVC.
    "pan:<12-19 digits>;exp=<YYYY-MM>;cvc=<3-4 digits>, exp and cvc in either order. The card number must pass the Luhn check (else the card error incorrect_number).",
  pattern:
    "^pan:[0-9]{12,19};(?:exp=[0-9]{4}-(?:0[1-9]|1[0-2]);cvc=[0-9]{3,4}|cvc=[0-9]{3,4};exp=[0-9]{4}-(?:0[1-9]|1[0-2]))$"
})

// Base64 with or without its padding: 3-D Secure servers send both. Stored with the padding, so that the two
// spellings of one value are one value (the idempotency hash, the card network).
const base64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}(?:==)?|[A-Za-z0-9+/]{3}=?)?$/

export const parseAuthenticationValue = (input: string): Either.Either<Redacted.Redacted<string>, string> => {
  const value = input.slice(5)
  return input.length <= 205 && input.startsWith("ucaf:") && value.length > 0 && base64.test(value)
    ? Either.right(Redacted.make(value.padEnd(Math.ceil(value.length / 4) * 4, "=")))
    : Either.left("authentication_value must be ucaf: followed by base64.")
}

export const formatAuthenticationValue = (value: Redacted.Redacted<string>) => `ucaf:${Redacted.value(value)}`

// `ucaf:<base64>`: the 3-D Secure / Mastercard Identity Check authentication value, opaque to us.
export const AuthenticationValue = secretString<Redacted.Redacted<string>>({
  placeholder: "[authentication value]",
  notString: "authentication_value must be a string.",
  parse: parseAuthenticationValue,
  format: formatAuthenticationValue,
  description: "ucaf:<base64>, with or without padding",
  pattern: "^ucaf:[A-Za-z0-9+/]{1,200}={0,2}$"
})
