// Migration 0004 turns the responses that idempotency keys kept into the facts they are now kept as: a
// database written before it replays the same answers after it, on SQLite and on PostgreSQL.
import { SqlClient } from "@effect/sql/SqlClient"
import { assert, describe } from "@effect/vitest"
import { DateTime, Effect, Layer } from "effect"
import { layer as PgTransferStore } from "../../adapters/postgres/PgTransferStore.ts"
import { Dialect } from "../../adapters/sql/Dialect.ts"
import { runMigrations } from "../../adapters/sql/Migrations.ts"
import { transferRow } from "../../adapters/sql/TransferRows.ts"
import { layer as SqliteTransferStore } from "../../adapters/sqlite/SqliteTransferStore.ts"
import { EventViewsLive } from "../../apps/http/webhooks/EventViewsLive.ts"
import { CurrencyCode } from "../../core/payments/Currency.ts"
import { IdempotencyKey, IdempotencyStart, KeptAnswer, RequestHash } from "../../core/payments/Idempotency.ts"
import { ClientId, Reference, Transfer, TransferId } from "../../core/payments/Transfer.ts"
import type { TransferStorage } from "../../core/payments/TransferStorage.ts"
import { layer as TransferStoreOver, TransferStore } from "../../core/payments/TransferStore.ts"
import { migrationsBefore, onEachDatabase } from "./EachDatabase.ts"

const before0004 = migrationsBefore(4)

const client = ClientId.make(`cl_${"legacy".padEnd(24, "x")}`)
const id = (label: string) => TransferId.make(`tr_${label.padEnd(24, "x")}`)
const T = Date.UTC(2025, 0, 15, 12)
const transfer = (label: string, status: "approved" | "declined" | "pending") =>
  new Transfer({
    id: id(label),
    clientId: client,
    reference: Reference.make(`ref-${label}`),
    amount: 100n,
    currency: CurrencyCode.make("USD"),
    status,
    sender: {
      first_name: "Ann",
      email: "ann@example.com",
      card: { brand: "visa", last4: "4242", exp_month: 12, exp_year: 2030, fingerprint: "fp" }
    },
    recipient: { first_name: "Bob", email: "bob@example.com", merchant_id: "m" },
    ...(status === "declined" ? { failure: { code: "card_declined" as const } } : {}),
    createdAt: DateTime.unsafeMake(T)
  })

const legacy = Effect.gen(function*() {
  const sql = yield* SqlClient
  const { time } = yield* Dialect
  const store = yield* TransferStore
  yield* before0004
  yield* store.createClient({ id: client, name: "Legacy" }, "hash-legacy", DateTime.unsafeMake(T))
  const rows = [
    ["made", 201, { payment_transfer: { id: id("approved"), amount: "1.00" } }],
    ["taken", 409, {
      error: {
        code: "duplicate_reference",
        message: `A transfer with this reference exists: ${id("approved")}.`,
        request_id: "req-409"
      }
    }],
    ["declined", 402, { error: { code: "card_declined", request_id: "req-402" } }],
    ["invalid", 400, { error: { code: "parameter_invalid" } }],
    ["running", null, null]
  ] as const
  for (const [key, status, body] of rows) {
    yield* sql`INSERT INTO idempotency_keys ${
      sql.insert({
        client_id: client,
        idempotency_key: key,
        request_hash: "h",
        started_at: time(T),
        response_status: status,
        response_body: body === null ? null : JSON.stringify(body),
        completed_at: status === null ? null : time(T)
      })
    }`
  }
})

const startOf = (key: string) =>
  Effect.flatMap(TransferStore, (store) =>
    store.reserve(
      new Transfer({ ...transfer(`new${key}`, "pending"), createdAt: DateTime.unsafeMake(T + 1000) }),
      { key: IdempotencyKey.make(key), requestHash: RequestHash.make("h"), requestId: `req-new-${key}` }
    ))

// A transfer row as the 0002 table holds it (later migrations add columns the current store writes).
const legacyTransfer = (t: Transfer) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const { time } = yield* Dialect
    const { amount_refunded: _refunded, reconciled_at: _reconciled, request_hash: _hash, ...row } = transferRow(t, time)
    yield* sql`INSERT INTO transfers ${sql.insert(row)}`
  })

const check = Effect.gen(function*() {
  // Migrated after the transfers the keys name were written (the 0002 tables are already there).
  yield* legacyTransfer(transfer("approved", "approved"))
  yield* legacyTransfer(transfer("declined", "declined"))
  yield* runMigrations
  const replay = (answer: KeptAnswer, requestId: string) => IdempotencyStart.Replay({ answer, requestId })
  assert.deepStrictEqual(yield* startOf("made"), replay(KeptAnswer.TransferMade({ transferId: id("approved") }), ""))
  assert.deepStrictEqual(
    yield* startOf("taken"),
    replay(KeptAnswer.ReferenceTaken({ existing: id("approved") }), "req-409")
  )
  assert.deepStrictEqual(
    yield* startOf("declined"),
    replay(KeptAnswer.TransferMade({ transferId: id("declined") }), "req-402")
  )
  // A kept 400 should never have been kept: it is dropped, and its key starts again.
  assert.deepStrictEqual(yield* startOf("invalid"), IdempotencyStart.Started())
  assert.deepStrictEqual(yield* startOf("running"), IdempotencyStart.InProgress())
})

const storesOver = <E, R>(storage: Layer.Layer<TransferStorage, E, R>) =>
  TransferStoreOver.pipe(Layer.provide(storage), Layer.provide(EventViewsLive))

describe("migration 0004: kept responses become kept answers", () => {
  onEachDatabase({
    sqlite: storesOver(SqliteTransferStore),
    postgres: storesOver(PgTransferStore)
  }, () => Effect.zipRight(legacy, check))
})
