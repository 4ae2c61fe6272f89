// The storage contracts on PostgreSQL, plus what only shows with several connection pools on one database
// (as several app instances have): every test gets a database of its own, made from the `test` database and
// dropped afterwards. Skipped, with the reason in the title, when POSTGRES_TESTS=off or no server answers.
import { SqlClient } from "@effect/sql/SqlClient"
import { assert, describe, layer } from "@effect/vitest"
import { Context, DateTime, Effect, Layer, Option, Redacted } from "effect"
import { layer as PgClientLayer } from "../../adapters/postgres/PgClient.ts"
import { layer as PgRateLimiterStore } from "../../adapters/postgres/PgRateLimiterStore.ts"
import { layer as PgSubscriptionStore } from "../../adapters/postgres/PgSubscriptionStore.ts"
import { layer as PgTransferStore } from "../../adapters/postgres/PgTransferStore.ts"
import { layer as PgWebhookStore } from "../../adapters/postgres/PgWebhookStore.ts"
import { runMigrations } from "../../adapters/sql/Migrations.ts"
import { EventViewsLive } from "../../apps/http/webhooks/EventViewsLive.ts"
import { RefundStore } from "../../core/payments/RefundStore.ts"
import { ClientId, TransferId } from "../../core/payments/Transfer.ts"
import { TransferStore } from "../../core/payments/TransferStore.ts"
import { storesOver } from "../../core/shared/Stores.ts"
import { SubscriptionStore } from "../../core/subscriptions/SubscriptionStore.ts"
import { createTestDatabase, postgresEnabled, postgresSkipReason } from "../support/Postgres.ts"
import { rateLimiterStoreContract } from "./RateLimiterStore.contract.ts"
import { withSqlRawRows } from "./RawRows.ts"
import { refundStoreContract } from "./RefundStore.contract.ts"
import { subscriptionStoreContract } from "./SubscriptionStore.contract.ts"
import { transferStoreContract } from "./TransferStore.contract.ts"
import { transfer, twoPoolsSuite } from "./TwoPools.ts"
import { webhookStoreContract } from "./WebhookStore.contract.ts"

// A new database that lives as long as the scope (dropped with FORCE, so a pool still open cannot keep it).
const tempDatabase = Effect.acquireRelease(
  Effect.promise(() => createTestDatabase()),
  (database) => Effect.promise(() => database.drop())
)

// A pool on `url` as the app makes it (adapters/postgres/PgClient.ts: one pg Pool behind @effect/sql-pg and
// PgDirect).
const pgClient = (url: string) => PgClientLayer(Redacted.make(url))

// The storage adapters over their own pool on `url`, migrations run first (a second pool finds them done).
const pgStoresOn = (url: string): Layer.Layer<SubscriptionStore | TransferStore | RefundStore | SqlClient, unknown> =>
  storesOver(Layer.merge(PgSubscriptionStore, PgTransferStore)).pipe(
    Layer.provide(EventViewsLive),
    Layer.provide(Layer.effectDiscard(runMigrations)),
    Layer.provideMerge(pgClient(url))
  )

// The storage adapters on a new database.
const tempPgStores = (): Layer.Layer<SubscriptionStore | TransferStore | RefundStore | SqlClient, unknown> =>
  Layer.unwrapScoped(Effect.map(tempDatabase, (database) => pgStoresOn(database.url)))

describe.skipIf(!postgresEnabled)(
  `PostgreSQL storage${postgresEnabled ? "" : ` (skipped: ${postgresSkipReason})`}`,
  () => {
    subscriptionStoreContract("PostgreSQL", withSqlRawRows(tempPgStores))
    transferStoreContract("PostgreSQL", withSqlRawRows(tempPgStores))
    refundStoreContract("PostgreSQL", withSqlRawRows(tempPgStores))
    webhookStoreContract(
      "PostgreSQL",
      () =>
        Layer.unwrapScoped(
          Effect.map(tempDatabase, (database) =>
            Layer.merge(storesOver(Layer.merge(PgSubscriptionStore, PgTransferStore)), PgWebhookStore).pipe(
              Layer.provide(EventViewsLive),
              Layer.provide(Layer.effectDiscard(runMigrations)),
              Layer.provide(pgClient(database.url))
            ))
        )
    )
    rateLimiterStoreContract(
      "PostgreSQL",
      () =>
        Layer.unwrapScoped(Effect.map(tempDatabase, (database) =>
          PgRateLimiterStore.pipe(
            Layer.provide(Layer.effectDiscard(runMigrations)),
            Layer.provideMerge(pgClient(database.url))
          )))
    )

    layer(tempPgStores())("PostgreSQL columns", (it) => {
      it.effect("amounts are exact BIGINTs, times are timestamptz to the millisecond", () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient
          const store = yield* TransferStore
          const client = ClientId.make(`cl_${"columns".padEnd(24, "x")}`)
          const createdAt = DateTime.unsafeMake(Date.UTC(2025, 0, 15, 12, 0, 0, 123))
          yield* store.createClient({ id: client, name: "Columns" }, "hash-columns", createdAt)
          yield* store.record(transfer(client, "columns", "columns", 2n ** 63n - 1n, createdAt))
          const rows = yield* sql<{ text: string; kind: string; created: string; created_kind: string }>`
            SELECT CAST(amount AS TEXT) AS text, pg_typeof(amount)::text AS kind,
              to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS') AS created,
              pg_typeof(created_at)::text AS created_kind
            FROM transfers`
          assert.deepStrictEqual(rows.map((r) => [r.text, r.kind, r.created, r.created_kind]), [
            ["9223372036854775807", "bigint", "2025-01-15T12:00:00.123", "timestamp with time zone"]
          ])
          const stored = Option.getOrThrow(yield* store.get(client, TransferId.make(`tr_${"columns".padEnd(24, "x")}`)))
          assert.strictEqual(stored.amount, 2n ** 63n - 1n)
          assert.strictEqual(DateTime.toEpochMillis(stored.createdAt), DateTime.toEpochMillis(createdAt))
        }))
    })

    twoPoolsSuite(Effect.gen(function*() {
      const database = yield* tempDatabase
      const first = yield* Layer.build(pgStoresOn(database.url))
      const second = yield* Layer.build(pgStoresOn(database.url))
      assert.notStrictEqual(Context.get(first, SqlClient), Context.get(second, SqlClient))
      return [first, second] as const
    }))
  }
)
