// Migration 0009 on a database that earlier migrations made and rows fill: its transfers refund nothing yet,
// its keys keep their answers (SQLite rebuilds the table), and the new CHECKs hold, on SQLite, PostgreSQL and
// MariaDB.
import { SqlClient } from "@effect/sql/SqlClient"
import { assert, describe } from "@effect/vitest"
import { DateTime, Effect, Layer, Option } from "effect"
import { layer as MariaDbTransferStore } from "../../adapters/mariadb/MariaDbTransferStore.ts"
import { layer as PgTransferStore } from "../../adapters/postgres/PgTransferStore.ts"
import { Dialect } from "../../adapters/sql/Dialect.ts"
import { runMigrations } from "../../adapters/sql/Migrations.ts"
import { transferRow } from "../../adapters/sql/TransferRows.ts"
import { layer as SqliteTransferStore } from "../../adapters/sqlite/SqliteTransferStore.ts"
import { EventViewsLive } from "../../apps/http/webhooks/EventViewsLive.ts"
import { CurrencyCode } from "../../core/payments/Currency.ts"
import { IdempotencyKey, KeptAnswer, RequestHash } from "../../core/payments/Idempotency.ts"
import { RefundId, settledRefund } from "../../core/payments/Refund.ts"
import * as RefundStore from "../../core/payments/RefundStore.ts"
import { ClientId, Reference, Transfer, TransferId } from "../../core/payments/Transfer.ts"
import type { TransferStorage } from "../../core/payments/TransferStorage.ts"
import * as TransferStore from "../../core/payments/TransferStore.ts"
import { migrationsBefore, onEachDatabase } from "./EachDatabase.ts"

const before0009 = migrationsBefore(9)

const client = ClientId.make(`cl_${"legacy".padEnd(24, "x")}`)
const id = (label: string) => TransferId.make(`tr_${label.padEnd(24, "x")}`)
const key = (label: string) => IdempotencyKey.make(`key-${label}`)
const T = Date.UTC(2025, 0, 15, 12)
const approved = new Transfer({
  id: id("approved"),
  clientId: client,
  reference: Reference.make("ref-approved"),
  amount: 1000n,
  currency: CurrencyCode.make("USD"),
  status: "approved",
  sender: {
    first_name: "Ann",
    email: "ann@example.com",
    card: { brand: "visa", last4: "4242", exp_month: 12, exp_year: 2030, fingerprint: "fp" }
  },
  recipient: { first_name: "Bob", email: "bob@example.com", merchant_id: "m" },
  authorizationCode: "AUTH",
  createdAt: DateTime.unsafeMake(T)
})

// Rows as the 0008 tables hold them.
const legacy = Effect.gen(function*() {
  const sql = yield* SqlClient
  const { time } = yield* Dialect
  yield* before0009
  yield* sql`INSERT INTO api_clients ${
    sql.insert({ id: client, name: "Legacy", key_hash: "hash-legacy", created_at: time(T) })
  }`
  const { amount_refunded: _refunded, ...row } = transferRow(approved, time)
  yield* sql`INSERT INTO transfers ${sql.insert(row)}`
  const keys = [
    ["made", "transfer_made", approved.id],
    ["taken", "reference_taken", approved.id],
    ["running", null, null]
  ] as const
  for (const [label, answer, transfer] of keys) {
    yield* sql`INSERT INTO idempotency_keys ${
      sql.insert({
        client_id: client,
        idempotency_key: key(label),
        request_hash: `hash-${label}`,
        started_at: time(T),
        request_id: `req-${label}`,
        answer,
        transfer_id: transfer
      })
    }`
  }
})

const refused = <A, E, R>(statement: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.either(statement), (result) => result._tag === "Left")

const check = Effect.gen(function*() {
  const sql = yield* SqlClient
  const transfers = yield* TransferStore.TransferStore
  const refunds = yield* RefundStore.RefundStore
  yield* runMigrations
  const stored = Option.getOrThrow(yield* transfers.get(client, approved.id))
  assert.strictEqual(stored.amountRefunded, 0n)
  assert.deepStrictEqual(yield* transfers.balance(client), [{
    merchantId: "m",
    currency: approved.currency,
    amount: 1000n
  }])
  const answerOf = (label: string) =>
    Effect.map(transfers.keyRecord(client, key(label)), (record) => Option.getOrThrow(record).answer)
  assert.deepStrictEqual(yield* answerOf("made"), KeptAnswer.TransferMade({ transferId: approved.id }))
  assert.deepStrictEqual(yield* answerOf("taken"), KeptAnswer.ReferenceTaken({ existing: approved.id }))
  assert.isUndefined(yield* answerOf("running"))
  assert.strictEqual(Option.getOrThrow(yield* transfers.keyRecord(client, key("running"))).requestId, "req-running")

  // A refund made with a key, and the key answered with it (the CHECK allows refund_made).
  const claim = { key: key("refund"), requestHash: RequestHash.make("hash-refund"), requestId: "req-refund" }
  const opening = yield* refunds.open({
    client,
    transfer: approved.id,
    id: RefundId.make(`re_${"one".padEnd(24, "x")}`),
    amount: "4.00",
    reason: undefined,
    claim
  }, DateTime.unsafeMake(T + 1000))
  assert.strictEqual(opening._tag, "Opened")
  if (opening._tag !== "Opened") return
  yield* refunds.settle(settledRefund(opening.refund, { _tag: "Succeeded" }), "pending")
  assert.deepStrictEqual(yield* answerOf("refund"), KeptAnswer.RefundMade({ refundId: opening.refund.id }))
  assert.deepStrictEqual(yield* transfers.balance(client), [{
    merchantId: "m",
    currency: approved.currency,
    amount: 600n
  }])

  // The database refuses what the port never writes: more refunded than the amount, a negative amount refunded,
  // an answer it does not know, a refund of nothing.
  assert.isTrue(yield* refused(sql`UPDATE transfers SET amount_refunded = amount + 1`))
  assert.isTrue(yield* refused(sql`UPDATE transfers SET amount_refunded = -1`))
  assert.isFalse(yield* refused(sql`UPDATE transfers SET amount_refunded = amount`))
  assert.isTrue(yield* refused(sql`UPDATE idempotency_keys SET answer = 'bogus'`))
  assert.isTrue(yield* refused(sql`UPDATE refunds SET amount = 0`))
  assert.isTrue(yield* refused(sql`UPDATE refunds SET status = 'approved'`))
})

const storesOver = <E, R>(storage: Layer.Layer<TransferStorage, E, R>) =>
  Layer.merge(TransferStore.layer, RefundStore.layer).pipe(Layer.provide(storage), Layer.provide(EventViewsLive))

describe("migration 0009: refunds on a database with rows", () => {
  onEachDatabase({
    sqlite: storesOver(SqliteTransferStore),
    postgres: storesOver(PgTransferStore),
    mariadb: storesOver(MariaDbTransferStore)
  }, (kind) =>
    Effect.gen(function*() {
      yield* legacy
      yield* check
      if (kind !== "sqlite") return
      // SQLite rebuilt the keys table: it keeps its indexes.
      const sql = yield* SqlClient
      const indexes = yield* sql<{ name: string; sql: string }>`SELECT name, sql FROM sqlite_master
        WHERE type = 'index' AND tbl_name = 'idempotency_keys' AND sql IS NOT NULL ORDER BY name`
      assert.deepStrictEqual(indexes.map((i) => i.name), ["idempotency_keys_started", "idempotency_keys_unanswered"])
      assert.match(indexes[1]!.sql, /WHERE answer IS NULL/)
    }))
})
