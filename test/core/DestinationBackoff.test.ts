import { assert, describe, it } from "@effect/vitest"
import { DateTime, Duration } from "effect"
import * as fc from "effect/FastCheck"
import { afterFailure, DestinationBackoff, destinationDelay, rowDelay } from "../../core/shared/DestinationBackoff.ts"

const random = fc.oneof(
  fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(0, 1 - 2 ** -53, 0.5)
)
const failingForMs = fc.integer({ min: 0, max: 10 * 24 * 3600 * 1000 })
const ms = (failingFor: number, r: number) => Duration.toMillis(destinationDelay(Duration.millis(failingFor), r))
const capMs = Duration.toMillis(DestinationBackoff.cap)

describe("destinationDelay", () => {
  it.prop("the first retry comes 5-10 s after the first failure", [random], ([r]) => {
    const d = ms(0, r)
    assert.isAtLeast(d, 5_000)
    assert.isBelow(d, 10_000)
  })

  it.prop(
    "is jittered within [c/2, c), c = min(cap, max(10 s, 15% of the outage))",
    [failingForMs, random],
    ([f, r]) => {
      const ceiling = Math.min(capMs, Math.max(10_000, 0.15 * f))
      const d = ms(f, r)
      assert.isAtLeast(d, Math.floor(ceiling / 2))
      assert.isBelow(d, ceiling)
    }
  )

  it.prop(
    "never shrinks as the outage grows (for the same draw)",
    [failingForMs, failingForMs, random],
    ([a, b, r]) => {
      assert.isAtMost(ms(Math.min(a, b), r), ms(Math.max(a, b), r))
    }
  )

  it("after a 60 s outage the next attempt comes within 12 s; after days, at most an hour", () => {
    assert.isAtMost(ms(60_000, 1 - 2 ** -53), 12_000)
    assert.strictEqual(ms(3 * 24 * 3600 * 1000, 1 - 2 ** -53), capMs - 1)
  })
})

describe("afterFailure", () => {
  const t0 = DateTime.unsafeMake(0)
  it("starts the outage at the first failure and gives up after 3 days of failing", () => {
    const first = afterFailure(undefined, t0, 0.5)
    assert.deepStrictEqual(first.failingSince, t0)
    assert.isFalse(first.giveUp)
    const almost = afterFailure(t0, DateTime.unsafeMake(3 * 24 * 3600 * 1000 - 1), 0.5)
    assert.isFalse(almost.giveUp)
    assert.isTrue(afterFailure(t0, DateTime.unsafeMake(3 * 24 * 3600 * 1000), 0.5).giveUp)
  })
})

describe("rowDelay", () => {
  const attempts = fc.integer({ min: 1, max: 1_000 })
  const rowMs = (n: number, r: number) => Duration.toMillis(rowDelay(n, r))

  it.prop("is jittered within [c/2, c), c = min(cap, 10 s * 2^(attempts - 1))", [attempts, random], ([n, r]) => {
    const ceiling = Math.min(capMs, 10_000 * 2 ** Math.min(n - 1, 20))
    const d = rowMs(n, r)
    assert.isAtLeast(d, Math.floor(ceiling / 2))
    assert.isBelow(d, ceiling)
  })

  it.prop("never shrinks with more attempts (for the same draw)", [attempts, attempts, random], ([a, b, r]) => {
    assert.isAtMost(rowMs(Math.min(a, b), r), rowMs(Math.max(a, b), r))
  })
})
