import { Effect } from "effect"
import type { CombinedOperations } from "../../core/payments/TransferStorage.ts"
import { pgAudienceEventCtes, pgAudienceValues } from "../sql/EventRows.ts"
import { outcomeRow, TransferColumns, transferRow } from "../sql/TransferRows.ts"
import { type PgDirectShape, statement } from "./PgClient.ts"

// The transfer storage's combined operations on PostgreSQL: each one data-modifying statement (its CTEs are one
// transaction), where the operations one by one would be BEGIN, a statement each and COMMIT, a round trip each.

// The columns of a transfer row, in transferRow's order, each parameter cast to its column's type.
export const fields = TransferColumns.replace(/CAST\((\w+) AS TEXT\) AS \1/g, "$1").split(",").map((c) => c.trim())
const types: Record<string, string> = {
  amount: "bigint",
  amount_refunded: "bigint",
  card_exp_month: "integer",
  card_exp_year: "integer",
  created_at: "timestamptz",
  reconciled_at: "timestamptz"
}
export const values = fields.map((f, i) => `$${i + 1}::${types[f] ?? "text"}`).join(", ")
export const time = (millis: number) => new Date(millis)
const n = fields.length

// insertKey, then insertTransfer only if the key was new. A taken reference inserts nothing and leaves the key
// started, as the two operations would.
const insertKeyAndTransfer = statement(
  "insert_key_and_transfer",
  `WITH k AS (
     INSERT INTO idempotency_keys (client_id, idempotency_key, request_hash, request_id, started_at)
     VALUES ($${fields.indexOf("client_id") + 1}::text, $${n + 1}::text, $${n + 2}::text, $${n + 3}::text,
       $${fields.indexOf("created_at") + 1}::timestamptz)
     ON CONFLICT (client_id, idempotency_key) DO NOTHING RETURNING 1
   ), t AS (
     INSERT INTO transfers (${fields.join(", ")}) SELECT ${values} WHERE EXISTS (SELECT 1 FROM k)
     ON CONFLICT (client_id, reference) DO NOTHING RETURNING 1
   )
   SELECT EXISTS (SELECT 1 FROM k) AS key_inserted, EXISTS (SELECT 1 FROM t) AS transfer_inserted`
)

// insertTransfer, then insertEvent (the event, then its deliveries) only if the transfer was inserted; the event's
// subject last.
const insertTransferAndEvent = statement(
  "insert_transfer_and_event",
  `WITH t AS (
     INSERT INTO transfers (${fields.join(", ")}) VALUES (${values})
     ON CONFLICT (client_id, reference) DO NOTHING RETURNING 1
   ), ${pgAudienceEventCtes(n + 1, n + 7, "EXISTS (SELECT 1 FROM t)")}
   SELECT EXISTS (SELECT 1 FROM t) AS inserted`
)

// updateOutcome: the outcome ($2-$6) onto transfer $1 if its status is one of $7.
export const updateOutcomeSql = `UPDATE transfers SET status = $2, failure_code = $3, decline_code = $4,
  authorization_code = $5, reconciled_at = $6::timestamptz, reconcile_at = NULL
  WHERE id = $1 AND status = ANY($7::text[]) RETURNING 1`

// addToBalance: amount $4 onto the balance of client $1, merchant $2 and currency $3.
export const pgAddToBalance = `INSERT INTO balances (client_id, merchant_id, currency, amount)
  VALUES ($1, $2, $3, $4::bigint)
  ON CONFLICT (client_id, merchant_id, currency) DO UPDATE SET amount = balances.amount + EXCLUDED.amount`

// updateOutcome; insertEvent (the event, then its deliveries; its subject $20) and addToBalance (merchant $17,
// currency $18, amount $19) only if the outcome was written; then the answer onto the key ($15) or onto the waiting
// keys of the request hash ($16), whichever is given.
const settle = statement(
  "settle",
  `WITH s AS (${updateOutcomeSql}), ${
    pgAudienceEventCtes(8, 20, "$8::text IS NOT NULL AND EXISTS (SELECT 1 FROM s)")
  }, b AS (
     INSERT INTO balances (client_id, merchant_id, currency, amount)
     SELECT $14::text, $17::text, $18::text, $19::bigint WHERE $19::bigint IS NOT NULL AND EXISTS (SELECT 1 FROM s)
     ON CONFLICT (client_id, merchant_id, currency) DO UPDATE SET amount = balances.amount + EXCLUDED.amount
   ), k AS (
     UPDATE idempotency_keys SET answer = 'transfer_made', transfer_id = $1
     WHERE $15::text IS NOT NULL AND client_id = $14 AND idempotency_key = $15 AND answer IS NULL
   ), w AS (
     UPDATE idempotency_keys SET answer = 'transfer_made', transfer_id = $1
     WHERE $16::text IS NOT NULL AND client_id = $14 AND request_hash = $16 AND answer IS NULL
   )
   SELECT EXISTS (SELECT 1 FROM s) AS changed`
)

export const pgCombined = (direct: PgDirectShape): CombinedOperations => ({
  insertKeyAndTransfer: (t, claim) =>
    direct.query<{ key_inserted: boolean; transfer_inserted: boolean }>(insertKeyAndTransfer, [
      ...Object.values(transferRow(t, time)),
      claim.key,
      claim.requestHash,
      claim.requestId
    ]).pipe(
      Effect.map(([row]) => ({ keyInserted: row!.key_inserted, transferInserted: row!.transfer_inserted })),
      Effect.orDie
    ),
  insertTransferAndEvent: (t, { audience, event }) =>
    direct.query<{ inserted: boolean }>(insertTransferAndEvent, [
      ...Object.values(transferRow(t, time)),
      ...pgAudienceValues(event, audience),
      event.subject ?? null
    ]).pipe(Effect.map(([row]) => row!.inserted), Effect.orDie),
  settle: ({ answer, balance, event, from, transfer: t }) =>
    direct.query<{ changed: boolean }>(settle, [
      t.id,
      ...outcomeRow(t, time),
      from,
      ...(event === undefined ? [null, null, null, null, null, []] : pgAudienceValues(event.event, event.audience)),
      t.clientId,
      answer !== undefined && "key" in answer ? answer.key : null,
      answer !== undefined && "waiting" in answer ? answer.waiting : null,
      balance?.merchantId ?? null,
      balance?.currency ?? null,
      balance?.amount ?? null,
      event?.event.subject ?? null
    ]).pipe(Effect.map(([row]) => row!.changed), Effect.orDie)
})
