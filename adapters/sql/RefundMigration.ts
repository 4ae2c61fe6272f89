import { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { Dialect } from "./Dialect.ts"

// Refunds (docs/refunds.md): a transfer keeps how much of it is refunded (its pending, unknown and succeeded
// refunds), which a CHECK bounds by its amount (a named table constraint on the servers, since MySQL 8 refuses a
// column's CHECK that names another column; SQLite adds no constraint to a table, but takes that column CHECK and
// tests it on ADD COLUMN); each refund is a row, reconciled as transfers are; a key may answer with the refund its
// request made. Nothing references transfers by foreign key (SQLite rebuilds
// a table to change its CHECKs, and a reference would stop the DROP): a refund's transfer is its transfer_id.
export const m0009_refunds = Effect.gen(function*() {
  const sql = yield* SqlClient
  const { mysql, pg, types: T, where } = yield* Dialect
  const bounded = sql.literal("amount_refunded >= 0 AND amount_refunded <= amount")
  if (pg || mysql) {
    yield* sql`ALTER TABLE transfers ADD COLUMN amount_refunded ${T.money} NOT NULL DEFAULT 0,
      ADD CONSTRAINT transfers_amount_refunded_check CHECK (${bounded})`
  } else {
    yield* sql`ALTER TABLE transfers ADD COLUMN amount_refunded ${T.money} NOT NULL DEFAULT 0 CHECK (${bounded})`
  }
  yield* sql`CREATE TABLE refunds (
    id ${T.key} PRIMARY KEY,
    transfer_id ${T.key} NOT NULL,
    client_id ${T.key} NOT NULL REFERENCES api_clients (id),
    amount ${T.money} NOT NULL CHECK (amount > 0),
    currency TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'unknown', 'succeeded', 'failed')),
    reason TEXT CHECK (reason IN ('duplicate', 'fraudulent', 'requested_by_customer')),
    failure_reason TEXT CHECK (failure_reason IN ('expired_or_canceled_card', 'lost_or_stolen_card', 'declined',
      'insufficient_funds', 'unknown')),
    created_at ${T.time} NOT NULL,
    idempotency_key ${T.key},
    reconciled_at ${T.time},
    reconcile_at ${T.time},
    reconcile_attempts INTEGER NOT NULL DEFAULT 0
  )${T.table}`
  // A transfer's refunds, newest first; the reconciler's unsettled ones, oldest first.
  yield* sql`CREATE INDEX refunds_transfer_created ON refunds (transfer_id, created_at, id)`
  yield* sql`CREATE INDEX refunds_unsettled ON refunds (created_at) ${where("status IN ('pending', 'unknown')")}`
  // The refund a key's request made, found by a request that takes the key over.
  yield* sql`CREATE INDEX refunds_key ON refunds (client_id, idempotency_key) ${where("idempotency_key IS NOT NULL")}`

  const answers = sql.literal("answer IN ('transfer_made', 'reference_taken', 'refund_made')")
  if (pg) {
    // 0004 added the column with its CHECK, which PostgreSQL named after the table and the column.
    yield* sql`ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_answer_check`
    yield* sql`ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_answer_check CHECK (${answers})`
    yield* sql`ALTER TABLE idempotency_keys ADD COLUMN refund_id TEXT`
  } else if (mysql) {
    // A column's CHECK is part of its definition in MariaDB: redefining the column replaces it.
    yield* sql`ALTER TABLE idempotency_keys MODIFY answer TEXT CHECK (${answers})`
    yield* sql`ALTER TABLE idempotency_keys ADD COLUMN refund_id TEXT`
  } else {
    // SQLite cannot change a CHECK: the table is rebuilt as 0002, 0004 and 0005 left it, with the new CHECK.
    const columns = "client_id, idempotency_key, request_hash, started_at, request_id, answer, transfer_id"
    yield* sql`CREATE TABLE idempotency_keys_0009 (
      client_id TEXT NOT NULL REFERENCES api_clients (id),
      idempotency_key TEXT NOT NULL,
      request_hash TEXT NOT NULL,
      started_at INTEGER NOT NULL,
      request_id TEXT,
      answer TEXT CHECK (${answers}),
      transfer_id TEXT,
      refund_id TEXT,
      PRIMARY KEY (client_id, idempotency_key)
    )`
    yield* sql`INSERT INTO idempotency_keys_0009 (${sql.literal(columns)})
      SELECT ${sql.literal(columns)} FROM idempotency_keys`
    yield* sql`DROP TABLE idempotency_keys`
    yield* sql`ALTER TABLE idempotency_keys_0009 RENAME TO idempotency_keys`
    yield* sql`CREATE INDEX idempotency_keys_started ON idempotency_keys (started_at)`
    yield* sql`CREATE INDEX idempotency_keys_unanswered ON idempotency_keys (client_id, request_hash)
      ${where("answer IS NULL")}`
  }
})
