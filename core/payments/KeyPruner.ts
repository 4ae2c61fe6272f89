import { DateTime, Duration, Effect, Schedule } from "effect"
import { makeStorageBackoff } from "../shared/StorageBackoff.ts"
import { IdempotencyKeyTtl } from "./Idempotency.ts"
import { TransferStore } from "./TransferStore.ts"

// Deletes idempotency keys older than IdempotencyKeyTtl, a batch per transaction, so that no lock is held long
// and requests go on between batches. An expired key that is not deleted yet already counts as no key
// (core/payments/Idempotency.ts's decideStart): pruning only keeps the table small.
export const PruneBatch = 500
export const PruneInterval = Duration.hours(1)

export class KeyPruner extends Effect.Service<KeyPruner>()("KeyPruner", {
  effect: Effect.gen(function*() {
    const store = yield* TransferStore

    // Deletes every expired key; answers how many, in how many batches.
    const pruneBatches = Effect.gen(function*() {
      const before = DateTime.subtractDuration(yield* DateTime.now, IdempotencyKeyTtl)
      let deleted = 0
      for (let batches = 1;; batches++) {
        const batch = yield* store.pruneKeys(before, PruneBatch)
        deleted += batch
        if (batch < PruneBatch) return { deleted, batches }
        // A timer's turn, not yieldNow's microtask: on SQLite the batch ran on this thread, and the requests
        // that arrived meanwhile are answered before the next one.
        yield* Effect.sleep(Duration.zero)
      }
    })
    const pruneExpired = Effect.map(pruneBatches, (pass) => pass.deleted)

    // A pass that fails (the database does) is tried again with the database's backoff until it succeeds.
    const backoff = makeStorageBackoff("key pruner")
    const run = backoff.guard(
      Effect.timed(pruneBatches).pipe(
        Effect.tap(([took, { batches, deleted }]) =>
          deleted > 0
            ? Effect.logInfo("expired idempotency keys pruned", {
              deleted,
              batches,
              ms: Math.round(Duration.toMillis(took))
            })
            : Effect.void
        ),
        Effect.as(true)
      ),
      false
    ).pipe(
      Effect.repeat({ until: (done) => done }),
      Effect.repeat(Schedule.spaced(PruneInterval)),
      Effect.asVoid
    )

    return { pruneExpired, run } as const
  })
}) {}
