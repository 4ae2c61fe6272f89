import { assert, describe, it } from "@effect/vitest"
import { Either, Schema } from "effect"
import * as fc from "effect/FastCheck"
import { DefaultFeed, FeedName } from "../../core/subscriptions/Feed.ts"
import { stringFrom } from "./arbitraries.ts"

const decode = Schema.decodeUnknownEither(FeedName)
const rejects = (input: unknown) => assert.isTrue(Either.isLeft(decode(input)), `accepted ${JSON.stringify(input)}`)

const head = "abcdefghijklmnopqrstuvwxyz0123456789"
const tail = head + "-"
const feedName = fc
  .tuple(stringFrom(head, { minLength: 1, maxLength: 1 }), stringFrom(tail, { maxLength: 63 }))
  .map(([h, t]) => h + t)

describe("FeedName", () => {
  it.prop(
    "the schema's own values are 1-64 lowercase letters, digits and hyphens, not starting with one",
    [FeedName],
    ([name]) => {
      assert.match(name, /^[a-z0-9][a-z0-9-]*$/)
      assert.isAtLeast(name.length, 1)
      assert.isAtMost(name.length, 64)
    }
  )

  it.prop("accepts every name of that shape, unchanged", [feedName], ([name]) => {
    assert.deepStrictEqual(decode(name), Either.right(FeedName.make(name)))
  })

  it.prop("rejects 65 characters and more, while 64 pass", [
    stringFrom(head, { minLength: 1, maxLength: 1 }),
    stringFrom(tail, { minLength: 64, maxLength: 120 })
  ], ([h, more]) => {
    rejects(h + more)
    assert.isTrue(Either.isRight(decode(h + more.slice(0, 63))))
  })

  it.prop("rejects a leading hyphen, an uppercase letter, or any other character", [
    feedName,
    fc.nat(),
    fc.string({ unit: "binary", minLength: 1, maxLength: 1 }).filter((c) => !tail.includes(c))
  ], ([name, i, c]) => {
    rejects("-" + name.slice(1))
    rejects(name.toUpperCase() === name ? name + "A" : name.toUpperCase())
    const at = i % (name.length + 1)
    rejects(name.slice(0, at) + c + name.slice(at))
    rejects(name + "\n")
  })

  it.prop("decides exactly like the documented pattern on arbitrary strings", [
    fc.oneof(fc.string({ maxLength: 70 }), stringFrom(tail + "A_ ", { maxLength: 70 }))
  ], ([s]) => {
    const ok = s.length >= 1 && s.length <= 64 && /^[a-z0-9][a-z0-9-]*$/.test(s)
    assert.strictEqual(Either.isRight(decode(s)), ok)
  })

  it("rejects the empty name and accepts the default feed", () => {
    rejects("")
    assert.isTrue(Either.isRight(decode(DefaultFeed)))
  })
})
