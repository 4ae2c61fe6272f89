// Every statement the service sends MariaDB while the storage contract suites run, asked for its plan (EXPLAIN,
// with the parameters it was sent with) on a migrated database that holds rows as a year of business spreads them,
// analyzed: none may read a table that grows with the business whole (type ALL) or through a whole index (type
// index), nor sort more than a page of its rows to return a page (Using filesort under a LIMIT).
import { SqlClient } from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import mysql from "mysql2/promise"
import { afterAll, beforeAll } from "vitest"
import { layer as MariaDbClient } from "../../adapters/mariadb/MariaDbClient.ts"
import { layer as MariaDbSubscriptionStore } from "../../adapters/mariadb/MariaDbSubscriptionStore.ts"
import { layer as MariaDbTransferStore } from "../../adapters/mariadb/MariaDbTransferStore.ts"
import { layer as MariaDbWebhookStore } from "../../adapters/mariadb/MariaDbWebhookStore.ts"
import { runMigrations } from "../../adapters/sql/Migrations.ts"
import { EventViewsLive } from "../../apps/http/webhooks/EventViewsLive.ts"
import { storesOver } from "../../core/shared/Stores.ts"
import type { EventViews } from "../../core/webhooks/EventViews.ts"
import { createTestDatabase, mariadbEnabled, mariadbSkipReason, type TestDatabase } from "../support/MariaDb.ts"
import { Capture, captureMariaDb, growing, type Issued, readBacklogs, serviceStatements } from "./IndexedStatements.ts"
import { withSqlRawRows } from "./RawRows.ts"
import { refundStoreContract } from "./RefundStore.contract.ts"
import { subscriptionStoreContract } from "./SubscriptionStore.contract.ts"
import { transferStoreContract } from "./TransferStore.contract.ts"
import { webhookStoreContract } from "./WebhookStore.contract.ts"

const capture = new Capture()
const migrations = new Set<string>()
let planned: TestDatabase | undefined
let shared: TestDatabase | undefined

beforeAll(async () => {
  if (!mariadbEnabled) return
  captureMariaDb(capture)
  planned = await createTestDatabase()
  shared = await createTestDatabase()
  await Effect.runPromise(Effect.scoped(Effect.provide(runMigrations, MariaDbClient(Redacted.make(planned.url)))))
  for (const sql of capture.issued.keys()) migrations.add(sql)
  capture.issued.clear()
})
afterAll(async () => {
  capture.restore()
  await planned?.drop()
  await shared?.drop()
})

// The tests' own statements: emptying the shared database between tests (as MariaDbStore.test.ts does).
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
const byEmptying = (sql: string) =>
  /^(DELETE FROM `?\w+`?|DELETE FROM feeds WHERE name <> 'default'|UPDATE feeds SET deleted_at = NULL, title = 'Newsletter')$/
    .test(sql.trim())

const onShared = <A, E>(layer: Layer.Layer<A, E, SqlClient | EventViews>): Layer.Layer<A | SqlClient, unknown> =>
  Layer.unwrapEffect(Effect.sync(() =>
    layer.pipe(
      Layer.provide(EventViewsLive),
      Layer.provide(Layer.effectDiscard(Effect.zipRight(runMigrations, emptied))),
      Layer.provideMerge(MariaDbClient(Redacted.make(shared!.url)))
    )
  ))
const stores = storesOver(Layer.merge(MariaDbSubscriptionStore, MariaDbTransferStore))

// A year of business in miniature, as statistics see it.
const seed = [
  `INSERT INTO api_clients (id, name, key_hash, created_at)
   SELECT CONCAT('cl_', seq), CONCAT('Client ', seq), CONCAT('hash-', seq), 0 FROM seq_1_to_500`,
  `INSERT INTO transfers (id, client_id, reference, amount, currency, status, sender_first_name, sender_email,
     card_brand, card_last4, card_exp_month, card_exp_year, card_fingerprint, recipient_first_name, recipient_email,
     recipient_merchant_id, created_at, request_hash)
   SELECT CONCAT('tr_', seq), CONCAT('cl_', seq % 500 + 1), CONCAT('ref-', seq), 100 + seq % 1000, 'USD',
     CASE WHEN seq % 1000 = 0 THEN 'unknown' WHEN seq % 10 = 0 THEN 'declined' ELSE 'approved' END,
     'Ann', 'a@example.com', 'visa', '4242', 12, 2030, 'fp', 'Bob', 'b@example.com', CONCAT('m-', seq % 7),
     1700000000000 - seq * 60000, CONCAT('hash-', seq)
   FROM seq_1_to_50000`,
  `INSERT INTO idempotency_keys (client_id, idempotency_key, request_hash, started_at, request_id, answer, transfer_id)
   SELECT CONCAT('cl_', seq % 500 + 1), CONCAT('key-', seq), CONCAT('hash-', seq), 1700000000000 - seq * 60000,
     CONCAT('req-', seq), 'transfer_made', CONCAT('tr_', seq) FROM seq_1_to_50000`,
  `INSERT INTO refunds (id, transfer_id, client_id, amount, currency, status, created_at, idempotency_key)
   SELECT CONCAT('re_', seq), CONCAT('tr_', seq * 3), CONCAT('cl_', seq * 3 % 500 + 1), 10, 'USD',
     CASE WHEN seq % 500 = 0 THEN 'unknown' ELSE 'succeeded' END, 1700000000000 - seq * 60000,
     CASE WHEN seq % 2 = 0 THEN CONCAT('rkey-', seq) END
   FROM seq_1_to_10000`,
  `INSERT INTO balances (client_id, merchant_id, currency, amount)
   SELECT CONCAT('cl_', c.seq), CONCAT('m-', m.seq), 'USD', 1000 FROM seq_1_to_500 c, seq_0_to_6 m`,
  `INSERT INTO feeds (name, title, created_at, updated_at)
   SELECT CONCAT('feed-', seq), CONCAT('Feed ', seq), 0, 0 FROM seq_1_to_49`,
  `INSERT INTO subscriptions (email, email_key, name, feed, status, created_at, updated_at)
   SELECT CONCAT('r', seq, '@example.com'), CONCAT('r', seq, '@example.com'), 'Reader',
     CASE WHEN seq % 50 = 0 THEN 'default' ELSE CONCAT('feed-', seq % 50) END,
     CASE WHEN seq % 100 = 0 THEN 'pending' WHEN seq % 7 = 0 THEN 'unsubscribed' ELSE 'active' END,
     1700000000000 - seq * 60000, 1700000000000 - seq * 60000
   FROM seq_1_to_50000`,
  `INSERT INTO signup_days (day, feed, slot, signups)
   SELECT d.seq, CONCAT('feed-', f.seq), s.seq, 3 FROM seq_19800_to_20164 d, seq_1_to_50 f, seq_0_to_7 s`,
  `INSERT INTO subscription_tokens (hash, subscription_id, purpose, created_at)
   SELECT CONCAT('tok-', id), id, 'confirm', created_at FROM subscriptions`,
  `INSERT INTO mail_outbox (kind, subscription_id, created_at, next_attempt_at, attempts, sent_at)
   SELECT 'confirmation', id, created_at, CASE WHEN id % 1000 = 0 THEN created_at END, 1,
     CASE WHEN id % 1000 <> 0 THEN created_at END FROM subscriptions`,
  `INSERT INTO webhook_endpoints (id, owner, url, enabled_events, secret, created_at)
   SELECT CONCAT('we_', seq), CONCAT('cl_', seq % 500 + 1), CONCAT('https://hooks.example.com/', seq), '*', 'whsec', 0
   FROM seq_1_to_1000`,
  `INSERT INTO events (id, type, owner, created_at, body)
   SELECT CONCAT('evt_', seq), ELT(seq % 5 + 1, 'transfer.approved', 'transfer.declined', 'refund.created',
     'refund.updated', 'transfer.unknown'), CONCAT('cl_', seq % 500 + 1), 1700000000000 - seq * 60000, '{}'
   FROM seq_1_to_50000`,
  `INSERT INTO webhook_deliveries (event_id, endpoint_id, created_at, next_attempt_at, attempts, delivered_at)
   SELECT CONCAT('evt_', seq), CONCAT('we_', seq % 1000 + 1), 0, 0, 1, CASE WHEN seq % 1000 <> 0 THEN 0 END
   FROM seq_1_to_50000`,
  `ANALYZE TABLE transfers, idempotency_keys, refunds, balances, api_clients, feeds, subscriptions,
     subscription_tokens, mail_outbox, webhook_endpoints, events, webhook_deliveries`
]

interface ExplainRow {
  readonly select_type: string
  readonly table: string | null
  readonly type: string | null
  readonly key: string | null
  readonly rows: number | null
  readonly Extra: string | null
}

// The table an EXPLAIN row names: itself, or the growing table the statement gave that alias.
const tableOf = (sql: string, name: string) =>
  growing.has(name)
    ? name
    : [...growing].find((t) => new RegExp(`\\b${t}\\s+(?:AS\\s+)?${name}\\b`, "i").test(sql))

// Known, not yet fixed: the reconciler's claims (adapters/mariadb/MariaDbUnitOfWork.ts) force the index of the
// unsettled ones, which on MariaDB (no partial index) holds every row in created order, and read it from the oldest
// until they have their batch. FOR UPDATE SKIP LOCKED must meet the rows in created order to lock only those it
// takes (an index led by the status sorts them after reading, and locks them all: 20 concurrent claims then take
// 12 of 30); a status column that MariaDB can index whole (it is TEXT there) would give both.
const known = (table: string, row: ExplainRow, sql: string) =>
  row.type === "index" && row.key === `${table}_unsettled` && /FORCE INDEX/.test(sql)

// The plan's rows that read rows of a growing table the statement does not return, beyond a page: the table whole
// (ALL), an index whole (index), or more matching rows than a page (as the optimizer estimates them) sorted for a
// LIMIT (Using filesort). An INSERT's own row (select_type INSERT) reads nothing.
const Page = 100
const mariaDbWaste = (rows: ReadonlyArray<ExplainRow>, { sql }: Issued) => {
  const limited = /\bLIMIT\b/i.test(sql)
  return rows.flatMap((row): ReadonlyArray<string> => {
    const table = row.table === null || row.select_type === "INSERT" ? undefined : tableOf(sql, row.table)
    if (table === undefined) return []
    if (known(table, row, sql)) return []
    if (row.type === "ALL" || row.type === "index") return [`${table}: type ${row.type} (key ${row.key})`]
    return limited && /Using filesort/.test(row.Extra ?? "") && Number(row.rows ?? 0) > Page
      ? [`${table}: ${row.type} on ${row.key}, Using filesort`]
      : []
  })
}

describe.skipIf(!mariadbEnabled)(
  `MariaDB: the statements the service issues${mariadbEnabled ? "" : ` (skipped: ${mariadbSkipReason})`}`,
  () => {
    transferStoreContract("MariaDB", withSqlRawRows(() => onShared(stores)))
    refundStoreContract("MariaDB", withSqlRawRows(() => onShared(stores)))
    subscriptionStoreContract("MariaDB", withSqlRawRows(() => onShared(stores)))
    webhookStoreContract("MariaDB", () => onShared(Layer.merge(stores, MariaDbWebhookStore)))
    it.scoped("the /metrics backlogs", () =>
      Effect.gen(function*() {
        const database = yield* Effect.acquireRelease(
          Effect.promise(() => createTestDatabase()),
          (d) => Effect.promise(() => d.drop())
        )
        const backlogs = yield* readBacklogs(MariaDbClient(Redacted.make(database.url)))
        assert.strictEqual(backlogs.mail.depth, 0)
      }))

    it("none reads rows of a growing table it does not return, beyond a page", async () => {
      const statements = serviceStatements(capture, migrations).filter((s) => !byEmptying(s.sql))
      capture.restore()
      assert.isAbove(statements.length, 40)
      const connection = await mysql.createConnection({ uri: planned!.url, supportBigNumbers: true })
      try {
        for (const statement of seed) await connection.query(statement)
        const waste: Array<string> = []
        for (const statement of statements) {
          const [rows] = await connection.query(`EXPLAIN ${statement.sql}`, statement.params as Array<unknown>).catch(
            (error) => {
              throw new Error(`EXPLAIN ${statement.sql} with ${JSON.stringify(statement.params)}: ${error}`)
            }
          )
          for (const w of mariaDbWaste(rows as Array<ExplainRow>, statement)) {
            waste.push(`${w}\n    in: ${statement.sql}`)
          }
        }
        assert.deepStrictEqual(waste, [])
      } finally {
        await connection.end()
      }
    }, 120_000)
  }
)
