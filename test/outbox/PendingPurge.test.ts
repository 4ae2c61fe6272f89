// The purge of unconfirmed signups over real SQLite storage. Time is the TestClock's: the job runs forked as the
// app runs it, and the test moves the clock (no sleeps).
import { SqlClient } from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import { DateTime, Duration, Effect, Fiber, Layer, TestClock } from "effect"
import { Email } from "../../core/shared/Email.ts"
import { DefaultFeed } from "../../core/subscriptions/Feed.ts"
import { PendingPurge, PendingPurgeSettings, PurgeBatchSize } from "../../core/subscriptions/PendingPurge.ts"
import { Event, SubscriberName } from "../../core/subscriptions/Subscription.ts"
import { SubscriptionStore } from "../../core/subscriptions/SubscriptionStore.ts"
import { TokenHash } from "../../core/subscriptions/Token.ts"
import { tempSqliteStore } from "../storage/TempSqlite.ts"

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

const person = (i: number) => ({
  name: SubscriberName.make(`Person ${i}`),
  email: Email.make(`person${i}@example.com`),
  feed: DefaultFeed
})

const signUp = (i: number) =>
  Effect.flatMap(
    SubscriptionStore,
    (store) => Effect.flatMap(DateTime.now, (now) => store.subscribe({ ...person(i), now }))
  )

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
      const now = yield* DateTime.now
      const entries = yield* store.claimDue(now, DateTime.addDuration(now, Duration.minutes(1)), 10)
      for (const entry of entries) {
        yield* store.prepareConfirmations([{
          entry,
          tokens: {
            confirm: { hash: TokenHash.make(`c${entry.id}`), expiresAt: DateTime.addDuration(now, Duration.days(2)) },
            unsubscribe: { hash: TokenHash.make(`u${entry.id}`) }
          }
        }], now)
      }
      const confirmEntry = entries.find((e) => e.subscriptionId === confirmed.subscription.id)!
      yield* store.redeemToken(TokenHash.make(`c${confirmEntry.id}`), "confirm", Event.Confirm(), now)

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
