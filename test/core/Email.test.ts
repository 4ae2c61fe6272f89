import { assert, describe, it } from "@effect/vitest"
import { Either, Schema } from "effect"
import * as fc from "effect/FastCheck"
import { Email, isEmail, MaxEmailLength, normalizeEmail } from "../../core/shared/Email.ts"
import {
  alnum,
  alpha,
  atext,
  atom,
  charFrom,
  emailParts,
  flipCase,
  ldhLabel,
  localPart,
  render,
  stringFrom,
  topLabel,
  trimmable,
  validEmail
} from "./arbitraries.ts"

const decode = Schema.decodeUnknownEither(Email)
const decodeSync = Schema.decodeUnknownSync(Email)
const rejects = (input: unknown) => assert.isTrue(Either.isLeft(decode(input)), `accepted ${JSON.stringify(input)}`)

// Strings that are often, but not always, addresses: valid ones, ones with a character inserted, removed or
// replaced, and ones drawn from the address alphabet, so that the decoder's both outcomes are exercised.
const nearEmail = fc.oneof(
  validEmail,
  fc.tuple(validEmail, fc.nat(), fc.constantFrom("@", ".", "-", " ", "\n", "é", "\u0000", "\"")).map(
    ([e, i, c]) => e.slice(0, i % (e.length + 1)) + c + e.slice(i % (e.length + 1))
  ),
  fc.tuple(validEmail, fc.nat()).map(([e, i]) => e.slice(0, i % e.length) + e.slice((i % e.length) + 1)),
  stringFrom(atext + "@. ", { maxLength: 40 }),
  fc.tuple(trimmable, validEmail, trimmable).map(([a, e, b]) => a + e + b),
  fc.string()
)

describe("Email", () => {
  it.prop("whatever it decodes is an address, trimmed and at most 254 characters", [nearEmail], ([input]) => {
    const result = decode(input)
    if (Either.isRight(result)) {
      const email = result.right
      assert.isTrue(isEmail(email))
      assert.isAtMost(email.length, MaxEmailLength)
      assert.strictEqual(email, email.trim())
      assert.strictEqual(email, input.trim())
    } else {
      assert.isFalse(isEmail(input.trim()))
    }
  })

  it.prop("generated addresses decode to themselves", [validEmail], ([email]) => {
    assert.strictEqual(decodeSync(email), email)
    assert.isTrue(isEmail(email))
  })

  it.prop("surrounding whitespace is trimmed away", [trimmable, validEmail, trimmable], ([before, email, after]) => {
    assert.strictEqual(decodeSync(before + email + after), email)
  })

  it.prop("addresses of maximal components are accepted up to 254 characters, not 255", [
    stringFrom(atext, { minLength: 64, maxLength: 64 }),
    fc.array(stringFrom(alnum, { minLength: 63, maxLength: 63 }), { minLength: 2, maxLength: 2 }),
    stringFrom(alpha, { minLength: 62, maxLength: 62 })
  ], ([local, labels, tld62]) => {
    // 64 + 1 + 63 + 1 + 63 + 1 + 61 = 254
    const at254 = `${local}@${labels.join(".")}.${tld62.slice(1)}`
    const at255 = `${local}@${labels.join(".")}.${tld62}`
    assert.strictEqual(at254.length, 254)
    assert.strictEqual(at255.length, 255)
    assert.strictEqual(decodeSync(at254), at254)
    rejects(at255)
    assert.isFalse(isEmail(at255))
  })

  describe("rejects", () => {
    it.prop("two @ signs", [validEmail, fc.nat()], ([email, i]) => {
      const at = i % (email.length + 1)
      rejects(email.slice(0, at) + "@" + email.slice(at))
    })

    it.prop("no @ sign", [validEmail, fc.string()], ([email, s]) => {
      rejects(email.replace("@", ""))
      rejects(email.replace("@", "."))
      rejects(s.replaceAll("@", ""))
    })

    it.prop("an empty local part", [emailParts], ([p]) => {
      rejects(render({ ...p, local: "" }))
    })

    it.prop("a leading, trailing or doubled dot in the local part", [emailParts, atom()], ([p, a]) => {
      rejects(render({ ...p, local: "." + p.local }))
      rejects(render({ ...p, local: p.local + "." }))
      rejects(render({ ...p, local: p.local + ".." + a }))
      rejects(render({ ...p, local: a + ".." + p.local }))
    })

    it.prop("a domain label starting or ending with a hyphen", [
      emailParts,
      fc.nat(),
      stringFrom(alnum + "-", { maxLength: 8 })
    ], ([p, i, s]) => {
      const k = i % p.labels.length
      const withLabel = (l: string) => render({ ...p, labels: p.labels.map((x, j) => (j === k ? l : x)) })
      rejects(withLabel("-" + p.labels[k]!))
      rejects(withLabel(p.labels[k]! + "-"))
      rejects(withLabel("-" + s))
      rejects(render({ ...p, tld: "-" + p.tld }))
    })

    it.prop("an empty domain label or a single-label domain", [emailParts], ([p]) => {
      rejects(render(p) + ".")
      rejects(`${p.local}@.${[...p.labels, p.tld].join(".")}`)
      rejects(`${p.local}@${p.tld}`)
      rejects(`${p.local}@${p.labels.join(".")}..${p.tld}`)
    })

    it.prop("a numeric or one-letter top-level label", [
      emailParts,
      stringFrom("0123456789", { minLength: 1, maxLength: 6 }),
      charFrom(alpha)
    ], ([p, digits, letter]) => {
      rejects(render({ ...p, tld: digits }))
      rejects(render({ ...p, tld: p.tld + digits }))
      rejects(render({ ...p, tld: letter }))
    })

    it.prop("a local part of 65 characters, while 64 pass", [
      emailParts,
      stringFrom(atext, { minLength: 65, maxLength: 65 })
    ], ([p, local65]) => {
      rejects(render({ ...p, local: local65 }))
      const local64 = local65.slice(1)
      const at64 = render({ ...p, local: local64 })
      if (at64.length <= MaxEmailLength) assert.strictEqual(decodeSync(at64), at64)
    })

    it.prop("a domain label longer than 63 characters", [
      emailParts,
      stringFrom(alnum, { minLength: 64, maxLength: 80 })
    ], ([p, long]) => {
      rejects(render({ ...p, labels: [long] }))
    })

    it.prop("characters outside the dot-atom alphabet", [
      emailParts,
      fc.constantFrom(
        " ",
        "(",
        ")",
        ",",
        ":",
        ";",
        "<",
        ">",
        "[",
        "]",
        "\\",
        "\"",
        "\r\n",
        "\u0000",
        "é",
        "ü",
        "\u202e"
      )
    ], ([p, c]) => {
      // Inside the address: at its ends, whitespace is trimmed rather than refused.
      rejects(render({ ...p, local: "x" + c + p.local }))
      rejects(render({ ...p, local: p.local + c }))
      rejects(render({ ...p, tld: p.tld.slice(0, 1) + c + p.tld.slice(1) }))
    })
  })

  it.prop("decoding never throws, whatever the input", [
    fc.oneof(fc.anything(), fc.string({ unit: "binary", maxLength: 300 }), nearEmail)
  ], ([input]) => {
    const result = decode(input)
    assert.isTrue(Either.isLeft(result) || Either.isRight(result))
    if (typeof input !== "string") assert.isTrue(Either.isLeft(result))
  })

  it("rejects a very long input quickly", () => {
    const start = Date.now()
    rejects("a".repeat(1_000_000) + "@example.com")
    rejects("a.".repeat(500_000) + "@example.com")
    rejects("x@" + "a-".repeat(500_000) + "com")
    assert.isBelow(Date.now() - start, 1000)
  })

  describe("normalizeEmail", () => {
    it.prop("is idempotent and yields an address again", [validEmail], ([raw]) => {
      const once = normalizeEmail(decodeSync(raw))
      const again = decodeSync(once)
      assert.strictEqual(normalizeEmail(again), once)
    })

    it.prop("is case-insensitive", [validEmail, fc.array(fc.boolean(), { minLength: 1 })], ([raw, mask]) => {
      const other = flipCase(raw, mask)
      assert.strictEqual(normalizeEmail(decodeSync(other)), normalizeEmail(decodeSync(raw)))
    })

    it.prop("changes nothing but case", [validEmail], ([raw]) => {
      const n = normalizeEmail(decodeSync(raw))
      assert.strictEqual(n.length, raw.length)
      assert.strictEqual(n.toUpperCase(), raw.toUpperCase())
      assert.strictEqual(n, n.toLowerCase())
    })

    it.prop("tells apart addresses that differ other than in case", [validEmail, validEmail], ([a, b]) => {
      fc.pre(a.toLowerCase() !== b.toLowerCase())
      assert.notStrictEqual(normalizeEmail(decodeSync(a)), normalizeEmail(decodeSync(b)))
    })
  })
})

// Keep the generators honest: they must produce what they claim, or the properties above prove little.
describe("Email generators", () => {
  it.prop(
    "local parts and labels are within their limits",
    [localPart, ldhLabel(), topLabel],
    ([local, label, tld]) => {
      assert.isAtMost(local.length, 64)
      assert.isAtMost(label.length, 63)
      assert.isFalse(label.startsWith("-") || label.endsWith("-"))
      assert.match(tld, /^[A-Za-z]{2,}$/)
    }
  )
})
