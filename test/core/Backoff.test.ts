import { assert, describe, it } from "@effect/vitest"
import { Duration } from "effect"
import * as fc from "effect/FastCheck"
import { retryDelay, RetryPolicy } from "../../core/shared/Backoff.ts"

const baseMs = Duration.toMillis(RetryPolicy.base)
const capMs = Duration.toMillis(RetryPolicy.cap)
// The documented ceiling, computed independently of the implementation.
const ceiling = (attempt: number) => Math.min(capMs, baseMs * 2 ** attempt)

const attempt = fc.oneof(fc.integer({ min: 0, max: 64 }), fc.integer({ min: 0, max: 100_000 }))
// Math.random's range, [0, 1), with its edges: 0 and the largest double below 1.
const random = fc.oneof(
  fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(0, 1 - 2 ** -53, 0.5, 1 - 1e-9)
)
const ms = (attempt: number, r: number) => Duration.toMillis(retryDelay(attempt, r))

describe("retryDelay", () => {
  it.prop("is a whole number of milliseconds in [0, min(cap, base * 2^attempt))", [attempt, random], ([a, r]) => {
    const d = ms(a, r)
    assert.isTrue(Number.isInteger(d), `${d}`)
    assert.isAtLeast(d, 0)
    assert.isBelow(d, ceiling(a))
    assert.isBelow(d, capMs)
  })

  it.prop("is full jitter: it tracks random * ceiling to within a millisecond", [attempt, random], ([a, r]) => {
    const d = ms(a, r)
    assert.isAbove(d, r * ceiling(a) - 1)
    assert.isAtMost(d, r * ceiling(a))
  })

  it.prop("never shrinks as attempts grow, for a fixed random", [attempt, attempt, random], ([a, b, r]) => {
    const [lo, hi] = a <= b ? [a, b] : [b, a]
    assert.isAtMost(ms(lo, r), ms(hi, r))
    assert.isAtMost(ms(a, r), ms(a + 1, r))
  })

  it.prop("never shrinks as random grows, for a fixed attempt", [attempt, random, random], ([a, r1, r2]) => {
    const [lo, hi] = r1 <= r2 ? [r1, r2] : [r2, r1]
    assert.isAtMost(ms(a, lo), ms(a, hi))
  })

  it.prop("reaches the top of its range", [attempt], ([a]) => {
    assert.strictEqual(ms(a, 0), 0)
    assert.strictEqual(ms(a, 1 - 2 ** -53), ceiling(a) - 1)
  })

  it("is capped from the attempt where base * 2^attempt passes the cap on", () => {
    const first = Array.from({ length: 40 }, (_, a) => a).find((a) => baseMs * 2 ** a >= capMs)!
    for (let a = first; a < RetryPolicy.maxAttempts + 5; a++) assert.strictEqual(ms(a, 1 - 2 ** -53), capMs - 1)
    assert.isBelow(ms(first - 1, 1 - 2 ** -53), capMs - 1)
  })
})
