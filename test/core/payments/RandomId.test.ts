import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Random } from "effect"
import * as fc from "effect/FastCheck"
import { randomId } from "../../../core/payments/Transfers.ts"
import { timeOrderedId } from "../../../core/shared/RandomId.ts"

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

describe("timeOrderedId", () => {
  const at = (millis: number, seed: number) =>
    Effect.runSync(
      Effect.withRandom(timeOrderedId("evt_"), Random.make(seed)).pipe(
        // Only the milliseconds are read.
        Effect.withClock({
          ...Clock.make(),
          unsafeCurrentTimeMillis: () => millis,
          currentTimeMillis: Effect.succeed(millis)
        })
      )
    )

  it("has randomId's shape, and sorts by its time under a binary and a case-blind comparison", () => {
    const now = Date.UTC(2026, 10, 28)
    fc.assert(fc.property(
      fc.integer({ min: 0, max: 115 * 365 * 86_400_000 }),
      fc.integer({ min: 0, max: 115 * 365 * 86_400_000 }),
      fc.integer(),
      (a, b, seed) => {
        const [x, y] = [at(now + a, seed), at(now + b, seed + 1)]
        assert.match(x, /^evt_[0-9A-Za-z]{24}$/)
        // Its time holds no digit: no run of 12 digits (a card number's, to the card-data checks) starts there.
        assert.match(x, /^evt_[a-z]{9}/)
        if (a < b) {
          assert.isTrue(x < y)
          assert.isTrue(x.toLowerCase() < y.toLowerCase())
        }
      }
    ))
  })

  it("spells the clock's start and the year 2141 in nine letters, in order", () => {
    assert.match(at(0, 1), /^evt_aaaaaaaaa/)
    const late = Date.UTC(2141, 11, 31)
    assert.match(at(late, 1), /^evt_[a-z]{9}[0-9A-Za-z]{15}$/)
    assert.isTrue(at(late - 1, 1) < at(late, 1))
  })

  it("does not repeat within one millisecond", () => {
    const ids = new Set(Array.from({ length: 5000 }, (_, seed) => at(0, seed)))
    assert.strictEqual(ids.size, 5000)
  })
})
