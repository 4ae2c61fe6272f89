// The purge of unconfirmed signups over real SQLite storage. Time is the TestClock's: the job runs forked as the
// app runs it, and the test moves the clock (no sleeps).
import { SqlClient } from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Fiber, Layer, TestClock } from "effect"
import { PendingPurge, PendingPurgeSettings, PurgeBatchSize } from "../../core/subscriptions/PendingPurge.ts"
import { SubscriptionStore } from "../../core/subscriptions/SubscriptionStore.ts"
import { tempSqliteStore } from "../storage/TempSqlite.ts"
import { claimAndIssueTokens, confirm, signUp } from "../support/Signups.ts"

const T0 = Date.UTC(2025, 0, 15, 12, 0, 0)
const Ttl = Duration.days(7)
const Interval = Duration.hours(1)

const testLayer = () =>
  PendingPurge.Default.pipe(
    Layer.provideMerge(tempSqliteStore()),
    Layer.provide(Layer.succeed(PendingPurgeSettings, { ttl: Ttl, interval: Interval }))
  )

const run = <A, E>(self: Effect.Effect<A, E, PendingPurge | SubscriptionStore | SqlClient>) =>
  Effect.gen(function*() {
    yield* TestClock.setTime(T0)
    return yield* Effect.provide(self, testLayer())
  })

const count = (table: "subscriptions" | "mail_outbox" | "subscription_tokens") =>
  Effect.flatMap(SqlClient, (sql) => sql<{ n: number }>`SELECT count(*) AS n FROM ${sql(table)}`).pipe(
    Effect.map((rows) => Number(rows[0]!.n)),
    Effect.orDie
  )

describe("PendingPurge", () => {
  it.effect("the running job purges a signup once it is older than the ttl, and keeps confirmed ones", () =>
    run(Effect.gen(function*() {
      const store = yield* SubscriptionStore
      const purge = yield* PendingPurge
      const pending = yield* signUp(1)
      const confirmed = yield* signUp(2)
      // The worker's part, played here: the confirmation mail's tokens, then the click.
      const entries = yield* claimAndIssueTokens(10)
      yield* confirm(entries.find((e) => e.subscriptionId === confirmed.subscription.id)!)

      const job = yield* Effect.fork(purge.run)
      yield* TestClock.adjust(Duration.days(6))
      assert.strictEqual(yield* count("subscriptions"), 2, "6 days: still within the ttl")
      // Past 7 days: the next hourly pass purges it.
      yield* TestClock.adjust(Duration.sum(Duration.days(1), Interval))
      assert.strictEqual(yield* count("subscriptions"), 1)
      const left = yield* store.listSubscriptions({ limit: 10 })
      assert.deepStrictEqual(left.map((s) => [s.id, s.status]), [[confirmed.subscription.id, "active"]])
      assert.notStrictEqual(left[0]!.id, pending.subscription.id)
      // The purged signup's tokens and mail went with it.
      assert.strictEqual(yield* count("subscription_tokens"), 2)
      assert.strictEqual(yield* count("mail_outbox"), 1)
      yield* Fiber.interrupt(job)
    })))

  it.effect("a backlog larger than a batch is purged in batches within one pass", () =>
    run(Effect.gen(function*() {
      const purge = yield* PendingPurge
      const total = PurgeBatchSize * 2 + 7
      for (let i = 0; i < total; i++) yield* signUp(i)
      yield* TestClock.adjust(Duration.hours(1))
      const fresh = yield* signUp(total)
      yield* TestClock.adjust(Duration.subtract(Ttl, Duration.minutes(30)))
      assert.strictEqual(yield* purge.purgeExpired, total)
      const left = yield* Effect.flatMap(SubscriptionStore, (store) => store.listSubscriptions({ limit: 10 }))
      assert.deepStrictEqual(left.map((s) => s.id), [fresh.subscription.id])
      assert.strictEqual(yield* count("mail_outbox"), 1)
      assert.strictEqual(yield* purge.purgeExpired, 0)
    })))
})
