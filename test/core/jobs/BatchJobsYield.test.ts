// The hourly jobs that delete in batches (the pending purge, the key pruner) give the event loop a turn between
// batches. On SQLite each batch runs on this thread, so without a timer's turn a backlog of many batches would
// hold every request (a timer stands for one here) until the last batch: Effect's yieldNow alone resumes on a
// microtask, before any I/O or timer.
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Layer } from "effect"
import { KeyPruner, PruneBatch } from "../../../core/payments/KeyPruner.ts"
import { TransferStore } from "../../../core/payments/TransferStore.ts"
import { PendingPurge, PendingPurgeSettings, PurgeBatchSize } from "../../../core/subscriptions/PendingPurge.ts"
import { SubscriptionStore } from "../../../core/subscriptions/SubscriptionStore.ts"

const Batches = 20

// A store whose table holds `Batches` full batches, deleted synchronously as SQLite does; `seen` records how
// many batches had run when the timer fired.
const backlog = (size: number) => {
  let batches = 0
  const deleteBatch = (_before: unknown, limit: number) =>
    Effect.sync(() => {
      assert.strictEqual(limit, size)
      return batches++ < Batches ? size : 0
    })
  return { deleteBatch, batches: () => batches }
}

const timerRunsWithin = <E, R>(job: Effect.Effect<number, E, R>, batches: () => number) =>
  Effect.gen(function*() {
    const seen: Array<number> = []
    const timer = setTimeout(() => seen.push(batches()), 0)
    const total = yield* job
    clearTimeout(timer)
    return { total, seen }
  })

describe("the batch jobs", () => {
  it.live("the pending purge lets the event loop run between batches", () => {
    const store = backlog(PurgeBatchSize)
    const layer = PendingPurge.Default.pipe(
      Layer.provide(Layer.succeed(SubscriptionStore, { purgePending: store.deleteBatch } as never)),
      Layer.provide(Layer.succeed(PendingPurgeSettings, { ttl: Duration.days(7), interval: Duration.hours(1) }))
    )
    return Effect.gen(function*() {
      const purge = yield* PendingPurge
      const { seen, total } = yield* timerRunsWithin(purge.purgeExpired, store.batches)
      assert.strictEqual(total, PurgeBatchSize * Batches)
      assert.strictEqual(seen.length, 1)
      assert.isAtMost(seen[0]!, 2, `the timer ran after ${seen[0]} of ${store.batches()} batches`)
    }).pipe(Effect.provide(layer))
  })

  it.live("the key pruner lets the event loop run between batches", () => {
    const store = backlog(PruneBatch)
    const layer = KeyPruner.Default.pipe(
      Layer.provide(Layer.succeed(TransferStore, { pruneKeys: store.deleteBatch } as never))
    )
    return Effect.gen(function*() {
      const pruner = yield* KeyPruner
      const { seen, total } = yield* timerRunsWithin(pruner.pruneExpired, store.batches)
      assert.strictEqual(total, PruneBatch * Batches)
      assert.strictEqual(seen.length, 1)
      assert.isAtMost(seen[0]!, 2, `the timer ran after ${seen[0]} of ${store.batches()} batches`)
    }).pipe(Effect.provide(layer))
  })
})
