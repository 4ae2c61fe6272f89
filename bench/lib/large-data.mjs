// The large-data mode's rows (`npm run bench -- --large`, bench/large.mjs): a year of one merchant's business,
// written straight into a migrated database with one INSERT ... SELECT per table, as the app would have written
// it: `transfers` transfers of the database's first API client (nine in ten approved, the rest declined, to five
// recipient merchants, spread over the year before `now`), their shares added to its kept balances (decision 0050:
// what core's balanceChange adds per approved transfer), and `subscribers` subscribers of the default feed (one in
// twenty pending, signed up within the day, so the purge keeps them; one in twenty unsubscribed; the rest active).
// No idempotency keys, events, tokens or outbox rows: nothing the app reads to answer the bench's requests.
// `seedJobSqlite` and `seedJobPostgres` then write the backlog one background job works through (jobRows).
import Database from "better-sqlite3"
import pg from "pg"

const YearMs = 365 * 24 * 3600 * 1000
// The seeded rows' ids: `tr_` and 24 characters, as TransferId wants, in a range no app-made id falls in.
const IdPrefix = "tr_bench"
// The recipient merchants of the seeded transfers: m-0 to m-(RecipientMerchants - 1).
export const RecipientMerchants = 5
const IdDigits = 19

// The columns every transfer row has, and one seeded row's values in SQL over `i` (1..n): `sql` says how the
// database spells a zero-padded number and a time `back` milliseconds before now.
const transferColumns = `id, client_id, reference, amount, amount_refunded, currency, status, sender_first_name,
  sender_email, card_brand, card_last4, card_exp_month, card_exp_year, card_fingerprint, recipient_first_name,
  recipient_email, recipient_merchant_id, failure_code, decline_code, authorization_code, created_at`
const transferValues = ({ padded, timeBack }, n) =>
  `'${IdPrefix}' || ${padded("i", IdDigits)}, $client, 'large-' || i, 100 + (i * 7919) % 100000, 0, 'USD',
  CASE WHEN i % 10 = 0 THEN 'declined' ELSE 'approved' END, 'Ann', 'ann@example.com', 'visa', '4242', 12, 2030,
  'fp-bench', 'Mo', 'shop@example.com', 'm-' || (i % ${RecipientMerchants}),
  CASE WHEN i % 10 = 0 THEN 'expired_card' END, NULL, CASE WHEN i % 10 <> 0 THEN 'A' || (i % 1000000) END,
  ${timeBack(`i * ${Math.floor(YearMs / n)}`)}`
const subscriptionColumns = "email, email_key, name, feed, status, created_at, updated_at"
const subscriptionValues = ({ timeBack }, n) =>
  `'large' || i || '@example.com', 'large' || i || '@example.com', 'Reader ' || i, 'default',
  CASE WHEN i % 20 = 0 THEN 'pending' WHEN i % 20 = 1 THEN 'unsubscribed' ELSE 'active' END,
  CASE WHEN i % 20 = 0 THEN ${timeBack("(i % 1000) * 60000")} ELSE ${timeBack(`i * ${Math.floor(YearMs / n)}`)} END,
  CASE WHEN i % 20 = 0 THEN ${timeBack("(i % 1000) * 60000")} ELSE ${timeBack(`i * ${Math.floor(YearMs / n)}`)} END`
// The seeded approved transfers' sums per merchant and currency (BalanceStatuses is ["approved"]).
const seededShares = `SELECT client_id, recipient_merchant_id, currency, SUM(amount - amount_refunded) AS amount
  FROM transfers WHERE id > '${IdPrefix}' AND id < '${IdPrefix}~' AND status = 'approved'
  GROUP BY client_id, recipient_merchant_id, currency`

// How each database spells a zero-padded number and a time `ms` milliseconds before `now`, for the rows' SQL.
const sqliteSpell = (now) => ({
  padded: (x, n) => `printf('%0${n}d', ${x})`,
  timeBack: (ms) => `(${now} - (${ms}))`
})
const pgSpell = (now) => ({
  padded: (x, n) => `lpad(${x}::text, ${n}, '0')`,
  timeBack: (ms) => `(to_timestamp(${now} / 1000.0) - (${ms}) * interval '1 millisecond')`
})
// The database's first API client, whose business the rows are.
const FirstClient = "SELECT id FROM api_clients ORDER BY created_at, id LIMIT 1"

// SQLite: one transaction beside the app (WAL); times are integer milliseconds, balances decimal text.
export const seedSqlite = (file, { transfers, subscribers, now = Date.now() }) => {
  const db = new Database(file)
  try {
    db.pragma("busy_timeout = 10000")
    db.pragma("cache_size = -262144")
    const spell = sqliteSpell(now)
    const client = db.prepare(FirstClient).get()?.id
    if (client === undefined) throw new Error("no API client to seed transfers for")
    const series = (n) => `WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ${n})`
    db.transaction(() => {
      db.prepare(`${series(transfers)} INSERT INTO transfers (${transferColumns})
        SELECT ${transferValues(spell, transfers).replace("$client", "@client")} FROM s`).run({ client })
      db.prepare(`INSERT INTO balances (client_id, merchant_id, currency, amount)
        SELECT client_id, recipient_merchant_id, currency, CAST(amount AS TEXT) FROM (${seededShares}) WHERE true
        ON CONFLICT (client_id, merchant_id, currency)
        DO UPDATE SET amount = CAST(CAST(balances.amount AS INTEGER) + CAST(excluded.amount AS INTEGER) AS TEXT)`)
        .run()
      db.exec(`${series(subscribers)} INSERT INTO subscriptions (${subscriptionColumns})
        SELECT ${subscriptionValues(spell, subscribers)} FROM s`)
    })()
  } finally {
    db.close()
  }
}

// PostgreSQL: one transaction, then VACUUM ANALYZE of the two tables (what autovacuum would have done by the time
// a year of rows had come in one by one).
export const seedPostgres = async (url, { transfers, subscribers, now = Date.now() }) => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const spell = pgSpell(now)
    const owner = (await client.query(FirstClient)).rows[0]?.id
    if (owner === undefined) throw new Error("no API client to seed transfers for")
    await client.query("BEGIN")
    await client.query(
      `INSERT INTO transfers (${transferColumns})
       SELECT ${
        transferValues(spell, transfers).replace("$client", "$1")
      } FROM generate_series(1::bigint, ${transfers}) AS s(i)`,
      [owner]
    )
    await client.query(`INSERT INTO balances (client_id, merchant_id, currency, amount) ${seededShares}
      ON CONFLICT (client_id, merchant_id, currency) DO UPDATE SET amount = balances.amount + excluded.amount`)
    await client.query(`INSERT INTO subscriptions (${subscriptionColumns})
      SELECT ${subscriptionValues(spell, subscribers)} FROM generate_series(1::bigint, ${subscribers}) AS s(i)`)
    await client.query("COMMIT")
    await client.query("VACUUM ANALYZE transfers, subscriptions, balances")
  } finally {
    await client.end().catch(() => {})
  }
}

// The backlog of one background job, `count` rows as the app would have left them: "purge", pending signups of
// the default feed whose last signup is 8 to 9 days old (the purge's default age is 7), each with its
// confirmation token and its sent mail; "prune", idempotency keys of the first API client started 2 to 3 days
// ago (they expire after 24 hours), each the answer of a seeded transfer; "reconcile", transfers of that client
// whose outcome was lost (`unknown`), never asked about yet. `$series` is the series s(i), i = 1..count.
const DayMs = 24 * 3600 * 1000
const ReconcilePrefix = "tr_recon"
const jobRows = ({ padded, timeBack }, job) =>
  ({
    purge: [
      `INSERT INTO subscriptions (${subscriptionColumns})
       SELECT 'purge' || i || '@example.com', 'purge' || i || '@example.com', 'Unconfirmed ' || i, 'default',
         'pending', ${timeBack(`${8 * DayMs} + i * 500`)}, ${timeBack(`${8 * DayMs} + i * 500`)} FROM $series`,
      `INSERT INTO subscription_tokens (hash, subscription_id, purpose, created_at)
       SELECT 'purge-token-' || id, id, 'confirm', created_at FROM subscriptions
       WHERE email_key >= 'purge' AND email_key < 'purgf'`,
      `INSERT INTO mail_outbox (kind, subscription_id, created_at, attempts, sent_at)
       SELECT 'confirmation', id, created_at, 1, created_at FROM subscriptions
       WHERE email_key >= 'purge' AND email_key < 'purgf'`
    ],
    prune: [
      `INSERT INTO idempotency_keys (client_id, idempotency_key, request_hash, request_id, started_at, answer,
         transfer_id)
       SELECT $client, 'prune-' || i, 'prune-hash-' || i, 'req-prune-' || i, ${timeBack(`${2 * DayMs} + i * 500`)},
         'transfer_made', '${IdPrefix}' || ${padded("i", IdDigits)} FROM $series`
    ],
    reconcile: [
      `INSERT INTO transfers (${transferColumns})
       SELECT '${ReconcilePrefix}' || ${padded("i", IdDigits)}, $client, 'recon-' || i, 100 + i % 1000, 0, 'USD',
         'unknown', 'Ann', 'ann@example.com', 'visa', '4242', 12, 2030, 'fp-bench', 'Mo', 'shop@example.com', 'm-1',
         NULL, NULL, NULL, ${timeBack(`3600000 + i * 500`)} FROM $series`
    ]
  })[job]
export const jobNames = ["purge", "prune", "reconcile"]
const jobTables = {
  purge: "subscriptions, subscription_tokens, mail_outbox",
  prune: "idempotency_keys",
  reconcile: "transfers"
}

export const seedJobSqlite = (file, job, count, now = Date.now()) => {
  const db = new Database(file)
  try {
    db.pragma("busy_timeout = 10000")
    const spell = sqliteSpell(now)
    const client = db.prepare(FirstClient).get()?.id
    const series = `WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ${count})`
    db.transaction(() => {
      for (const statement of jobRows(spell, job)) {
        const text = statement.includes("$series") ? `${series} ${statement.replace("$series", "s")}` : statement
        db.prepare(text.replace("$client", "@client")).run(text.includes("$client") ? { client } : {})
      }
    })()
  } finally {
    db.close()
  }
}

export const seedJobPostgres = async (url, job, count, now = Date.now()) => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const spell = pgSpell(now)
    const owner = (await client.query(FirstClient)).rows[0]?.id
    await client.query("BEGIN")
    for (const statement of jobRows(spell, job)) {
      const text = statement.replace("$series", `generate_series(1::bigint, ${count}) AS s(i)`)
      await client.query(text.replace("$client", "$1"), text.includes("$client") ? [owner] : [])
    }
    await client.query("COMMIT")
    await client.query(`VACUUM ANALYZE ${jobTables[job]}`)
  } finally {
    await client.end().catch(() => {})
  }
}

// A seeded transfer's id: the large mode pages the transfer list from the middle of the year with it.
export const seededTransferId = (i) => `${IdPrefix}${String(i).padStart(IdDigits, "0")}`
