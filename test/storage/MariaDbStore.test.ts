// MariaDB storage beyond the contracts (which run in IndexedStatements.mariadb.test.ts): the rate limiter's
// contract, its columns, and what only shows with several connection pools on one database (as
// several app instances have): every test gets a database of its own, dropped afterwards. Skipped, with the
// reason in the title, when MARIADB_TESTS=off or no server answers.
import { SqlClient } from "@effect/sql/SqlClient"
import { assert, describe, layer } from "@effect/vitest"
import { Context, DateTime, Effect, Layer, Option, Redacted } from "effect"
import { afterAll } from "vitest"
import { layer as MariaDbClient } from "../../adapters/mariadb/MariaDbClient.ts"
import { layer as MariaDbRateLimiterStore } from "../../adapters/mariadb/MariaDbRateLimiterStore.ts"
import { layer as MariaDbSubscriptionStore } from "../../adapters/mariadb/MariaDbSubscriptionStore.ts"
import { layer as MariaDbTransferStore } from "../../adapters/mariadb/MariaDbTransferStore.ts"
import { runMigrations } from "../../adapters/sql/Migrations.ts"
import { EventViewsLive } from "../../apps/http/webhooks/EventViewsLive.ts"
import { RefundStore } from "../../core/payments/RefundStore.ts"
import { ClientId, Transfer, TransferId, unsettledStatuses } from "../../core/payments/Transfer.ts"
import { TransferStorage } from "../../core/payments/TransferStorage.ts"
import { TransferStore } from "../../core/payments/TransferStore.ts"
import { storesOver } from "../../core/shared/Stores.ts"
import { SubscriptionStore } from "../../core/subscriptions/SubscriptionStore.ts"
import type { EventViews } from "../../core/webhooks/EventViews.ts"
import { createTestDatabase, mariadbEnabled, mariadbSkipReason } from "../support/MariaDb.ts"
import { rateLimiterStoreContract } from "./RateLimiterStore.contract.ts"
import { transfer, twoPoolsSuite } from "./TwoPools.ts"

// A new database that lives as long as the scope.
const tempDatabase = Effect.acquireRelease(
  Effect.promise(() => createTestDatabase()),
  (database) => Effect.promise(() => database.drop())
)

// The stores over the storage adapters.
const stores = storesOver(Layer.merge(MariaDbSubscriptionStore, MariaDbTransferStore))

// The storage adapters over their own pool on `url`, migrations run first (a second pool finds them done).
const storesOn = (url: string): Layer.Layer<SubscriptionStore | TransferStore | RefundStore | SqlClient, unknown> =>
  stores.pipe(
    Layer.provide(EventViewsLive),
    Layer.provide(Layer.effectDiscard(runMigrations)),
    Layer.provideMerge(MariaDbClient(Redacted.make(url)))
  )

// The storage adapters on this file's database, emptied first: its tests run one after another, and making and
// migrating a database per test (a property test makes dozens) costs MariaDB seconds each.
const shared = Effect.runSync(Effect.cached(Effect.promise(() => createTestDatabase())))
afterAll(() =>
  mariadbEnabled
    ? Effect.runPromise(Effect.flatMap(shared, (database) => Effect.promise(() => database.drop())))
    : undefined
)
const tables = [
  "webhook_deliveries",
  "events",
  "webhook_endpoints",
  "mail_outbox",
  "subscription_tokens",
  "subscriptions",
  "signup_days",
  "idempotency_keys",
  "refunds",
  "transfers",
  "balances",
  "api_clients",
  "rate_limits",
  "service_secrets"
]
const emptied = Effect.flatMap(
  SqlClient,
  (sql) =>
    Effect.forEach(tables, (table) => sql`DELETE FROM ${sql(table)}`, { discard: true }).pipe(
      Effect.zipRight(sql`DELETE FROM feeds WHERE name <> 'default'`),
      Effect.zipRight(sql`UPDATE feeds SET deleted_at = NULL, title = 'Newsletter'`)
    )
)
// `layer` (stores, webhook store, rate limit store) over a pool on this file's database, migrated and emptied.
const onShared = <A, E>(layer: Layer.Layer<A, E, SqlClient | EventViews>): Layer.Layer<A | SqlClient, unknown> =>
  Layer.unwrapEffect(Effect.map(shared, (database) =>
    layer.pipe(
      Layer.provide(EventViewsLive),
      Layer.provide(Layer.effectDiscard(Effect.zipRight(runMigrations, emptied))),
      Layer.provideMerge(MariaDbClient(Redacted.make(database.url)))
    )))
const tempStores = (): Layer.Layer<SubscriptionStore | TransferStore | RefundStore | SqlClient, unknown> =>
  onShared(stores)

describe.skipIf(!mariadbEnabled)(
  `MariaDB storage${mariadbEnabled ? "" : ` (skipped: ${mariadbSkipReason})`}`,
  () => {
    // The four storage contracts run once on MariaDB, in IndexedStatements.mariadb.test.ts, which EXPLAINs every
    // statement they issue.
    rateLimiterStoreContract("MariaDB", () => onShared(MariaDbRateLimiterStore))

    layer(tempStores())("MariaDB columns", (it) => {
      it.effect("amounts are exact BIGINTs, times BIGINT milliseconds, keys compared byte for byte", () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient
          const store = yield* TransferStore
          const client = ClientId.make(`cl_${"columns".padEnd(24, "x")}`)
          const createdAt = DateTime.unsafeMake(Date.UTC(2025, 0, 15, 12, 0, 0, 123))
          yield* store.createClient({ id: client, name: "Columns" }, "hash-columns", createdAt)
          yield* store.record(transfer(client, "columns", "columns", 2n ** 63n - 1n, createdAt))
          yield* store.record(transfer(client, "columnz", "COLUMNS", 1n, createdAt))
          const rows = yield* sql<{ text: string; created: unknown }>`
            SELECT CAST(amount AS CHAR) AS text, created_at AS created FROM transfers ORDER BY reference`
          assert.deepStrictEqual(rows.map((r) => [r.text, Number(r.created)]), [
            ["1", Date.UTC(2025, 0, 15, 12, 0, 0, 123)],
            ["9223372036854775807", Date.UTC(2025, 0, 15, 12, 0, 0, 123)]
          ])
          const stored = Option.getOrThrow(yield* store.get(client, TransferId.make(`tr_${"columns".padEnd(24, "x")}`)))
          assert.strictEqual(stored.amount, 2n ** 63n - 1n)
          assert.strictEqual(DateTime.toEpochMillis(stored.createdAt), DateTime.toEpochMillis(createdAt))
        }))
    })

    // Core does not read a settle's answer (TransferStore.ts), so CombinedEquivalence cannot see it: the script's
    // first result, its UPDATE's matched rows, says whether this settle wrote the outcome.
    layer(onShared(MariaDbTransferStore))("MariaDB combined settle", (it) => {
      it.effect("answers true when it wrote the outcome, false when the transfer was settled before", () =>
        Effect.gen(function*() {
          const storage = yield* TransferStorage
          const client = ClientId.make(`cl_${"settles".padEnd(24, "x")}`)
          const createdAt = DateTime.unsafeMake(Date.UTC(2025, 0, 15, 12))
          yield* storage.createClient({ id: client, name: "Settles" }, "hash-settles", createdAt)
          const approved = transfer(client, "settles", "settles", 100n, createdAt)
          assert.isTrue(yield* storage.insertTransfer(new Transfer({ ...approved, status: "pending" })))
          const settle = storage.combined!.settle
          assert.isTrue(yield* settle({ transfer: approved, from: unsettledStatuses }))
          assert.isFalse(yield* settle({ transfer: approved, from: unsettledStatuses }))
          assert.isFalse(
            yield* settle({ transfer: transfer(client, "missing", "missing", 1n, createdAt), from: unsettledStatuses })
          )
        }))
    })

    twoPoolsSuite(Effect.gen(function*() {
      const database = yield* tempDatabase
      const first = yield* Layer.build(storesOn(database.url))
      const second = yield* Layer.build(storesOn(database.url))
      assert.notStrictEqual(Context.get(first, SqlClient), Context.get(second, SqlClient))
      return [first, second] as const
    }))
  }
)
