// Migration 0010 on a database that earlier migrations made and transfers fill: it computes each client's balances
// once, per merchant and currency, from the approved transfers net of their refunds (declined, pending and unknown
// ones count nothing), exactly beyond 2^53; and a settle after it adds to what it computed. On SQLite, PostgreSQL
// and MariaDB.
import { SqlClient } from "@effect/sql/SqlClient"
import { assert, describe } from "@effect/vitest"
import { DateTime, Effect, Layer } from "effect"
import { layer as MariaDbTransferStore } from "../../adapters/mariadb/MariaDbTransferStore.ts"
import { layer as PgTransferStore } from "../../adapters/postgres/PgTransferStore.ts"
import { Dialect } from "../../adapters/sql/Dialect.ts"
import { runMigrations } from "../../adapters/sql/Migrations.ts"
import { transferRow } from "../../adapters/sql/TransferRows.ts"
import { layer as SqliteTransferStore } from "../../adapters/sqlite/SqliteTransferStore.ts"
import { EventViewsLive } from "../../apps/http/webhooks/EventViewsLive.ts"
import { CurrencyCode } from "../../core/payments/Currency.ts"
import { ClientId, Reference, Transfer, TransferId, type TransferStatus } from "../../core/payments/Transfer.ts"
import type { TransferStorage } from "../../core/payments/TransferStorage.ts"
import * as TransferStore from "../../core/payments/TransferStore.ts"
import { migrationsBefore, onEachDatabase } from "./EachDatabase.ts"

const before0010 = migrationsBefore(10)

const T = Date.UTC(2025, 0, 15, 12)
const clientOf = (label: string) => ClientId.make(`cl_${label.padEnd(24, "x")}`)
const [a, b] = [clientOf("a"), clientOf("b")]
const USD = CurrencyCode.make("USD")
const JPY = CurrencyCode.make("JPY")

const transfer = (
  client: ClientId,
  label: string,
  status: TransferStatus,
  amount: bigint,
  fields: { readonly merchant?: string; readonly currency?: CurrencyCode; readonly refunded?: bigint } = {}
) =>
  new Transfer({
    id: TransferId.make(`tr_${label.padEnd(24, "x")}`),
    clientId: client,
    reference: Reference.make(`ref-${label}`),
    amount,
    amountRefunded: fields.refunded ?? 0n,
    currency: fields.currency ?? USD,
    status,
    sender: {
      first_name: "Ann",
      email: "ann@example.com",
      card: { brand: "visa", last4: "4242", exp_month: 12, exp_year: 2030, fingerprint: "fp" }
    },
    recipient: { first_name: "Bob", email: "bob@example.com", merchant_id: fields.merchant ?? "m-1" },
    ...(status === "approved" ? { authorizationCode: "AUTH" } : {}),
    createdAt: DateTime.unsafeMake(T)
  })

const rows = [
  transfer(a, "a1", "approved", 1000n, { refunded: 300n }),
  transfer(a, "a2", "approved", 2n ** 60n),
  transfer(a, "a3", "approved", 2n ** 60n + 3n),
  transfer(a, "a4", "declined", 700n),
  transfer(a, "a5", "pending", 900n),
  transfer(a, "a6", "unknown", 800n),
  transfer(a, "a7", "approved", 500n, { merchant: "m-2", currency: JPY }),
  transfer(a, "a8", "approved", 400n, { merchant: "m-2", currency: JPY, refunded: 400n }),
  transfer(a, "a9", "declined", 100n, { merchant: "m-3" }),
  transfer(b, "b1", "approved", 50n)
]

const legacy = Effect.gen(function*() {
  const sql = yield* SqlClient
  const { time } = yield* Dialect
  yield* before0010
  for (const [client, label] of [[a, "a"], [b, "b"]] as const) {
    yield* sql`INSERT INTO api_clients ${
      sql.insert({ id: client, name: label, key_hash: `hash-${label}`, created_at: time(T) })
    }`
  }
  for (const t of rows) yield* sql`INSERT INTO transfers ${sql.insert(transferRow(t, time))}`
})

const check = Effect.gen(function*() {
  const store = yield* TransferStore.TransferStore
  yield* runMigrations
  const balance = (client: ClientId) =>
    Effect.map(
      store.balance(client),
      (kept) => kept.map((r): ReadonlyArray<unknown> => [r.merchantId, r.currency, r.amount])
    )
  assert.deepStrictEqual(yield* balance(a), [
    ["m-1", "USD", 700n + 2n ** 61n + 3n],
    ["m-2", "JPY", 500n]
  ])
  assert.deepStrictEqual(yield* balance(b), [["m-1", "USD", 50n]])
  // The pending transfer settles approved after the migration: its amount joins the computed balance.
  yield* store.settle(transfer(a, "a5", "approved", 900n))
  assert.deepStrictEqual(yield* balance(a), [
    ["m-1", "USD", 1600n + 2n ** 61n + 3n],
    ["m-2", "JPY", 500n]
  ])
})

const storesOver = <E, R>(storage: Layer.Layer<TransferStorage, E, R>) =>
  TransferStore.layer.pipe(Layer.provide(storage), Layer.provide(EventViewsLive))

describe("migration 0010: balances computed once from the transfers", () => {
  onEachDatabase({
    sqlite: storesOver(SqliteTransferStore),
    postgres: storesOver(PgTransferStore),
    mariadb: storesOver(MariaDbTransferStore)
  }, () => Effect.zipRight(legacy, check))
})
