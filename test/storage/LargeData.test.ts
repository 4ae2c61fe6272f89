// The large-data bench's rows (bench/lib/large-data.mjs), written straight into a migrated database beside one the
// app wrote: the kept balances the store reads equal the sum over the transfers that BalanceStatuses counts, and
// the seeded rows read back through the store, on SQLite and PostgreSQL.
import { SqlClient } from "@effect/sql/SqlClient"
import { assert, describe } from "@effect/vitest"
import { DateTime, Effect, Layer, Option } from "effect"
import { layer as PgTransferStore } from "../../adapters/postgres/PgTransferStore.ts"
import { Dialect, sqlStrings } from "../../adapters/sql/Dialect.ts"
import { runMigrations } from "../../adapters/sql/Migrations.ts"
import { transferRow } from "../../adapters/sql/TransferRows.ts"
import { layer as SqliteTransferStore } from "../../adapters/sqlite/SqliteTransferStore.ts"
import { EventViewsLive } from "../../apps/http/webhooks/EventViewsLive.ts"
import { seededTransferId, seedPostgres, seedSqlite } from "../../bench/lib/large-data.mjs"
import { CurrencyCode } from "../../core/payments/Currency.ts"
import { BalanceStatuses, ClientId, Reference, Transfer, TransferId } from "../../core/payments/Transfer.ts"
import type { TransferStorage } from "../../core/payments/TransferStorage.ts"
import * as TransferStore from "../../core/payments/TransferStore.ts"
import { onEachDatabase } from "./EachDatabase.ts"

const T = Date.UTC(2026, 0, 15, 12)
const client = ClientId.make(`cl_${"bench".padEnd(24, "x")}`)
const size = { transfers: 1000, subscribers: 500 }

// One transfer the app settles, to a merchant the seeded ones pay too: the seeding adds to its balance.
const transfer = (status: "pending" | "approved") =>
  new Transfer({
    id: TransferId.make(`tr_${"app".padEnd(24, "x")}`),
    clientId: client,
    reference: Reference.make("ref-app"),
    amount: 777n,
    amountRefunded: 0n,
    currency: CurrencyCode.make("USD"),
    status,
    sender: {
      first_name: "Ann",
      email: "ann@example.com",
      card: { brand: "visa", last4: "4242", exp_month: 12, exp_year: 2030, fingerprint: "fp" }
    },
    recipient: { first_name: "Mo", email: "shop@example.com", merchant_id: "m-1" },
    ...(status === "approved" ? { authorizationCode: "AUTH" } : {}),
    createdAt: DateTime.unsafeMake(T)
  })

const young = Effect.gen(function*() {
  const sql = yield* SqlClient
  const { time } = yield* Dialect
  yield* runMigrations
  yield* sql`INSERT INTO api_clients ${
    sql.insert({ id: client, name: "bench", key_hash: "hash", created_at: time(T) })
  }`
  yield* sql`INSERT INTO transfers ${sql.insert(transferRow(transfer("pending"), time))}`
  yield* (yield* TransferStore.TransferStore).settle(transfer("approved"))
})

const check = Effect.gen(function*() {
  const sql = yield* SqlClient
  const store = yield* TransferStore.TransferStore
  const sums = yield* sql<{ merchant: string; currency: string; amount: unknown }>`
    SELECT recipient_merchant_id AS merchant, currency, SUM(amount - amount_refunded) AS amount FROM transfers
    WHERE client_id = ${client} AND status IN (${sql.literal(sqlStrings(BalanceStatuses))})
    GROUP BY recipient_merchant_id, currency ORDER BY recipient_merchant_id, currency`
  const kept = yield* store.balance(client)
  assert.strictEqual(sums.length, 5)
  assert.deepStrictEqual(
    kept.map((b) => [b.merchantId, b.currency, b.amount]),
    sums.map((s) => [s.merchant, s.currency, BigInt(String(s.amount))])
  )
  const counts = yield* sql<{ transfers: unknown; subscriptions: unknown }>`
    SELECT (SELECT count(*) FROM transfers) AS transfers, (SELECT count(*) FROM subscriptions) AS subscriptions`
  assert.deepStrictEqual([Number(counts[0]!.transfers), Number(counts[0]!.subscriptions)], [1001, 500])
  const seeded = yield* store.get(client, TransferId.make(seededTransferId(501)))
  assert.isTrue(Option.isSome(seeded) && seeded.value.status === "approved")
  const page = yield* store.list(client, { limit: 100 })
  assert.strictEqual(page.data.length, 100)
})

const storesOver = <E, R>(storage: Layer.Layer<TransferStorage, E, R>) =>
  TransferStore.layer.pipe(Layer.provide(storage), Layer.provide(EventViewsLive))

describe("the large-data bench's rows", () => {
  onEachDatabase({
    sqlite: storesOver(SqliteTransferStore),
    postgres: storesOver(PgTransferStore)
  }, (kind, location) =>
    Effect.gen(function*() {
      yield* young
      if (kind === "sqlite") seedSqlite(location, { ...size, now: T })
      else yield* Effect.promise(() => seedPostgres(location, { ...size, now: T }))
      yield* check
    }))
})
