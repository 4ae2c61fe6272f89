// PostgreSQL storage beyond the contracts (which run in IndexedStatements.postgres.test.ts): the rate limiter's
// contract, its columns, and what only shows with several connection pools on one database
// (as several app instances have): every test gets a database of its own, made from the `test` database and
// dropped afterwards. Skipped, with the reason in the title, when POSTGRES_TESTS=off or no server answers.
import { SqlClient } from "@effect/sql/SqlClient"
import { assert, describe, layer } from "@effect/vitest"
import { Context, DateTime, Effect, Layer, Option } from "effect"
import { layer as PgRateLimiterStore } from "../../adapters/postgres/PgRateLimiterStore.ts"
import { runMigrations } from "../../adapters/sql/Migrations.ts"
import { ClientId, TransferId } from "../../core/payments/Transfer.ts"
import { TransferStore } from "../../core/payments/TransferStore.ts"
import { postgresEnabled, postgresSkipReason } from "../support/Postgres.ts"
import { pgClient, pgStoresOn, tempDatabase, tempPgStores } from "./PgStores.ts"
import { rateLimiterStoreContract } from "./RateLimiterStore.contract.ts"
import { transfer, twoPoolsSuite } from "./TwoPools.ts"

describe.skipIf(!postgresEnabled)(
  `PostgreSQL storage${postgresEnabled ? "" : ` (skipped: ${postgresSkipReason})`}`,
  () => {
    // The four storage contracts run once on PostgreSQL, in IndexedStatements.postgres.test.ts, which EXPLAINs
    // every statement they issue.
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
