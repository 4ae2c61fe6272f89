// Migration 0018 on a database that earlier migrations made and subscriptions fill: it counts each feed's
// subscriptions once, on the UTC day of their first signup (whatever their status), and a signup after it adds
// to what it counted. On SQLite, PostgreSQL and MariaDB.
import { SqlClient } from "@effect/sql/SqlClient"
import { assert, describe } from "@effect/vitest"
import { DateTime, Effect, Layer } from "effect"
import { layer as MariaDbSubscriptionStore } from "../../adapters/mariadb/MariaDbSubscriptionStore.ts"
import { layer as PgSubscriptionStore } from "../../adapters/postgres/PgSubscriptionStore.ts"
import { Dialect } from "../../adapters/sql/Dialect.ts"
import { runMigrations } from "../../adapters/sql/Migrations.ts"
import { layer as SqliteSubscriptionStore } from "../../adapters/sqlite/SqliteSubscriptionStore.ts"
import { EventViewsLive } from "../../apps/http/webhooks/EventViewsLive.ts"
import { Email } from "../../core/shared/Email.ts"
import { DefaultFeed } from "../../core/subscriptions/Feed.ts"
import { SubscriberName } from "../../core/subscriptions/Subscription.ts"
import type { SubscriptionStorage } from "../../core/subscriptions/SubscriptionStorage.ts"
import * as SubscriptionStore from "../../core/subscriptions/SubscriptionStore.ts"
import { migrationsBefore, onEachDatabase } from "./EachDatabase.ts"

const before0018 = migrationsBefore(18)

const Day = 86_400_000
const day = Math.floor(Date.UTC(2025, 0, 15) / Day)
// Subscriptions as the service left them: [label, feed, status, first signup (ms into `day`, or days before)].
const rows: ReadonlyArray<readonly [string, string, string, number]> = [
  ["a", "default", "active", 0],
  ["b", "default", "pending", 5],
  ["c", "default", "unsubscribed", Day - 1],
  ["d", "other", "active", 10],
  ["e", "default", "active", -1],
  ["f", "other", "pending", 2 * Day]
]

const legacy = Effect.gen(function*() {
  const sql = yield* SqlClient
  const { time } = yield* Dialect
  yield* before0018
  yield* sql`INSERT INTO feeds ${
    sql.insert({ name: "other", title: "Other", created_at: time(0), updated_at: time(0) })
  }`
  for (const [label, feed, status, offset] of rows) {
    const at = time(day * Day + offset)
    yield* sql`INSERT INTO subscriptions ${
      sql.insert({
        email: `${label}@example.com`,
        email_key: `${label}@example.com`,
        name: label,
        feed,
        status,
        created_at: at,
        updated_at: at
      })
    }`
  }
})

const check = Effect.gen(function*() {
  const store = yield* SubscriptionStore.SubscriptionStore
  yield* runMigrations
  const counted = Effect.map(
    store.signupDays(day - 1, day + 3),
    (found) => [...found].sort((x, y) => x.day - y.day).map((r) => [r.day - day, r.count])
  )
  assert.deepStrictEqual(yield* counted, [[-1, 1], [0, 4], [2, 1]])
  // A signup after the migration adds to the day's count.
  yield* store.subscribe({
    name: SubscriberName.make("G"),
    email: Email.make("g@example.com"),
    feed: DefaultFeed,
    now: DateTime.unsafeMake(day * Day + 1000)
  })
  assert.deepStrictEqual(yield* counted, [[-1, 1], [0, 5], [2, 1]])
})

const storesOver = <E, R>(storage: Layer.Layer<SubscriptionStorage, E, R>) =>
  SubscriptionStore.layer.pipe(Layer.provide(storage), Layer.provide(EventViewsLive))

describe("migration 0018: signups counted once from the subscriptions", () => {
  onEachDatabase({
    sqlite: storesOver(SqliteSubscriptionStore),
    postgres: storesOver(PgSubscriptionStore),
    mariadb: storesOver(MariaDbSubscriptionStore)
  }, () => Effect.zipRight(legacy, check))
})
