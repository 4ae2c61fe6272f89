import { Context, DateTime, Duration, Effect, Schedule } from "effect"
import { makeStorageBackoff } from "../shared/StorageBackoff.ts"
import { SubscriptionStore } from "./SubscriptionStore.ts"

// How long a signup may stay unconfirmed, and how often the job looks for expired ones.
export class PendingPurgeSettings extends Context.Tag("PendingPurgeSettings")<PendingPurgeSettings, {
  readonly ttl: Duration.Duration
  readonly interval: Duration.Duration
}>() {}

export const DefaultPendingTtlDays = 7
// Rows deleted per transaction: a large backlog is cleared in short transactions that let signups in between.
export const PurgeBatchSize = 500

// Unconfirmed signups expire: a pending subscription not confirmed within the ttl of its last signup is
// deleted with its tokens and outbox rows (bots' signups and mistyped addresses do not pile up).
export class PendingPurge extends Effect.Service<PendingPurge>()("PendingPurge", {
  effect: Effect.gen(function*() {
    const store = yield* SubscriptionStore
    const settings = yield* PendingPurgeSettings

    // One pass: batch after batch until a batch comes back short; answers how many it deleted, in how many batches.
    const purgeBatches = Effect.gen(function*() {
      const before = DateTime.subtractDuration(yield* DateTime.now, settings.ttl)
      let deleted = 0
      for (let batches = 1;; batches++) {
        const batch = yield* store.purgePending(before, PurgeBatchSize)
        deleted += batch
        if (batch < PurgeBatchSize) return { deleted, batches }
        // A timer's turn, not yieldNow's microtask: on SQLite the batch ran on this thread, and the requests
        // that arrived meanwhile are answered before the next one.
        yield* Effect.sleep(Duration.zero)
      }
    })
    const purgeExpired = Effect.map(purgeBatches, (pass) => pass.deleted)

    // A pass that fails (the database does) is tried again with the database's backoff until it succeeds.
    const backoff = makeStorageBackoff("pending purge")
    const pass = backoff.guard(
      Effect.timed(purgeBatches).pipe(
        Effect.tap(([took, { batches, deleted }]) =>
          deleted > 0
            ? Effect.logInfo("expired pending signups purged", {
              count: deleted,
              batches,
              ms: Math.round(Duration.toMillis(took))
            })
            : Effect.void
        ),
        Effect.as(true)
      ),
      false
    ).pipe(Effect.repeat({ until: (done) => done }))

    // A pass at start, then one per interval.
    const run = Effect.asVoid(Effect.repeat(pass, Schedule.spaced(settings.interval)))

    return { purgeExpired, run } as const
  })
}) {}
