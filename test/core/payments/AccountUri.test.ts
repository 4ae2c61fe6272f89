import { assert, describe, it } from "@effect/vitest"
import { Cause, Either, ParseResult, Redacted, Schema } from "effect"
import * as fc from "effect/FastCheck"
import { inspect } from "node:util"
import { AuthenticationValue, parseAccountUri, SenderAccountUri } from "../../../core/payments/Card.ts"
import { alnum, charFrom, stringFrom } from "../arbitraries.ts"
import {
  type AccountParts,
  accountParts,
  cvcParam,
  digitString,
  expParam,
  renderAccount,
  renderUri,
  whitespace
} from "./arbitraries.ts"

const decodeUri = Schema.decodeUnknownEither(SenderAccountUri)
const decodeAuth = Schema.decodeUnknownEither(AuthenticationValue)

// Every way a decoding failure can be turned into text on its way to a log or an error body.
const renderings = (error: ParseResult.ParseError): ReadonlyArray<string> => [
  ParseResult.TreeFormatter.formatErrorSync(error),
  JSON.stringify(ParseResult.ArrayFormatter.formatErrorSync(error)),
  ...ParseResult.ArrayFormatter.formatErrorSync(error).map((issue) => issue.message),
  error.message,
  String(error),
  JSON.stringify(error),
  Cause.pretty(Cause.fail(error)),
  inspect(error, { depth: 10 })
]

const withoutStack = (rendered: string) => rendered.replace(/^\s*at .*$/gm, "")

// Card data is digits: a message that repeats any run of three digits from the input may be leaking it.
// Stack-trace lines ("    at f (file.ts:439:12)") are dropped first: their line numbers are not input.
const assertNoCardData = (rendered: string, secrets: ReadonlyArray<string>, input: string) => {
  const text = withoutStack(rendered)
  for (const secret of secrets) {
    if (secret.length >= 3) assert.notInclude(text, secret, `message for ${JSON.stringify(input)} leaks ${secret}`)
  }
  assert.notMatch(text, /[0-9]{3,}/, `message for ${JSON.stringify(input)}: ${text}`)
}

interface Invalid {
  readonly kind: string
  readonly uri: string
  // The card number and CVC (or what stands in for them) written into the input.
  readonly secrets: ReadonlyArray<string>
}

const orderings = <A>(items: ReadonlyArray<A>): fc.Arbitrary<ReadonlyArray<A>> =>
  fc.shuffledSubarray([...items], { minLength: items.length, maxLength: items.length })

const invalidCase = <X>(kind: string, extra: fc.Arbitrary<X>, make: (p: AccountParts, x: X) => string) =>
  fc.tuple(accountParts, extra).map(([p, x]): Invalid => ({ kind, uri: make(p, x), secrets: [p.pan, p.cvc] }))

const withPan = (kind: string, pan: fc.Arbitrary<string>, make: (p: AccountParts, pan: string) => string) =>
  fc.tuple(accountParts, pan).map(([p, badPan]): Invalid => ({
    kind,
    uri: make(p, badPan),
    secrets: [p.pan, p.cvc, badPan]
  }))

const withCvc = (kind: string, cvc: fc.Arbitrary<string>) =>
  fc.tuple(accountParts, cvc).map(([p, badCvc]): Invalid => ({
    kind,
    uri: renderAccount({ ...p, cvc: badCvc }),
    secrets: [p.pan, badCvc]
  }))

// What the parser should accept, as one regular expression: the two parameters once each, in either order.
const wellFormed =
  /^pan:[0-9]{12,19}(?:;exp=[0-9]{4}-(?:0[1-9]|1[0-2]);cvc=[0-9]{3,4}|;cvc=[0-9]{3,4};exp=[0-9]{4}-(?:0[1-9]|1[0-2]))$/

const unit = fc.constant(undefined)
const insertAt = (s: string, i: number, c: string) => s.slice(0, i % (s.length + 1)) + c + s.slice(i % (s.length + 1))

const extraParameter = fc.oneof(
  fc.constantFrom(
    "",
    "exp",
    "cvc",
    "cvc2=123",
    "EXP=2030-01",
    "CVC=123",
    "name=x",
    "exp2=2030-01",
    " exp=2030-01",
    "cvc =123",
    "=",
    "=123",
    "pan:4242424242424242"
  ),
  fc.tuple(stringFrom(alnum, { maxLength: 6 }), stringFrom(alnum + "-=", { maxLength: 8 })).map(([k, v]) => `${k}=${v}`)
)

const invalidUri: fc.Arbitrary<Invalid> = fc.oneof(
  // Dropped parameters.
  invalidCase("exp dropped", unit, (p) => renderUri(p.pan, [cvcParam(p)])),
  invalidCase("cvc dropped", unit, (p) => renderUri(p.pan, [expParam(p)])),
  invalidCase("both dropped", fc.constantFrom("", ";"), (p, tail) => `pan:${p.pan}${tail}`),
  // Duplicated parameters, the same or another value.
  invalidCase(
    "exp twice",
    fc.tuple(fc.integer({ min: 1, max: 12 }), fc.boolean()),
    (p, [m, same]) => {
      const other = same ? expParam(p) : `exp=${p.year}-${String(m).padStart(2, "0")}`
      return renderUri(p.pan, p.expFirst ? [expParam(p), cvcParam(p), other] : [expParam(p), other, cvcParam(p)])
    }
  ),
  invalidCase("cvc twice", fc.tuple(digitString(3, 4), fc.boolean()), (p, [c, same]) => {
    const other = same ? cvcParam(p) : `cvc=${c}`
    return renderUri(p.pan, p.expFirst ? [cvcParam(p), expParam(p), other] : [other, cvcParam(p), expParam(p)])
  }),
  fc.tuple(accountParts, fc.nat(), extraParameter).chain(([p, i, extra]) =>
    orderings([expParam(p), cvcParam(p)]).map((params): Invalid => {
      const all = [...params]
      all.splice(i % 3, 0, extra)
      return { kind: "extra parameter", uri: renderUri(p.pan, all), secrets: [p.pan, p.cvc] }
    })
  ),
  invalidCase(
    "trailing or leading semicolon",
    fc.boolean(),
    (p, trailing) => trailing ? renderAccount(p) + ";" : renderAccount(p).replace("pan:", "pan:;")
  ),
  // Bad expiry.
  invalidCase(
    "month 00 or 13-99",
    fc.oneof(fc.constantFrom("00", "13"), fc.integer({ min: 13, max: 99 }).map(String)),
    (
      p,
      month
    ) => renderAccount({ ...p, month })
  ),
  invalidCase(
    "month not 2 digits",
    fc.constantFrom("1", "9", "001", "012", "", "1a", " 1", "+1", "-1"),
    (p, month) => renderAccount({ ...p, month })
  ),
  invalidCase(
    "year not 4 digits",
    fc.oneof(digitString(0, 3), digitString(5, 6)),
    (p, year) => renderAccount({ ...p, year })
  ),
  invalidCase(
    "exp in another format",
    fc.constantFrom("2030/01", "203001", "2030-01-01", "01-2030", "01/30", "2030-1", "2030_01", "２０３０-01"),
    (p, exp) => renderUri(p.pan, p.expFirst ? [`exp=${exp}`, cvcParam(p)] : [cvcParam(p), `exp=${exp}`])
  ),
  // Bad CVC.
  withCvc("cvc of 2 or 5 digits", fc.oneof(digitString(2), digitString(5))),
  withCvc("cvc of 0-1 or 6-8 digits", fc.oneof(digitString(0, 1), digitString(6, 8))),
  withCvc("cvc not digits", fc.constantFrom("12a", "abc", "1 23", "12.3", "-123", "１２３", "٣٤٥", "0x12")),
  // Bad PAN.
  withPan("pan of 11 digits", digitString(11), (p, pan) => renderAccount({ ...p, pan })),
  withPan("pan of 20 digits", digitString(20), (p, pan) => renderAccount({ ...p, pan })),
  withPan(
    "pan of 0-10 or 21-40 digits",
    fc.oneof(digitString(0, 10), digitString(21, 40)),
    (p, pan) => renderAccount({ ...p, pan })
  ),
  withPan(
    "pan with a separator",
    fc.tuple(digitString(12, 19), fc.nat(), fc.constantFrom(" ", "-", ".", "/", "a", "٣")).map(([d, i, c]) =>
      insertAt(d, 1 + (i % (d.length - 1)), c)
    ),
    (p, pan) => renderAccount({ ...p, pan })
  ),
  // Bad prefix.
  invalidCase("missing prefix", unit, (p) => renderAccount(p).slice(4)),
  invalidCase(
    "mangled prefix",
    fc.constantFrom("pan", "pan=", "card:", "pan :", "pan::", ":", "p:", "pann:"),
    (p, prefix) => prefix + renderAccount(p).slice(4)
  ),
  invalidCase(
    "upper-case prefix",
    fc.constantFrom("PAN:", "Pan:", "pAN:", "paN:"),
    (p, prefix) => prefix + renderAccount(p).slice(4)
  ),
  invalidCase(
    "upper-case keys",
    fc.constantFrom("EXP", "Exp", "CVC", "Cvc"),
    (p, key) => renderAccount(p).replace(key.toLowerCase() + "=", key + "=")
  ),
  // Whitespace anywhere.
  invalidCase("whitespace", fc.tuple(fc.nat(), whitespace), (p, [i, w]) => insertAt(renderAccount(p), i, w)),
  // Other separators.
  invalidCase(
    "other separators",
    fc.constantFrom(["&", "="], [",", "="], [";", ":"], ["; ", "="]),
    (p, [sep, eq]) => renderAccount(p).replaceAll(";", sep).replaceAll("=", eq)
  ),
  // Far too long: the length check comes first.
  invalidCase(
    "longer than 128 characters",
    fc.integer({ min: 100, max: 2000 }),
    (p, n) => renderAccount(p) + ";x=" + "9".repeat(n)
  )
)

describe("parseAccountUri", () => {
  it.prop("parses generated URIs, in both parameter orders, to their parts", [accountParts], ([p]) => {
    for (const uri of [renderAccount(p), renderAccount({ ...p, expFirst: !p.expFirst })]) {
      const result = parseAccountUri(uri)
      if (Either.isLeft(result)) assert.fail(`rejected ${uri}: ${result.left}`)
      const account = result.right
      assert.strictEqual(Redacted.value(account.pan), p.pan)
      assert.strictEqual(Redacted.value(account.cvc), p.cvc)
      assert.deepStrictEqual(account.expiry, { year: Number(p.year), month: Number(p.month) })
    }
  })

  it("parses examples", () => {
    const result = parseAccountUri("pan:4242424242424242;exp=2030-12;cvc=123")
    assert.isTrue(Either.isRight(result))
    if (Either.isRight(result)) {
      assert.strictEqual(Redacted.value(result.right.pan), "4242424242424242")
      assert.deepStrictEqual(result.right.expiry, { year: 2030, month: 12 })
      assert.strictEqual(Redacted.value(result.right.cvc), "123")
    }
    for (
      const ok of [
        "pan:378282246310005;cvc=1234;exp=2031-01",
        "pan:123456789012;exp=0000-01;cvc=000",
        "pan:1234567890123456789;exp=9999-12;cvc=9999"
      ]
    ) assert.isTrue(Either.isRight(parseAccountUri(ok)), ok)
  })

  it.prop("rejects every mutated URI, and no message repeats the card number or the CVC", [invalidUri], ([bad]) => {
    const result = parseAccountUri(bad.uri)
    if (Either.isRight(result)) assert.fail(`${bad.kind}: accepted ${JSON.stringify(bad.uri)}`)
    assert.isAbove(result.left.length, 0)
    assertNoCardData(result.left, bad.secrets, bad.uri)
  }, { fastCheck: { numRuns: 2000 } })

  it.prop("never throws on arbitrary strings, and accepts only well-formed URIs", [
    fc.oneof(
      fc.string(),
      fc.fullUnicodeString(),
      fc.string({ unit: "binary", maxLength: 200 }),
      stringFrom("pan:exvc=;0123456789-", { maxLength: 60 }),
      fc.tuple(fc.constantFrom("pan:", "pan:4242424242424242;"), stringFrom("exvcp=;0123456789-: ", { maxLength: 40 }))
        .map(([a, b]) => a + b),
      invalidUri.map((x) => x.uri),
      accountParts.map(renderAccount)
    )
  ], ([input]) => {
    const result = parseAccountUri(input)
    assert.strictEqual(Either.isRight(result), wellFormed.test(input), JSON.stringify(input))
    if (Either.isLeft(result)) {
      assertNoCardData(result.left, [], input)
      // Nothing of the input is echoed: no 3-digit runs, and no longer piece of it at all.
      for (const piece of input.match(/[^;=:]{12,}/g) ?? []) assert.notInclude(result.left, piece)
    }
  }, { fastCheck: { numRuns: 1000 } })

  it("rejects huge inputs quickly", () => {
    const start = Date.now()
    assert.isTrue(Either.isLeft(parseAccountUri("pan:" + "4".repeat(1_000_000))))
    assert.isTrue(Either.isLeft(parseAccountUri("pan:4242424242424242" + ";exp=2030-01".repeat(100_000))))
    assert.isBelow(Date.now() - start, 1000)
  })
})

describe("SenderAccountUri", () => {
  it.prop("decodes generated URIs in both orders; the decoded value does not show the PAN or CVC", [accountParts], (
    [p]
  ) => {
    for (const uri of [renderAccount(p), renderAccount({ ...p, expFirst: !p.expFirst })]) {
      const result = decodeUri(uri)
      if (Either.isLeft(result)) assert.fail(ParseResult.TreeFormatter.formatErrorSync(result.left))
      const account = result.right
      assert.strictEqual(Redacted.value(account.pan), p.pan)
      assert.strictEqual(Redacted.value(account.cvc), p.cvc)
      assert.deepStrictEqual(account.expiry, { year: Number(p.year), month: Number(p.month) })

      assert.notInclude(String(account.pan), p.pan)
      assert.notInclude(`${account.cvc}`, p.cvc)
      const json = JSON.stringify(account)
      assert.notInclude(json, p.pan)
      const parsedJson = JSON.parse(json) as { pan: unknown; cvc: unknown; expiry: unknown }
      assert.notStrictEqual(parsedJson.pan, p.pan)
      assert.notStrictEqual(parsedJson.cvc, p.cvc)
      assert.notInclude(JSON.stringify(parsedJson.cvc), p.cvc)
      assert.deepStrictEqual(parsedJson.expiry, account.expiry)
      const shown = inspect(account, { depth: 10 })
      assert.notInclude(shown, p.pan)
      assert.notInclude(shown, `'${p.cvc}'`)
      assert.notInclude(String(Redacted.make(p.pan)), p.pan)
    }
  })

  it.prop("rejects every mutated URI; no formatted error contains the PAN or the CVC", [invalidUri], ([bad]) => {
    const result = decodeUri(bad.uri)
    if (Either.isRight(result)) assert.fail(`${bad.kind}: accepted ${JSON.stringify(bad.uri)}`)
    for (const text of renderings(result.left)) assertNoCardData(text, bad.secrets, bad.uri)
  }, { fastCheck: { numRuns: 1000 } })

  // Effect's transformations keep their input in the issue tree (`actual`), where anything that serialises the
  // tree (util.inspect, a structured logger) would print it: the schema is a declaration that keeps a placeholder.
  it.prop("the raw issue tree does not hold the PAN or the CVC", [invalidUri], ([bad]) => {
    const result = decodeUri(bad.uri)
    if (Either.isRight(result)) assert.fail(`${bad.kind}: accepted`)
    const tree = inspect(result.left.issue, { depth: 20 })
    const json = JSON.stringify(result.left.issue)
    for (const secret of bad.secrets.filter((s) => s.length >= 3)) {
      assert.notInclude(tree, secret)
      assert.notInclude(json, secret)
    }
    assert.notInclude(tree, bad.uri)
  }, { fastCheck: { numRuns: 500 } })

  it("the raw issue tree of a PAN sent as a number does not hold it", () => {
    const result = decodeUri(4242424242424242)
    assert.isTrue(Either.isLeft(result))
    if (Either.isLeft(result)) assert.notInclude(inspect(result.left.issue, { depth: 20 }), "4242424242424242")
  })

  it.prop("rejects non-strings without showing them", [
    fc.oneof(fc.anything().filter((x) => typeof x !== "string"), accountParts.map((p) => [renderAccount(p)]))
  ], ([input]) => {
    const result = decodeUri(input)
    assert.isTrue(Either.isLeft(result))
  })

  it.prop("encoding a decoded URI gives the URI back in canonical order (years 1000-9999)", [
    accountParts.filter((p) => p.year >= "1000")
  ], ([p]) => {
    const decoded = Schema.decodeUnknownSync(SenderAccountUri)(renderAccount(p))
    assert.strictEqual(Schema.encodeSync(SenderAccountUri)(decoded), renderAccount({ ...p, expFirst: true }))
  })

  // Regression test (found by the property tests).
  it("encoding pads years below 1000 to 4 digits", () => {
    const uri = "pan:123456789012;exp=0999-01;cvc=123"
    const decoded = Schema.decodeUnknownSync(SenderAccountUri)(uri)
    assert.strictEqual(Schema.encodeSync(SenderAccountUri)(decoded), uri)
  })
})

describe("AuthenticationValue", () => {
  const base64Chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
  const base64Of = (minLength: number, maxLength: number) =>
    fc.uint8Array({ minLength, maxLength }).map((bytes) => Buffer.from(bytes).toString("base64"))

  const rejectsQuietly = (input: unknown, secret: string) => {
    const result = decodeAuth(input)
    if (Either.isRight(result)) assert.fail(`accepted ${JSON.stringify(input)}`)
    for (const text of renderings(result.left).map(withoutStack)) {
      if (secret.length >= 4) assert.notInclude(text, secret, `leaks ${secret}`)
      assert.notInclude(text, "ucaf:" + secret.slice(0, 4))
    }
  }

  it.prop("ucaf: followed by the base64 of 3 to 150 bytes decodes to the base64 part", [base64Of(3, 150)], ([b64]) => {
    const result = decodeAuth("ucaf:" + b64)
    if (Either.isLeft(result)) assert.fail(`${b64}: ${ParseResult.TreeFormatter.formatErrorSync(result.left)}`)
    assert.strictEqual(Redacted.value(result.right), b64)
    assert.notInclude(String(result.right), b64)
    assert.notInclude(JSON.stringify({ v: result.right }), b64)
    assert.strictEqual(Schema.encodeSync(AuthenticationValue)(result.right), "ucaf:" + b64)
  })

  it("decodes a typical 20-byte CAVV", () => {
    const b64 = Buffer.alloc(20, 7).toString("base64")
    const result = decodeAuth("ucaf:" + b64)
    assert.isTrue(Either.isRight(result))
    if (Either.isRight(result)) assert.strictEqual(Redacted.value(result.right), b64)
  })

  // Regression test (found by the property tests).
  it("ucaf: followed by the base64 of 1 or 2 bytes decodes", () => {
    for (const b64 of ["AQ==", "AQI="]) assert.isTrue(Either.isRight(decodeAuth("ucaf:" + b64)), b64)
  })

  it.prop("rejects a missing or altered prefix", [
    base64Of(3, 150),
    fc.constantFrom("", "UCAF:", "Ucaf:", "ucaf", "ucaf::", " ucaf:", "ucaf: ", "cavv:", "ucaf=", "3ds:", "ucaf:ucaf:")
  ], ([b64, prefix]) => {
    rejectsQuietly(prefix + b64, b64)
  })

  it.prop("rejects a character outside base64 anywhere in the value", [
    base64Of(3, 150),
    fc.nat(),
    fc.oneof(charFrom("-_.!@#$%^&*()[]{}~,;:\"'\\ \t\n\r"), fc.fullUnicodeString({ minLength: 1, maxLength: 1 }))
  ], ([b64, i, c]) => {
    fc.pre(!base64Chars.includes(c) && c !== "=")
    const at = i % b64.length
    rejectsQuietly("ucaf:" + b64.slice(0, at) + c + b64.slice(at + 1), b64)
    rejectsQuietly("ucaf:" + b64 + c, b64)
    rejectsQuietly("ucaf:" + c + b64, b64)
  })

  it.prop("rejects base64url (- and _)", [base64Of(3, 150)], ([b64]) => {
    fc.pre(/[+/]/.test(b64))
    rejectsQuietly("ucaf:" + b64.replaceAll("+", "-").replaceAll("/", "_"), b64)
  })

  it.prop("rejects a length of 4n+1 characters, characters after the padding, and extra padding", [
    base64Of(3, 150),
    fc.integer({ min: 1, max: 3 })
  ], (
    [b64, k]
  ) => {
    const bare = b64.replace(/=+$/, "")
    rejectsQuietly("ucaf:" + bare.slice(0, bare.length - ((bare.length - 1) % 4)), b64) // 4n+1 characters
    rejectsQuietly("ucaf:" + b64 + "=".repeat(k), b64) // extra padding
    if (bare !== b64) rejectsQuietly("ucaf:" + b64 + "A".repeat(k), b64) // characters after the padding
  })

  // Real senders (3-D Secure servers, the interface's own example) leave the padding out.
  it.prop("accepts base64 without its padding, as the padded value", [base64Of(1, 150)], ([b64]) => {
    const result = decodeAuth("ucaf:" + b64.replace(/=+$/, ""))
    if (Either.isLeft(result)) assert.fail(`${b64}: ${ParseResult.TreeFormatter.formatErrorSync(result.left)}`)
    assert.strictEqual(Redacted.value(result.right), b64)
  })

  it("the raw issue tree does not hold the value", () => {
    const result = decodeAuth("ucaf:jJJLtQa+Iws8AREAEbjsA1MAAAA!")
    assert.isTrue(Either.isLeft(result))
    if (Either.isLeft(result)) assert.notInclude(inspect(result.left.issue, { depth: 20 }), "jJJLtQa")
  })

  it("rejects bad padding examples", () => {
    for (
      const body of ["AAAA=", "AAAAA", "AAAAAA=", "AAAAA===", "AAA==A", "AA=A", "=AAA", "AAAA====", "====", "", "A"]
    ) {
      const result = decodeAuth("ucaf:" + body)
      assert.isTrue(Either.isLeft(result), body)
    }
  })

  it.prop("rejects more than 200 base64 characters (over 150 bytes)", [base64Of(151, 400)], ([b64]) => {
    rejectsQuietly("ucaf:" + b64, b64)
  })

  it.prop("rejects non-strings", [fc.anything().filter((x) => typeof x !== "string")], ([x]) => {
    assert.isTrue(Either.isLeft(decodeAuth(x)))
  })

  it.prop("never throws on arbitrary strings", [
    fc.oneof(fc.string(), fc.fullUnicodeString(), base64Of(0, 200).map((b) => "ucaf:" + b))
  ], ([s]) => {
    const result = decodeAuth(s)
    if (Either.isLeft(result)) {
      for (const text of renderings(result.left).map(withoutStack)) if (s.trim().length > 9) assert.notInclude(text, s)
    } else {
      assert.match(s, /^ucaf:[A-Za-z0-9+/]+={0,2}$/)
    }
  })
})

// Keep the generators honest: they must produce what they claim, or the properties above prove little.
describe("sender_account_uri generators", () => {
  it("produce every kind of invalid URI", () => {
    const kinds = new Set(fc.sample(invalidUri, { numRuns: 5000, seed: 1 }).map((x) => x.kind))
    assert.strictEqual(kinds.size, 25, [...kinds].join(", "))
  })

  it.prop("valid parts render to well-formed URIs", [accountParts], ([p]) => {
    assert.match(renderAccount(p), wellFormed)
    assert.match(p.pan, /^[0-9]{12,19}$/)
    assert.match(p.cvc, /^[0-9]{3,4}$/)
  })

  it.prop("invalid URIs are not well-formed", [invalidUri], ([bad]) => {
    assert.notMatch(bad.uri, wellFormed, bad.kind)
  })
})
