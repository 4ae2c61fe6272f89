import { assert, describe, it } from "@effect/vitest"
import { Effect, Random } from "effect"
import * as fc from "effect/FastCheck"
import { randomId } from "../../../core/payments/Transfers.ts"

const idOf = (seed: number) => Effect.runSync(Effect.withRandom(randomId("tr_"), Random.make(seed)))

describe("randomId", () => {
  it("is the prefix and 24 characters of [0-9A-Za-z], for any seed", () => {
    fc.assert(fc.property(fc.integer(), (seed) => assert.match(idOf(seed), /^tr_[0-9A-Za-z]{24}$/)))
  })

  it("draws every character position from the whole alphabet", () => {
    // 2,000 ids: each of the 24 positions takes each of the 62 characters about 32 times; a position that
    // misses one (or the 6 trailing digits of a draw stuck at 0) shows a bias in the conversion.
    const seen = Array.from({ length: 24 }, () => new Set<string>())
    for (let seed = 0; seed < 2000; seed++) {
      const id = idOf(seed).slice(3)
      for (let i = 0; i < 24; i++) seen[i]!.add(id[i]!)
    }
    assert.deepStrictEqual(seen.map((s) => s.size), Array.from({ length: 24 }, () => 62))
  })

  it("does not repeat", () => {
    const ids = new Set(Array.from({ length: 5000 }, (_, seed) => idOf(seed)))
    assert.strictEqual(ids.size, 5000)
  })
})
