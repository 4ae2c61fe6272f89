import { assert, describe, it } from "@effect/vitest"
import { DateTime, Duration } from "effect"
import { makeHeldClaims } from "../../core/shared/HeldClaims.ts"

const lease = Duration.seconds(60)
const at = (s: number) => DateTime.unsafeMake(s * 1_000)
const made = () => {
  const held = makeHeldClaims((n: number) => n, lease)
  held.hold([1, 2, 3], at(60))
  return held
}

describe("HeldClaims", () => {
  it("a pass's claims are its own until it releases them; then the next pass takes them", () => {
    const held = made()
    assert.deepStrictEqual(held.take(at(1), 10), [])
    held.release([1, 2, 3])
    assert.deepStrictEqual(held.take(at(1), 2).map((c) => c.item), [1, 2])
    assert.deepStrictEqual(held.take(at(1), 2).map((c) => c.item), [3])
    assert.strictEqual(held.free(), 0)
  })

  it("done claims are gone; accepted ones come back marked accepted", () => {
    const held = made()
    held.done([1])
    held.accepted([2])
    held.release([1, 2, 3])
    assert.deepStrictEqual(held.take(at(1), 10), [{ item: 2, accepted: true }, { item: 3, accepted: false }])
  })

  it("a claim with less than half its lease left is dropped, by take and by expire", () => {
    const held = made()
    held.release([1, 2, 3])
    assert.strictEqual(held.take(at(30), 1).length, 1)
    held.expire(at(31))
    assert.strictEqual(held.size(), 1, "only the taken one, still busy, is kept")
    assert.deepStrictEqual(held.take(at(31), 10), [])
  })
})
