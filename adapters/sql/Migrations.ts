import * as Migrator from "@effect/sql/Migrator"
import { SqlClient } from "@effect/sql/SqlClient"
import { Clock, Duration, Effect } from "effect"
import { m0017_webhook_attempts } from "./AttemptMigration.ts"
import { m0010_balances } from "./BalanceMigration.ts"
import { m0015_chart_indexes } from "./ChartMigration.ts"
import { Dialect } from "./Dialect.ts"
import { m0016_event_subjects } from "./EventSubjectMigration.ts"
import { m0011_indexes } from "./IndexMigration.ts"
import { m0014_outbox_sent } from "./OutboxSentMigration.ts"
import { m0019_pending_purge } from "./PurgeMigration.ts"
import { m0009_refunds } from "./RefundMigration.ts"
import { m0012_console_sessions } from "./SessionMigration.ts"
import { m0018_signup_days } from "./SignupDaysMigration.ts"
import { m0013_transfer_filters } from "./TransferFilterMigration.ts"

// One list for every database the service runs on; adapters/sql/Dialect.ts holds the few words that differ.
const m0001_subscriptions = Effect.gen(function*() {
  const sql = yield* SqlClient
  const { time, types: T, where } = yield* Dialect
  const now = yield* Clock.currentTimeMillis
  yield* sql`CREATE TABLE feeds (
    name ${T.key} PRIMARY KEY,
    title TEXT NOT NULL,
    created_at ${T.time} NOT NULL,
    updated_at ${T.time} NOT NULL
  )${T.table}`
  yield* sql`INSERT INTO feeds (name, title, created_at, updated_at) VALUES ('default', 'Newsletter', ${time(now)}, ${
    time(now)
  })`
  yield* sql`CREATE TABLE subscriptions (
    id ${T.serial},
    email TEXT NOT NULL,
    email_key ${T.key} NOT NULL,
    name TEXT NOT NULL,
    feed ${T.key} NOT NULL REFERENCES feeds (name),
    status ${T.key} NOT NULL CHECK (status IN ('pending', 'active', 'unsubscribed')),
    created_at ${T.time} NOT NULL,
    updated_at ${T.time} NOT NULL,
    UNIQUE (email_key, feed)
  )${T.table}`
  yield* sql`CREATE TABLE subscription_tokens (
    hash ${T.key} PRIMARY KEY,
    subscription_id ${T.reference} NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
    purpose TEXT NOT NULL CHECK (purpose IN ('confirm', 'unsubscribe')),
    created_at ${T.time} NOT NULL,
    expires_at ${T.time},
    used_at ${T.time}
  )${T.table}`
  yield* sql`CREATE INDEX subscription_tokens_subscription ON subscription_tokens (subscription_id)`
  // The transactional outbox: a row is written in the same transaction as the subscription it mails.
  // next_attempt_at NULL with sent_at NULL means the worker gave up (last_error says why).
  yield* sql`CREATE TABLE mail_outbox (
    id ${T.serial},
    kind TEXT NOT NULL CHECK (kind IN ('confirmation')),
    subscription_id ${T.reference} NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
    created_at ${T.time} NOT NULL,
    next_attempt_at ${T.time},
    attempts INTEGER NOT NULL DEFAULT 0,
    sent_at ${T.time},
    last_error TEXT
  )${T.table}`
  yield* sql`CREATE INDEX mail_outbox_due ON mail_outbox (next_attempt_at) ${where("sent_at IS NULL")}`
  yield* sql`CREATE INDEX mail_outbox_subscription ON mail_outbox (subscription_id, created_at)`
})

// Card data rule: these tables hold brand, last four, expiry and a keyed fingerprint of the card; never
// the card number, the CVC or the authentication value.
const m0002_transfers = Effect.gen(function*() {
  const sql = yield* SqlClient
  const { types: T } = yield* Dialect
  yield* sql`CREATE TABLE api_clients (
    id ${T.key} PRIMARY KEY,
    name TEXT NOT NULL,
    key_hash ${T.key} NOT NULL UNIQUE,
    created_at ${T.time} NOT NULL
  )${T.table}`
  yield* sql`CREATE TABLE transfers (
    id ${T.key} PRIMARY KEY,
    client_id ${T.key} NOT NULL REFERENCES api_clients (id),
    reference ${T.key} NOT NULL,
    amount ${T.money} NOT NULL CHECK (amount > 0),
    currency TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'declined')),
    sender_first_name TEXT NOT NULL,
    sender_middle_name TEXT,
    sender_email TEXT NOT NULL,
    card_brand TEXT NOT NULL,
    card_last4 TEXT NOT NULL,
    card_exp_month INTEGER NOT NULL,
    card_exp_year INTEGER NOT NULL,
    card_fingerprint TEXT NOT NULL,
    recipient_first_name TEXT NOT NULL,
    recipient_middle_name TEXT,
    recipient_email TEXT NOT NULL,
    recipient_merchant_id TEXT NOT NULL,
    failure_code TEXT,
    decline_code TEXT,
    authorization_code TEXT,
    created_at ${T.time} NOT NULL,
    UNIQUE (client_id, reference)
  )${T.table}`
  yield* sql`CREATE INDEX transfers_client_created ON transfers (client_id, created_at, id)`
  yield* sql`CREATE TABLE idempotency_keys (
    client_id ${T.key} NOT NULL REFERENCES api_clients (id),
    idempotency_key ${T.key} NOT NULL,
    request_hash ${T.key} NOT NULL,
    started_at ${T.time} NOT NULL,
    response_status INTEGER,
    response_body TEXT,
    completed_at ${T.time},
    PRIMARY KEY (client_id, idempotency_key)
  )${T.table}`
  yield* sql`CREATE TABLE service_secrets (
    name ${T.key} PRIMARY KEY,
    value TEXT NOT NULL
  )${T.table}`
})

// Feeds are deleted softly, so the collection's Last-Modified moves on a deletion too.
const m0003_feed_deletion = Effect.gen(function*() {
  const sql = yield* SqlClient
  const { types: T } = yield* Dialect
  yield* sql`ALTER TABLE feeds ADD COLUMN deleted_at ${T.time}`
})

// A key keeps its answer as domain facts (the transfer made, or the one holding the reference, and the first
// request's id) instead of the HTTP response: replays are rendered again from them. Kept responses are turned
// into facts where their bodies tell them; a response that cannot be (none should remain) is dropped, so
// that its retry runs again and meets the transfer's reference.
const m0004_idempotency_answers = Effect.gen(function*() {
  const sql = yield* SqlClient
  const { mysql, pg } = yield* Dialect
  const field = (...path: ReadonlyArray<string>) =>
    sql.literal(
      pg
        ? `(response_body::json #>> '{${path.join(",")}}')`
        : mysql
        ? `json_unquote(json_extract(response_body, '$.${path.join(".")}'))`
        : `json_extract(response_body, '$.${path.join(".")}')`
    )
  const message = field("error", "message")
  yield* sql`ALTER TABLE idempotency_keys ADD COLUMN request_id TEXT`
  yield* sql`ALTER TABLE idempotency_keys ADD COLUMN answer TEXT CHECK (answer IN ('transfer_made', 'reference_taken'))`
  yield* sql`ALTER TABLE idempotency_keys ADD COLUMN transfer_id TEXT`
  yield* sql`UPDATE idempotency_keys SET answer = 'transfer_made', transfer_id = ${field("payment_transfer", "id")},
    request_id = '' WHERE response_status = 201`
  // "A transfer with this reference exists: tr_<24>." ends with the id and a full stop.
  yield* sql`UPDATE idempotency_keys SET answer = 'reference_taken', request_id = ${field("error", "request_id")},
    transfer_id = substr(${message}, length(${message}) - 27, 27)
    WHERE response_status = 409 AND ${field("error", "code")} = 'duplicate_reference'`
  // A 402 names no transfer: it is the client's decline with that code completed at its creation time.
  yield* sql`UPDATE idempotency_keys SET answer = 'transfer_made', request_id = ${field("error", "request_id")},
    transfer_id = (SELECT t.id FROM transfers t WHERE t.client_id = idempotency_keys.client_id
      AND t.created_at = idempotency_keys.completed_at AND t.status = 'declined'
      AND t.failure_code = ${field("error", "code")} ORDER BY t.id LIMIT 1)
    WHERE response_status = 402`
  yield* sql`DELETE FROM idempotency_keys WHERE response_status IS NOT NULL AND transfer_id IS NULL`
  for (const column of ["response_status", "response_body", "completed_at"]) {
    yield* sql`ALTER TABLE idempotency_keys DROP COLUMN ${sql.literal(column)}`
  }
})

// Transfers whose outcome is not known (docs/unknown-outcomes.md): the status `unknown`, the request's keyed
// hash (a retry is recognised by it, with or without its key), when the reconciler settled it, and its
// reconciliation state (how often the network was asked, and when it is due or leased until). SQLite cannot
// change a CHECK constraint, so its table is rebuilt; nothing references transfers by foreign key.
const m0005_unknown_outcomes = Effect.gen(function*() {
  const sql = yield* SqlClient
  const { mysql, pg, types: T, where } = yield* Dialect
  const statuses = sql.literal("status IN ('pending', 'unknown', 'approved', 'declined')")
  const added = [
    "request_hash TEXT",
    `reconciled_at ${pg ? "TIMESTAMPTZ" : mysql ? "BIGINT" : "INTEGER"}`,
    "reconcile_attempts INTEGER NOT NULL DEFAULT 0",
    `reconcile_at ${pg ? "TIMESTAMPTZ" : mysql ? "BIGINT" : "INTEGER"}`
  ]
  if (pg) {
    yield* sql`ALTER TABLE transfers DROP CONSTRAINT transfers_status_check`
    yield* sql`ALTER TABLE transfers ADD CONSTRAINT transfers_status_check CHECK (${statuses})`
    for (const column of added) yield* sql`ALTER TABLE transfers ADD COLUMN ${sql.literal(column)}`
  } else if (mysql) {
    // A column's CHECK is part of its definition in MariaDB: redefining the column replaces it.
    yield* sql`ALTER TABLE transfers MODIFY status TEXT NOT NULL CHECK (${statuses})`
    for (const column of added) yield* sql`ALTER TABLE transfers ADD COLUMN ${sql.literal(column)}`
  } else {
    const columns = `id, client_id, reference, amount, currency, status, sender_first_name, sender_middle_name,
      sender_email, card_brand, card_last4, card_exp_month, card_exp_year, card_fingerprint, recipient_first_name,
      recipient_middle_name, recipient_email, recipient_merchant_id, failure_code, decline_code,
      authorization_code, created_at`
    yield* sql`CREATE TABLE transfers_0005 (
      id TEXT PRIMARY KEY,
      client_id TEXT NOT NULL REFERENCES api_clients (id),
      reference TEXT NOT NULL,
      amount ${T.money} NOT NULL CHECK (amount > 0),
      currency TEXT NOT NULL,
      status TEXT NOT NULL CHECK (${statuses}),
      sender_first_name TEXT NOT NULL,
      sender_middle_name TEXT,
      sender_email TEXT NOT NULL,
      card_brand TEXT NOT NULL,
      card_last4 TEXT NOT NULL,
      card_exp_month INTEGER NOT NULL,
      card_exp_year INTEGER NOT NULL,
      card_fingerprint TEXT NOT NULL,
      recipient_first_name TEXT NOT NULL,
      recipient_middle_name TEXT,
      recipient_email TEXT NOT NULL,
      recipient_merchant_id TEXT NOT NULL,
      failure_code TEXT,
      decline_code TEXT,
      authorization_code TEXT,
      created_at ${T.time} NOT NULL,
      ${sql.literal(added.join(", "))},
      UNIQUE (client_id, reference)
    )${T.table}`
    yield* sql`INSERT INTO transfers_0005 (${sql.literal(columns)}) SELECT ${sql.literal(columns)} FROM transfers`
    yield* sql`DROP TABLE transfers`
    yield* sql`ALTER TABLE transfers_0005 RENAME TO transfers`
    yield* sql`CREATE INDEX transfers_client_created ON transfers (client_id, created_at, id)`
  }
  yield* sql`CREATE INDEX transfers_unsettled ON transfers (created_at) ${where("status IN ('pending', 'unknown')")}`
  // Key expiry (pruned by age) and the keys a reconciled transfer answers (unanswered, by request hash).
  yield* sql`CREATE INDEX idempotency_keys_started ON idempotency_keys (started_at)`
  yield* sql`CREATE INDEX idempotency_keys_unanswered ON idempotency_keys (client_id, request_hash)
    ${where("answer IS NULL")}`
})

// Events and their webhook deliveries (docs/webhooks.md). An event is written, with one delivery per endpoint
// that asked for it, in the transaction of the change it tells of. `body` is the exact JSON every delivery
// sends and signs. An endpoint's backoff is kept on its row (failing_since, retry_at), so every instance
// honours it; its secret is kept as it is, since signing needs it.
const m0006_webhooks = Effect.gen(function*() {
  const sql = yield* SqlClient
  const { types: T, where } = yield* Dialect
  yield* sql`CREATE TABLE webhook_endpoints (
    id ${T.key} PRIMARY KEY,
    owner ${T.key} NOT NULL,
    url TEXT NOT NULL,
    enabled_events TEXT NOT NULL,
    secret TEXT NOT NULL,
    created_at ${T.time} NOT NULL,
    failing_since ${T.time},
    retry_at ${T.time},
    last_error TEXT,
    disabled_at ${T.time},
    disabled_reason TEXT
  )${T.table}`
  yield* sql`CREATE INDEX webhook_endpoints_owner ON webhook_endpoints (owner)`
  yield* sql`CREATE TABLE events (
    id ${T.key} PRIMARY KEY,
    type TEXT NOT NULL,
    owner ${T.key} NOT NULL,
    created_at ${T.time} NOT NULL,
    body TEXT NOT NULL
  )${T.table}`
  yield* sql`CREATE INDEX events_owner_created ON events (owner, created_at, id)`
  yield* sql`CREATE TABLE webhook_deliveries (
    id ${T.serial},
    event_id ${T.key} NOT NULL REFERENCES events (id),
    endpoint_id ${T.key} NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    created_at ${T.time} NOT NULL,
    next_attempt_at ${T.time} NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    delivered_at ${T.time},
    last_error TEXT
  )${T.table}`
  yield* sql`CREATE INDEX webhook_deliveries_due ON webhook_deliveries (endpoint_id, next_attempt_at)
    ${where("delivered_at IS NULL")}`
  yield* sql`CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (next_attempt_at) ${
    where("delivered_at IS NULL")
  }`
})

// The operator's listing and export read a feed's subscriptions in id order; the purge of unconfirmed signups
// reads the pending ones by the time of their last signup.
const m0007_subscriber_listing = Effect.gen(function*() {
  const sql = yield* SqlClient
  const { where } = yield* Dialect
  yield* sql`CREATE INDEX subscriptions_feed_status ON subscriptions (feed, status, id)`
  yield* sql`CREATE INDEX subscriptions_pending ON subscriptions (updated_at) ${where("status = 'pending'")}`
})

// Rate limits shared by the instances on one server database (adapters/postgres/PgRateLimiterStore.ts,
// adapters/mariadb/MariaDbRateLimiterStore.ts): one token bucket per key. UNLOGGED on PostgreSQL: a draw writes
// no WAL, so its commit waits for no fsync (buckets are lost in a crash of PostgreSQL, which only refills them).
// SQLite runs one process, whose limits stay in memory.
const m0008_rate_limits = Effect.gen(function*() {
  const sql = yield* SqlClient
  const { mysql, pg } = yield* Dialect
  if (mysql) {
    yield* sql`CREATE TABLE rate_limits (
      bucket VARCHAR(255) PRIMARY KEY,
      tokens DOUBLE NOT NULL,
      refilled_at BIGINT NOT NULL
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`
  }
  if (!pg) return
  yield* sql`CREATE UNLOGGED TABLE rate_limits (
    key TEXT PRIMARY KEY,
    tokens DOUBLE PRECISION NOT NULL,
    refilled_at TIMESTAMPTZ NOT NULL,
    consumed BOOLEAN NOT NULL
  )`
})

export const migrations = Migrator.fromRecord({
  "0001_subscriptions": m0001_subscriptions,
  "0002_transfers": m0002_transfers,
  "0003_feed_deletion": m0003_feed_deletion,
  "0004_idempotency_answers": m0004_idempotency_answers,
  "0005_unknown_outcomes": m0005_unknown_outcomes,
  "0006_webhooks": m0006_webhooks,
  "0007_subscriber_listing": m0007_subscriber_listing,
  "0008_rate_limits": m0008_rate_limits,
  "0009_refunds": m0009_refunds,
  "0010_balances": m0010_balances,
  "0011_indexes": m0011_indexes,
  "0012_console_sessions": m0012_console_sessions,
  "0013_transfer_filters": m0013_transfer_filters,
  "0014_outbox_sent": m0014_outbox_sent,
  "0015_chart_indexes": m0015_chart_indexes,
  "0016_event_subjects": m0016_event_subjects,
  "0017_webhook_attempts": m0017_webhook_attempts,
  "0018_signup_days": m0018_signup_days,
  "0019_pending_purge": m0019_pending_purge
})

const migrate = Migrator.make({})({ loader: migrations })

// Instances starting together on one server database would race creating the migrations table; a lock held
// by a connection of its own (PostgreSQL's session advisory lock, MariaDB's GET_LOCK) runs them one after the
// other. (On SQLite, BEGIN IMMEDIATE already does.)
const MigrationLock = "7061797375620001"
export const runMigrations = Effect.gen(function*() {
  const sql = yield* SqlClient
  const { mysql, pg } = yield* Dialect
  if (!pg && !mysql) return yield* migrate
  const unlock = pg ? `SELECT pg_advisory_unlock(${MigrationLock})` : `SELECT RELEASE_LOCK('paysub_migrations')`
  return yield* Effect.scoped(Effect.gen(function*() {
    const lockHolder = yield* sql.reserve
    // On PostgreSQL the lock is tried every 100 ms rather than waited for in one statement, which
    // PG_STATEMENT_TIMEOUT_MS would cancel while another instance migrates; for 120 s at most, as on MariaDB.
    if (pg) {
      const tryLock = Effect.map(
        lockHolder.execute(`SELECT pg_try_advisory_lock(${MigrationLock}) AS locked`, [], undefined),
        (rows) => rows[0]?.locked === true
      )
      let locked = yield* tryLock
      for (let tries = 1; !locked && tries < 1_200; tries++) {
        yield* Effect.sleep(Duration.millis(100))
        locked = yield* tryLock
      }
      if (!locked) return yield* Effect.dieMessage("another instance held the migrations' lock for 120 s")
    } else yield* lockHolder.executeRaw(`SELECT GET_LOCK('paysub_migrations', 120)`, [])
    return yield* migrate.pipe(Effect.ensuring(Effect.ignore(lockHolder.executeRaw(unlock, []))))
  }))
})
