import { assert, describe, it } from "@effect/vitest"
import * as fc from "effect/FastCheck"
import { jsonDepthWithin } from "../../apps/http/pipeline/JsonDepth.ts"

const depthOf = (value: unknown): number =>
  Array.isArray(value)
    ? 1 + Math.max(0, ...value.map(depthOf))
    : value !== null && typeof value === "object"
    ? 1 + Math.max(0, ...Object.values(value).map(depthOf))
    : 0

describe("jsonDepthWithin", () => {
  it.prop("agrees with the parsed value's depth, brackets in strings not counted", [
    fc.jsonValue({ maxDepth: 6 }),
    fc.integer({ min: 0, max: 8 })
  ], ([value, max]) => {
    assert.strictEqual(jsonDepthWithin(JSON.stringify(value), max), depthOf(value) <= max)
  })

  it("scans a megabyte of brackets without recursing", () => {
    assert.isFalse(jsonDepthWithin("[".repeat(1_000_000), 32))
    assert.isTrue(jsonDepthWithin(`"${"[".repeat(1_000_000)}"`, 32))
    assert.isTrue(jsonDepthWithin(`["\\"[[[[", {"a": "\\\\"}]`, 2))
  })
})
