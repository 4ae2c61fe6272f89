// Every statement the service sends PostgreSQL while the storage contract suites run, asked for its plan (EXPLAIN,
// with the parameters it was sent with) on a migrated database: none may read rows of a table that grows with the
// business that it does not return, beyond a page. The database holds rows as a year of business spreads them
// (many clients, feeds and owners; most transfers settled, most mails sent and deliveries delivered), analyzed,
// so that the planner chooses as it would there; and with enable_seqscan off, a table is read whole only where no
// index can serve the statement at all.
import { assert, describe, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import pg, { type Client } from "pg"
import { afterAll, beforeAll } from "vitest"
import { layer as PgClientLayer } from "../../adapters/postgres/PgClient.ts"
import { runMigrations } from "../../adapters/sql/Migrations.ts"
import { createTestDatabase, postgresEnabled, postgresSkipReason, type TestDatabase } from "../support/Postgres.ts"
import { Capture, capturePostgres, growing, type Issued, readBacklogs, serviceStatements } from "./IndexedStatements.ts"
import { pgClient, tempDatabase, tempPgStores, tempPgWebhookStores } from "./PgStores.ts"
import { withSqlRawRows } from "./RawRows.ts"
import { refundStoreContract } from "./RefundStore.contract.ts"
import { subscriptionStoreContract } from "./SubscriptionStore.contract.ts"
import { transferStoreContract } from "./TransferStore.contract.ts"
import { webhookStoreContract } from "./WebhookStore.contract.ts"

const capture = new Capture()
const migrations = new Set<string>()
let planned: TestDatabase | undefined

beforeAll(async () => {
  if (!postgresEnabled) return
  capturePostgres(capture)
  planned = await createTestDatabase()
  await Effect.runPromise(Effect.scoped(Effect.provide(runMigrations, PgClientLayer(Redacted.make(planned.url)))))
  for (const sql of capture.issued.keys()) migrations.add(sql)
  capture.issued.clear()
})
afterAll(async () => {
  capture.restore()
  await planned?.drop()
})

interface PlanNode {
  readonly "Node Type": string
  readonly "Relation Name"?: string
  readonly "Index Name"?: string
  readonly "Index Cond"?: string
  readonly Filter?: string
  readonly Plans?: ReadonlyArray<PlanNode>
}

// A year of business in miniature, as statistics see it.
const seed = [
  `INSERT INTO api_clients (id, name, key_hash, created_at)
   SELECT 'cl_' || i, 'Client ' || i, 'hash-' || i, now() FROM generate_series(1, 500) AS s(i)`,
  `INSERT INTO transfers (id, client_id, reference, amount, currency, status, sender_first_name, sender_email,
     card_brand, card_last4, card_exp_month, card_exp_year, card_fingerprint, recipient_first_name, recipient_email,
     recipient_merchant_id, created_at, request_hash)
   SELECT 'tr_' || i, 'cl_' || (i % 500 + 1), 'ref-' || i, 100 + i % 1000, 'USD',
     CASE WHEN i % 1000 = 0 THEN 'unknown' WHEN i % 10 = 0 THEN 'declined' ELSE 'approved' END,
     'Ann', 'a@example.com', 'visa', '4242', 12, 2030, 'fp', 'Bob', 'b@example.com', 'm-' || (i % 7),
     now() - i * interval '1 minute', 'hash-' || i
   FROM generate_series(1, 50000) AS s(i)`,
  `INSERT INTO idempotency_keys (client_id, idempotency_key, request_hash, started_at, request_id, answer, transfer_id)
   SELECT 'cl_' || (i % 500 + 1), 'key-' || i, 'hash-' || i, now() - i * interval '1 minute', 'req-' || i,
     'transfer_made', 'tr_' || i FROM generate_series(1, 50000) AS s(i)`,
  `INSERT INTO refunds (id, transfer_id, client_id, amount, currency, status, created_at, idempotency_key)
   SELECT 're_' || i, 'tr_' || (i * 3), 'cl_' || (i * 3 % 500 + 1), 10, 'USD',
     CASE WHEN i % 500 = 0 THEN 'unknown' ELSE 'succeeded' END, now() - i * interval '1 minute',
     CASE WHEN i % 2 = 0 THEN 'rkey-' || i END
   FROM generate_series(1, 10000) AS s(i)`,
  `INSERT INTO balances (client_id, merchant_id, currency, amount)
   SELECT 'cl_' || c, 'm-' || m, 'USD', 1000 FROM generate_series(1, 500) AS c, generate_series(0, 6) AS m`,
  `INSERT INTO feeds (name, title, created_at, updated_at)
   SELECT 'feed-' || i, 'Feed ' || i, now(), now() FROM generate_series(1, 50) AS s(i)`,
  `INSERT INTO subscriptions (email, email_key, name, feed, status, created_at, updated_at)
   SELECT 'r' || i || '@example.com', 'r' || i || '@example.com', 'Reader',
     CASE WHEN i % 50 = 0 THEN 'default' ELSE 'feed-' || (i % 50) END,
     CASE WHEN i % 100 = 0 THEN 'pending' WHEN i % 7 = 0 THEN 'unsubscribed' ELSE 'active' END,
     now() - i * interval '1 minute', now() - i * interval '1 minute'
   FROM generate_series(1, 50000) AS s(i)`,
  `INSERT INTO signup_days (day, feed, slot, signups)
   SELECT d, 'feed-' || f, s, 3 FROM generate_series(19800, 20164) AS d, generate_series(1, 50) AS f,
     generate_series(0, 7) AS s`,
  `INSERT INTO subscription_tokens (hash, subscription_id, purpose, created_at)
   SELECT 'tok-' || id, id, 'confirm', created_at FROM subscriptions`,
  `INSERT INTO mail_outbox (kind, subscription_id, created_at, next_attempt_at, attempts, sent_at)
   SELECT 'confirmation', id, created_at, CASE WHEN id % 1000 = 0 THEN created_at END, 1,
     CASE WHEN id % 1000 <> 0 THEN created_at END FROM subscriptions`,
  `INSERT INTO webhook_endpoints (id, owner, url, enabled_events, secret, created_at)
   SELECT 'we_' || i, 'cl_' || (i % 500 + 1), 'https://hooks.example.com/' || i, '*', 'whsec', now()
   FROM generate_series(1, 1000) AS s(i)`,
  `INSERT INTO events (id, type, owner, created_at, body)
   SELECT 'evt_' || i, (ARRAY['transfer.approved', 'transfer.declined', 'refund.created', 'refund.updated',
     'transfer.unknown'])[i % 5 + 1], 'cl_' || (i % 500 + 1), now() - i * interval '1 minute', '{}'
   FROM generate_series(1, 50000) AS s(i)`,
  `INSERT INTO webhook_deliveries (event_id, endpoint_id, created_at, next_attempt_at, attempts, delivered_at)
   SELECT 'evt_' || i, 'we_' || (i % 1000 + 1), now(), now(), 1, CASE WHEN i % 1000 <> 0 THEN now() END
   FROM generate_series(1, 50000) AS s(i)`,
  "ANALYZE"
]

const nodes = (node: PlanNode): ReadonlyArray<PlanNode> => [node, ...(node.Plans ?? []).flatMap(nodes)]

// An equality on a unique index: one row.
const oneRow = (node: PlanNode, unique: ReadonlySet<string>) =>
  unique.has(node["Index Name"] ?? "") && node["Index Cond"] !== undefined && !/[<>]/.test(node["Index Cond"])

// The plan's steps that read rows of a growing table it does not return, beyond a page:
// - a Seq Scan of it: with enable_seqscan off, no index could serve the statement;
// - an index scan without an Index Cond (the whole index), unless the index is partial (it holds only the rows of
//   its condition: a backlog such as the unsettled transfers);
// - a Sort of its rows under a Limit (but of a partial index's or of single rows): every matching row is read to
//   be sorted.
// A Filter after an Index Cond is the planner's bet on how often a value occurs (it reads the active subscribers
// in id order, since most are): the rows an index leaves to filter are judged on SQLite, whose plans follow the
// indexes alone (IndexedStatements.sqlite.test.ts).
const pgWaste = (plan: PlanNode, partial: ReadonlySet<string>, unique: ReadonlySet<string>, limited: boolean) =>
  nodes(plan).flatMap((node): ReadonlyArray<string> => {
    if (node["Node Type"] === "Sort" && limited) {
      const sorted = nodes(node).find((n) =>
        /Scan/.test(n["Node Type"]) && growing.has(n["Relation Name"] ?? "") && !partial.has(n["Index Name"] ?? "") &&
        !oneRow(n, unique)
      )
      return sorted === undefined ? [] : [`Sort of ${sorted["Relation Name"]}`]
    }
    const table = node["Relation Name"]
    if (table === undefined || !growing.has(table)) return []
    if (node["Node Type"] === "Seq Scan") return [`Seq Scan on ${table}`]
    const index = node["Index Name"]
    return index === undefined || partial.has(index) || node["Index Cond"] !== undefined
      ? []
      : [`${node["Node Type"]} of all ${index}`]
  })

const explain = async (client: Client, { params, sql }: Issued) => {
  const { rows } = await client.query(`EXPLAIN (FORMAT JSON) ${sql}`, params as Array<unknown>)
  return (rows[0]["QUERY PLAN"] as Array<{ Plan: PlanNode }>)[0]!.Plan
}

describe.skipIf(!postgresEnabled)(
  `PostgreSQL: the statements the service issues${postgresEnabled ? "" : ` (skipped: ${postgresSkipReason})`}`,
  () => {
    transferStoreContract("PostgreSQL", withSqlRawRows(tempPgStores))
    refundStoreContract("PostgreSQL", withSqlRawRows(tempPgStores))
    subscriptionStoreContract("PostgreSQL", withSqlRawRows(tempPgStores))
    webhookStoreContract("PostgreSQL", tempPgWebhookStores)
    it.scoped("the /metrics backlogs", () =>
      Effect.gen(function*() {
        const backlogs = yield* readBacklogs(pgClient((yield* tempDatabase).url))
        assert.strictEqual(backlogs.mail.depth, 0)
      }))

    it("none reads rows of a growing table it does not return, beyond a page", async () => {
      const statements = serviceStatements(capture, migrations)
      capture.restore()
      assert.isAbove(statements.length, 40)
      const client = new pg.Client({ connectionString: planned!.url })
      await client.connect()
      try {
        for (const statement of seed) await client.query(statement)
        await client.query("SET enable_seqscan = off")
        const indexes = await client.query<{ name: string; partial: boolean; unique: boolean }>(
          `SELECT c.relname AS name, i.indpred IS NOT NULL AS partial, i.indisunique AS unique
           FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid`
        )
        const partial = new Set(indexes.rows.filter((i) => i.partial).map((i) => i.name))
        const unique = new Set(indexes.rows.filter((i) => i.unique).map((i) => i.name))
        const waste: Array<string> = []
        for (const statement of statements) {
          const plan = await explain(client, statement)
          const limited = /\bLIMIT\b/i.test(statement.sql)
          for (const w of pgWaste(plan, partial, unique, limited)) waste.push(`${w}\n    in: ${statement.sql}`)
        }
        assert.deepStrictEqual(waste, [])
      } finally {
        await client.end()
      }
    }, 120_000)
  }
)
