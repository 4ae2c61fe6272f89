// What every RateLimiterStore (@effect/experimental's port) used here must do with token buckets: the
// process's memory (RateLimiter.layerStoreMemory, the SQLite default), PostgreSQL's and MariaDB's shared ones.
// Real time: PostgreSQL refills by its own clock.
import { RateLimiterStore } from "@effect/experimental/RateLimiter"
import { assert, describe, it } from "@effect/vitest"
import { type Clock, Duration, Effect, type Layer } from "effect"

const clockBehind = (clock: Clock.Clock, millis: number): Clock.Clock => ({
  ...clock,
  unsafeCurrentTimeMillis: () => clock.unsafeCurrentTimeMillis() - millis,
  currentTimeMillis: Effect.sync(() => clock.unsafeCurrentTimeMillis() - millis),
  unsafeCurrentTimeNanos: () => clock.unsafeCurrentTimeNanos() - BigInt(millis) * 1_000_000n,
  currentTimeNanos: Effect.sync(() => clock.unsafeCurrentTimeNanos() - BigInt(millis) * 1_000_000n)
})

export const rateLimiterStoreContract = (name: string, makeLayer: () => Layer.Layer<RateLimiterStore, unknown>) =>
  describe(`RateLimiterStore contract: ${name}`, () => {
    const run = <A, E>(self: Effect.Effect<A, E, RateLimiterStore>) => Effect.provide(self, makeLayer())
    const draw = (key: string, tokens = 1, limit = 3, refillRate = Duration.hours(1), allowOverflow = false) =>
      Effect.flatMap(RateLimiterStore, (store) => store.tokenBucket({ key, tokens, limit, refillRate, allowOverflow }))

    it.live("a new key starts full; draws take tokens until none is left, and a refused draw takes none", () =>
      run(Effect.gen(function*() {
        assert.strictEqual(yield* draw("a"), 2)
        assert.strictEqual(yield* draw("a"), 1)
        assert.strictEqual(yield* draw("a"), 0)
        assert.isBelow(yield* draw("a"), 0)
        assert.isBelow(yield* draw("a"), 0)
        // Another key has its own bucket.
        assert.strictEqual(yield* draw("b", 2), 1)
      })))

    it.live("with overflow allowed, a draw goes below zero", () =>
      run(Effect.gen(function*() {
        assert.strictEqual(yield* draw("o", 3, 3, Duration.hours(1), true), 0)
        assert.strictEqual(yield* draw("o", 2, 3, Duration.hours(1), true), -2)
      })))

    it.live("a token comes back per refill period", () =>
      run(Effect.gen(function*() {
        const refill = Duration.millis(300)
        for (let i = 0; i < 3; i++) yield* draw("r", 1, 3, refill)
        assert.isBelow(yield* draw("r", 1, 3, refill), 0)
        yield* Effect.sleep(Duration.millis(450))
        assert.strictEqual(yield* draw("r", 1, 3, refill), 0)
      })))

    // A draw that waited for the row's lock read its clock before the draw it waited for, and two instances'
    // clocks differ: a time before the bucket's last refill must neither refill it nor take more than asked.
    it.live("a draw that reads a time before the bucket's last refill takes exactly what it asks", () =>
      run(Effect.gen(function*() {
        const behind = yield* Effect.map(Effect.clock, (clock) => clockBehind(clock, 10_000))
        assert.strictEqual(yield* draw("t"), 2)
        assert.strictEqual(yield* Effect.withClock(draw("t"), behind), 1)
        assert.strictEqual(yield* draw("t"), 0)
      })))

    it.live("concurrent draws never hand out more tokens than the bucket holds", () =>
      run(Effect.gen(function*() {
        const results = yield* Effect.all(Array.from({ length: 20 }, () => draw("c", 1, 10)), {
          concurrency: "unbounded"
        })
        assert.strictEqual(results.filter((r) => r >= 0).length, 10)
      })))
  })
