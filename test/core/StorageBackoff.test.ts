import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Fiber, Option, Random, TestClock } from "effect"
import { makeStorageBackoff, StorageBackoffCap, storageDelay } from "../../core/shared/StorageBackoff.ts"

describe("storageDelay", () => {
  it("waits at least 100 ms, grows with the failures, and never past the cap", () => {
    for (const random of [0, 0.5, 0.9999]) {
      for (let failures = 1; failures < 40; failures++) {
        const ms = Duration.toMillis(storageDelay(failures, random))
        assert.isAtLeast(ms, 100)
        assert.isAtMost(ms, Duration.toMillis(StorageBackoffCap))
      }
    }
    assert.isBelow(Duration.toMillis(storageDelay(1, 0.9999)), 1_000)
    assert.strictEqual(Duration.toMillis(storageDelay(30, 0.9999)), Duration.toMillis(StorageBackoffCap))
  })
})

describe("makeStorageBackoff", () => {
  const down = Effect.die(new Error("connect ECONNREFUSED"))

  it.effect("the first loop whose pass succeeds after failing ends the other loops' waits", () =>
    Effect.gen(function*() {
      const waiting = makeStorageBackoff("waiting")
      const first = makeStorageBackoff("first")
      // Five failures: waits of about 1, 2, 4 and 8 s, then 15 s.
      const loop = yield* Effect.fork(Effect.forEach(Array.from({ length: 5 }), () => waiting.guard(down, 0)))
      yield* TestClock.adjust(Duration.seconds(15))
      assert.isTrue(Option.isNone(yield* Fiber.poll(loop)), "in its 15 s wait")
      yield* Effect.fork(first.guard(down, 0))
      yield* TestClock.adjust(Duration.seconds(1))
      yield* first.guard(Effect.void, undefined)
      for (let i = 0; i < 10; i++) yield* Effect.yieldNow()
      assert.isTrue(Option.isSome(yield* Fiber.poll(loop)), "its wait ended with the other loop's success")
    }).pipe(Effect.withRandom(Random.fixed([0.999]))))
})
