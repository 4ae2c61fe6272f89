// The jobs that work through a backlog in batches (the pending purge and the key pruner, hourly; the reconciler,
// whenever transfers are unsettled) ask the store for a bounded batch and give the event loop a turn between
// batches. On SQLite each batch runs on this thread, so without a timer's turn a backlog of many batches would
// hold every request (a timer stands for one here) until the last batch: Effect's yieldNow alone resumes on a
// microtask, before any I/O or timer.
import { assert, describe, it } from "@effect/vitest"
import { DateTime, Duration, Effect, Fiber, Layer, Logger, LogLevel } from "effect"
import { CardNetwork } from "../../../core/payments/CardNetwork.ts"
import { KeyPruner, PruneBatch } from "../../../core/payments/KeyPruner.ts"
import { ReconcileBatch, Reconciler } from "../../../core/payments/Reconciler.ts"
import { RefundStore } from "../../../core/payments/RefundStore.ts"
import { ClientId } from "../../../core/payments/Transfer.ts"
import { TransferStore, type Unsettled } from "../../../core/payments/TransferStore.ts"
import { PendingPurge, PendingPurgeSettings, PurgeBatchSize } from "../../../core/subscriptions/PendingPurge.ts"
import { SubscriptionStore } from "../../../core/subscriptions/SubscriptionStore.ts"
import { transfer } from "../../storage/TwoPools.ts"

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

  it.live("the reconciler takes a backlog a bounded batch at a time and lets the event loop run between them", () => {
    const client = ClientId.make(`cl_${"backlog".padEnd(24, "x")}`)
    const now = DateTime.unsafeMake(Date.UTC(2026, 0, 15, 12))
    let claims = 0
    let settled = 0
    // Batches full batches of unknown transfers, claimed and settled synchronously, as on SQLite.
    const claimUnsettled = (_now: unknown, _before: unknown, _lease: unknown, limit: number) =>
      Effect.sync((): ReadonlyArray<Unsettled> => {
        assert.strictEqual(limit, ReconcileBatch)
        if (claims >= Batches) return []
        claims++
        return Array.from({ length: limit }, (_, i) => ({
          transfer: { ...transfer(client, `u${claims}x${i}`, `ref-${claims}-${i}`, 100n, now), status: "unknown" },
          attempts: 0
        })) as never
      })
    const layer = Reconciler.Default.pipe(
      Layer.provide(Layer.mergeAll(
        Layer.succeed(TransferStore, { claimUnsettled, settle: () => Effect.sync(() => void settled++) } as never),
        Layer.succeed(RefundStore, { claimUnsettled: () => Effect.succeed([]) } as never),
        Layer.succeed(CardNetwork, { lookup: () => Effect.succeed({ _tag: "NotFound" }) } as never)
      ))
    )
    return Effect.gen(function*() {
      const reconciler = yield* Reconciler
      const seen: Array<number> = []
      const timer = setTimeout(() => seen.push(claims), 0)
      const fiber = yield* Effect.fork(reconciler.run)
      while (claims < Batches) yield* Effect.sleep(Duration.millis(1))
      yield* Fiber.interrupt(fiber)
      clearTimeout(timer)
      assert.strictEqual(settled, ReconcileBatch * Batches)
      assert.strictEqual(seen.length, 1)
      assert.isAtMost(seen[0]!, 2, `the timer ran after ${seen[0]} of ${claims} batches`)
    }).pipe(Effect.provide(layer), Logger.withMinimumLogLevel(LogLevel.Warning))
  })
})
