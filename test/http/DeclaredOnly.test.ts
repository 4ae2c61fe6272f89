import { assert, describe, it } from "@effect/vitest"
import { Either, Option, ParseResult, Schema, type SchemaAST } from "effect"
import * as fc from "effect/FastCheck"
import { Api } from "../../apps/http/Api.ts"
import { checkedByNames, declaredOnlyDecoder } from "../../apps/http/pipeline/DeclaredOnly.ts"
import { fromParseError } from "../../apps/http/pipeline/DecodeErrors.ts"
import { SubscribePayload } from "../../apps/http/subscriptions/SubscriptionsApi.ts"
import { CreateTransferPayload } from "../../apps/http/transfers/TransfersApi.ts"
import { mutated, validSubscription, validTransfer } from "../support/Mutations.ts"

// The pipeline decodes payloads and queries with apps/http/pipeline/DeclaredOnly.ts: a lenient decode and a check
// of the input's names, the strict decode for an input that fails either. Here it answers as the strict decode
// (`onExcessProperty: "error"`) on every payload and query of the API: the same value, the same issues, the same
// error body, for valid inputs, inputs with members added anywhere, and mutated ones.

const schemas = Object.values(Api.groups).flatMap((group) =>
  Object.values(group.endpoints).flatMap((endpoint) =>
    [["payload", endpoint.payloadSchema], ["query", endpoint.urlParamsSchema]].flatMap(([kind, schema]) =>
      Option.isSome(schema as Option.Option<Schema.Schema.Any>)
        ? [{
          name: `${group.identifier}.${endpoint.name} ${kind as string}`,
          schema: (schema as Option.Some<Schema.Schema<any, any, never>>).value
        }]
        : []
    )
  )
)

const names = ["x", "reference", "sender", "email", "name", "feed", "token", "amount", "limit", "url", "constructor"]

// Every object in a JSON tree, by its path (the root included).
const objectPaths = (value: unknown, prefix: ReadonlyArray<string> = []): Array<ReadonlyArray<string>> =>
  value !== null && typeof value === "object" && !Array.isArray(value)
    ? [prefix, ...Object.entries(value).flatMap(([k, v]) => objectPaths(v, [...prefix, k]))]
    : []

const withMember = (value: unknown, path: ReadonlyArray<string>, name: string, member: unknown): unknown => {
  const copy: Record<string, unknown> = { ...(value as Record<string, unknown>) }
  if (path.length === 0) copy[name] = member
  else copy[path[0]!] = withMember(copy[path[0]!], path.slice(1), name, member)
  return copy
}

// A body with up to two members added, each to an object of its tree, as JSON.parse would hand it over.
const extended = (body: fc.Arbitrary<unknown>) =>
  fc.tuple(
    body,
    fc.array(fc.tuple(fc.nat(), fc.constantFrom(...names), fc.oneof(fc.string(), fc.constant({}), fc.integer())), {
      maxLength: 2
    })
  ).map(([value, adds]) => {
    let out = value
    for (const [at, name, member] of adds) {
      const all = objectPaths(out)
      if (all.length === 0) break
      out = withMember(out, all[at % all.length]!, name, member)
    }
    return JSON.parse(JSON.stringify(out ?? null)) as unknown
  })

// Every member name a schema declares, at any depth.
const declaredNames = (ast: SchemaAST.AST, seen = new Set<SchemaAST.AST>()): Array<string> => {
  if (seen.has(ast)) return []
  seen.add(ast)
  const below = [
    ..."from" in ast ? [ast.from as SchemaAST.AST] : [],
    ..."to" in ast ? [ast.to as SchemaAST.AST] : [],
    ..."types" in ast ? ast.types as ReadonlyArray<SchemaAST.AST> : [],
    ..."typeParameters" in ast ? ast.typeParameters : [],
    ..."propertySignatures" in ast ? ast.propertySignatures.map((ps) => ps.type) : []
  ]
  const own = "propertySignatures" in ast ? ast.propertySignatures.map((ps) => String(ps.name)) : []
  return [...own, ...below.flatMap((a) => declaredNames(a, seen))]
}

const values = [
  "ann@example.com",
  "Ann",
  "default",
  "12.34",
  "https://example.com/hooks",
  "USD",
  "duplicate",
  "One-Click",
  "transfer.approved",
  "10",
  "0",
  "tr_0123456789abcdefghijklmn",
  "we_0123456789abcdefghijklmn",
  "",
  " ",
  "x"
]
// Objects of a schema's own member names, with values that some of its members take (often a valid input).
const shapedLike = (schema: Schema.Schema.Any): fc.Arbitrary<unknown> => {
  const own = [...new Set(declaredNames(schema.ast))]
  const value = fc.oneof(fc.constantFrom(...values), fc.string(), fc.integer(), fc.constant(null))
  return own.length === 0 ? fc.constant({}) : fc.dictionary(fc.constantFrom(...own), value, { maxKeys: own.length })
}

const agree = (schema: Schema.Schema<any, any, never>) => {
  const strict = Schema.decodeUnknownEither(schema, { onExcessProperty: "error" })
  const decode = declaredOnlyDecoder(schema)
  return (input: unknown) => {
    const expected = strict(input)
    const actual = decode(input)
    if (Either.isRight(expected)) {
      assert.isTrue(Either.isRight(actual), `refused: ${JSON.stringify(input)}`)
      assert.deepStrictEqual((actual as Either.Right<unknown, unknown>).right, expected.right)
      const encode = Schema.encodeUnknownSync(schema)
      assert.deepStrictEqual(encode((actual as Either.Right<unknown, unknown>).right), encode(expected.right))
    } else {
      assert.isTrue(Either.isLeft(actual), `accepted: ${JSON.stringify(input)}`)
      const left = (actual as Either.Left<ParseResult.ParseError, unknown>).left
      assert.deepStrictEqual(
        ParseResult.ArrayFormatter.formatIssueSync(left.issue),
        ParseResult.ArrayFormatter.formatIssueSync(expected.left.issue)
      )
      assert.deepStrictEqual(fromParseError(left), fromParseError(expected.left))
    }
  }
}

describe("a payload or query decoded with only its declared members", () => {
  it("the transfer, the signup and the API's structs are checked by names, not decoded twice", () => {
    assert.isTrue(checkedByNames(CreateTransferPayload))
    assert.isTrue(checkedByNames(SubscribePayload))
    assert.isAbove(schemas.filter((s) => checkedByNames(s.schema)).length, 10)
  })

  it.prop(
    "a transfer, with members added or mutated, decodes as the strict decode",
    [
      extended(mutated(validTransfer).map((m) => m.body))
    ],
    ([input]) => agree(CreateTransferPayload)(input),
    { fastCheck: { numRuns: 1500 } }
  )

  it.prop(
    "a signup, with members added or mutated, decodes as the strict decode",
    [
      extended(mutated(validSubscription).map((m) => m.body))
    ],
    ([input]) => agree(SubscribePayload)(input),
    { fastCheck: { numRuns: 1000 } }
  )

  it("every payload and query of the API decodes as the strict decode", () => {
    for (const { name, schema } of schemas) {
      const check = agree(schema)
      fc.assert(
        fc.property(extended(fc.oneof(shapedLike(schema), fc.anything({ maxDepth: 2 }))), (input) => {
          check(input)
        }),
        { numRuns: 300, examples: [[{}], [null], [[]], ["text"]] }
      )
      assert.ok(name)
    }
  })

  it("a member named __proto__ is refused as the strict decode refuses it", () => {
    const check = agree(CreateTransferPayload)
    const transfer = JSON.stringify(
      validTransfer({ pan: "4242424242424242", cvc: "123", ucaf: "jJJLtQa+Iws8AREAEbjsA1MAAAA", probe: "p" })
        .payment_transfer
    )
    assert.isTrue(
      Either.isRight(declaredOnlyDecoder(CreateTransferPayload)(JSON.parse(`{"payment_transfer":${transfer}}`)))
    )
    for (
      const text of [
        `{"__proto__":{"x":1},"payment_transfer":${transfer}}`,
        `{"payment_transfer":{"__proto__":1,${transfer.slice(1)}}`
      ]
    ) {
      assert.isTrue(Either.isLeft(declaredOnlyDecoder(CreateTransferPayload)(JSON.parse(text))))
      check(JSON.parse(text))
    }
  })
})
