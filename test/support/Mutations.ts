// Valid request bodies with card data in them, and mutations of them as a careless or hostile client sends them:
// wrong shapes, values wrapped in arrays or objects, card numbers in the wrong field or as JSON numbers, deep
// nesting, parameters left out. Each comes with the secrets it holds, so that a test can search every answer
// and log line for them. Shared by the in-process decode tests and the black-box fuzz suite.
import * as fc from "effect/FastCheck"
import { withCheckDigit } from "./Payments.ts"

export interface Secrets {
  readonly pan: string
  readonly cvc: string
  readonly ucaf: string
  // Strings of our own put anywhere in the body: none may come back. Letters only, so that no CVC is found in one.
  readonly probe: string
}

export interface Mutated {
  readonly body: unknown
  readonly secrets: Secrets
  readonly mutations: ReadonlyArray<string>
}

const digits = (n: number) =>
  fc.array(fc.integer({ min: 0, max: 9 }), { minLength: n, maxLength: n }).map((d) => d.join(""))

// The authentication value is made of the PAN and the probe, so that it is as distinctive as they are.
export const secretsArb: fc.Arbitrary<Secrets> = fc.record({
  pan: digits(14).map((d) => withCheckDigit(`4${d}`)),
  // 4-digit CVCs of 5000-9999: no text of the service holds such a number.
  cvc: fc.integer({ min: 5000, max: 9999 }).map(String),
  probe: fc.stringMatching(/^[a-z]{10}$/).map((s) => `zq${s}`)
}).map((s) => ({ ...s, ucaf: Buffer.from(`3ds:${s.probe}:${s.pan}`).toString("base64").replace(/=+$/, "") }))

export const validTransfer = (s: Secrets) => ({
  payment_transfer: {
    reference: `ref-${s.probe}`,
    amount: "12.30",
    currency: "USD",
    sender_account_uri: `pan:${s.pan};exp=2031-07;cvc=${s.cvc}`,
    sender: { first_name: "Ann", middle_name: "Marie", email: "ann@example.com" },
    recipient: { first_name: "Bob", email: "bob@example.com", merchant_id: "merchant_1" },
    authentication_value: `ucaf:${s.ucaf}`
  }
})

export const validSubscription = (s: Secrets) => ({ name: `Ann ${s.probe}`, email: "ann@example.com" })

const kinds = [
  "array",
  "object",
  "pan as number",
  "account uri",
  "pan",
  "cvc as number",
  "ucaf",
  "probe",
  "null",
  "boolean",
  "delete",
  "deep",
  "empty array",
  "long"
] as const
type Kind = (typeof kinds)[number]

const replace = (value: unknown, kind: Kind, s: Secrets): unknown => {
  switch (kind) {
    case "array":
      return [value]
    case "object":
      return { value }
    case "pan as number":
      return Number(s.pan)
    case "account uri":
      return `pan:${s.pan};exp=2031-07;cvc=${s.cvc}`
    case "pan":
      return s.pan
    case "cvc as number":
      return Number(s.cvc)
    case "ucaf":
      return `ucaf:${s.ucaf}`
    case "probe":
      return s.probe
    case "null":
      return null
    case "boolean":
      return true
    case "delete":
      return undefined
    case "deep":
      return [[[{ value: [value] }]]]
    case "empty array":
      return []
    case "long":
      return `${s.probe} `.repeat(50)
  }
}

// Every path to a value in a JSON tree (objects only), the root excluded.
const paths = (value: unknown, prefix: ReadonlyArray<string> = []): Array<ReadonlyArray<string>> =>
  value !== null && typeof value === "object" && !Array.isArray(value)
    ? Object.entries(value).flatMap(([k, v]) => [[...prefix, k], ...paths(v, [...prefix, k])])
    : []

const mutateAt = (value: unknown, path: ReadonlyArray<string>, kind: Kind, s: Secrets): unknown => {
  if (path.length === 0) return replace(value, kind, s)
  if (value === null || typeof value !== "object" || Array.isArray(value)) return value
  const [key, ...rest] = path
  const copy: Record<string, unknown> = { ...(value as Record<string, unknown>) }
  const next = mutateAt(copy[key!], rest, kind, s)
  if (next === undefined) delete copy[key!]
  else copy[key!] = next
  return copy
}

export const mutated = (valid: (s: Secrets) => unknown): fc.Arbitrary<Mutated> =>
  fc.tuple(
    secretsArb,
    fc.array(fc.tuple(fc.nat(), fc.constantFrom(...kinds)), { minLength: 0, maxLength: 3 })
  ).map(([s, steps]) => {
    let body = valid(s)
    const mutations: Array<string> = []
    for (const [at, kind] of steps) {
      const all = paths(body)
      if (all.length === 0) break
      const path = all[at % all.length]!
      body = mutateAt(body, path, kind, s)
      mutations.push(`${path.join(".")}: ${kind}`)
    }
    return { body, secrets: s, mutations }
  })

// Random ids and hashes hold any four digits by chance: taken out before a CVC is searched for. So do the ids of subscriptions, past a few thousand requests.
export const withoutTokens = (text: string) =>
  text.replace(/[A-Za-z0-9_+/=-]{16,}/g, "#").replace(/"id":[0-9]+/g, "\"id\":#")

// What no answer and no log line may hold: the secrets, and Effect's own renderings of a schema or a value.
export const leaks = (text: string, s: Secrets): ReadonlyArray<string> => {
  const found: Array<string> = []
  if (text.includes(s.pan)) found.push("the card number")
  if (new RegExp(`(?<![0-9])${s.cvc}(?![0-9])`).test(withoutTokens(text))) found.push("the CVC")
  if (text.includes(s.ucaf.slice(0, 12))) found.push("the authentication value")
  if (text.includes(s.probe)) found.push("a value of the request")
  if (/Expected |\bactual\b|readonly |pan:[0-9]|cvc=[0-9]|ucaf:[A-Za-z0-9+/]/.test(text)) {
    found.push("a schema or card data marker")
  }
  return found
}
