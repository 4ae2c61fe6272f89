import { SqlClient } from "@effect/sql/SqlClient"
import { Effect, Layer } from "effect"
import { type ClientId, type TransferId, UnsettledTransfers } from "../../core/payments/Transfer.ts"
import { TransferStorage, type TransferTx } from "../../core/payments/TransferStorage.ts"
import { dayTotals } from "../sql/DayRows.ts"
import { sqlStrings, unsettledCondition } from "../sql/Dialect.ts"
import { liveEndpointOf, pgEventValues, pgInsertEvent, pgLiveEndpoints } from "../sql/EventRows.ts"
import {
  answerColumns,
  Balance,
  balanceParams,
  type BalanceRow,
  KeyColumns,
  type KeyRow,
  listTransfers,
  outcomeRow,
  toBalance,
  toKeyRecord,
  toTransfer,
  TransferColumns,
  type TransferRow,
  transferRow
} from "../sql/TransferRows.ts"
import { PgDirect, statement } from "./PgClient.ts"
import { pgRefundStatements, pgRefundStorage } from "./PgRefundStatements.ts"
import { fields, pgAddToBalance, pgCombined, time, updateOutcomeSql, values } from "./PgTransferCombined.ts"
import { first, ms, type Statements, unitOfWork } from "./PgUnitOfWork.ts"

// The transfer storage on PostgreSQL: named (prepared) statements on PgDirect; keys and references decided by
// unique constraints, keys locked FOR UPDATE while core judges them, claims with SKIP LOCKED. Listing and
// balances, built per query, stay on @effect/sql.

const insertTransfer = statement(
  "insert_transfer",
  `INSERT INTO transfers (${fields.join(", ")}) VALUES (${values})
   ON CONFLICT (client_id, reference) DO NOTHING RETURNING id`
)
const holderOf = statement("reference_holder", `SELECT id FROM transfers WHERE client_id = $1 AND reference = $2`)
const insertKey = statement(
  "insert_key",
  `INSERT INTO idempotency_keys (client_id, idempotency_key, request_hash, request_id, started_at)
   VALUES ($1, $2, $3, $4, $5) ON CONFLICT (client_id, idempotency_key) DO NOTHING RETURNING 1`
)
const selectKey = `SELECT ${KeyColumns} FROM idempotency_keys WHERE client_id = $1 AND idempotency_key = $2`
const lockKey = statement("lock_key", `${selectKey} FOR UPDATE`)
const keyRecord = statement("key_record", selectKey)
const restartKey = statement(
  "restart_key",
  `UPDATE idempotency_keys SET started_at = $3, request_id = $4, request_hash = $5, answer = NULL, transfer_id = NULL,
   refund_id = NULL WHERE client_id = $1 AND idempotency_key = $2`
)
const keepAnswer = statement(
  "keep_answer",
  `UPDATE idempotency_keys SET answer = $3, transfer_id = $4, refund_id = $5
   WHERE client_id = $1 AND idempotency_key = $2 AND answer IS NULL`
)
const answerWaiting = statement(
  "answer_waiting_keys",
  `UPDATE idempotency_keys SET answer = 'transfer_made', transfer_id = $3
   WHERE client_id = $1 AND request_hash = $2 AND answer IS NULL`
)
const releaseKey = statement(
  "release_key",
  `DELETE FROM idempotency_keys WHERE client_id = $1 AND idempotency_key = $2 AND answer IS NULL`
)
const updateOutcome = statement("update_outcome", updateOutcomeSql)
const deleteTransfer = statement("delete_transfer", `DELETE FROM transfers WHERE id = $1 AND status = $2`)
const addToBalance = statement("add_to_balance", pgAddToBalance)
const balance = statement("balance", Balance.replace("?", "$1"))
const liveEndpoints = statement("live_endpoints", pgLiveEndpoints)
const insertEvent = statement("insert_event", pgInsertEvent)
// Leased with SKIP LOCKED: instances claiming at once take disjoint transfers, and a leased one is not due.
const claimUnsettled = statement(
  "claim_unsettled",
  `UPDATE transfers SET reconcile_at = $3 WHERE id IN (
     SELECT id FROM transfers WHERE ${unsettledCondition(UnsettledTransfers, "$2")}
       AND (reconcile_at IS NULL OR reconcile_at <= $1)
     ORDER BY created_at LIMIT $4 FOR UPDATE SKIP LOCKED)
   RETURNING ${TransferColumns}, reconcile_attempts`
)
const reconcileLater = statement(
  "reconcile_later",
  `UPDATE transfers SET reconcile_attempts = $2, reconcile_at = $3 WHERE id = $1 AND status IN (${
    sqlStrings(UnsettledTransfers.all)
  })`
)
// A batch per statement, skipping rows another transaction holds: no lock is held long.
const pruneKeys = statement(
  "prune_keys",
  `DELETE FROM idempotency_keys WHERE (client_id, idempotency_key) IN (
     SELECT client_id, idempotency_key FROM idempotency_keys WHERE started_at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)
   RETURNING 1`
)
const clientByKeyHash = statement("client_by_key_hash", `SELECT id, name FROM api_clients WHERE key_hash = $1`)
const transferById = statement(
  "transfer_by_id",
  `SELECT ${TransferColumns} FROM transfers WHERE client_id = $1 AND id = $2`
)
const transferByReference = statement(
  "transfer_by_reference",
  `SELECT ${TransferColumns} FROM transfers WHERE client_id = $1 AND reference = $2`
)

const statements: Statements<TransferTx> = {
  ...pgRefundStatements,
  liveEndpoints: (query, owner) => Effect.map(query(liveEndpoints, [owner]), (rows) => rows.map(liveEndpointOf)),
  insertEvent: (query, event, endpoints) => Effect.asVoid(query(insertEvent, pgEventValues(event, endpoints))),
  insertKey: (query, client, claim, now) =>
    Effect.map(
      query(insertKey, [client, claim.key, claim.requestHash, claim.requestId, ms(now)]),
      (rows) => rows.length > 0
    ),
  lockKey: (query, client, key) =>
    Effect.map(query<KeyRow>(lockKey, [client, key]), (rows) => first(rows, toKeyRecord)),
  restartKey: (query, client, claim, now) =>
    Effect.asVoid(query(restartKey, [client, claim.key, ms(now), claim.requestId, claim.requestHash])),
  keepAnswer: (query, client, key, answer) => Effect.asVoid(query(keepAnswer, [client, key, ...answerColumns(answer)])),
  answerWaitingKeys: (query, client, hash, transfer) => Effect.asVoid(query(answerWaiting, [client, hash, transfer])),
  releaseKey: (query, client, key) => Effect.asVoid(query(releaseKey, [client, key])),
  insertTransfer: (query, t) =>
    Effect.map(query(insertTransfer, Object.values(transferRow(t, time))), (rows) => rows.length > 0),
  referenceHolder: (query, client, reference) =>
    Effect.map(query<{ id: TransferId }>(holderOf, [client, reference]), (rows) => first(rows, (r) => r.id)),
  updateOutcome: (query, t, from) =>
    Effect.map(query(updateOutcome, [t.id, ...outcomeRow(t, time), from]), (rows) => rows.length > 0),
  deleteTransfer: (query, id, status) => Effect.asVoid(query(deleteTransfer, [id, status])),
  addToBalance: (query, change) => Effect.asVoid(query(addToBalance, balanceParams(change)))
}

export const make = Effect.gen(function*() {
  const sql = yield* SqlClient
  const direct = yield* PgDirect
  const transferWhere = (byWhat: typeof transferById, client: ClientId, value: string) =>
    direct.query<TransferRow>(byWhat, [client, value]).pipe(Effect.map((rows) => first(rows, toTransfer)), Effect.orDie)

  return TransferStorage.of({
    ...unitOfWork<TransferTx>(direct, statements),
    ...pgRefundStorage(sql, direct),
    combined: pgCombined(direct),
    createClient: (client, keyHash, now) =>
      Effect.orDie(sql`INSERT INTO api_clients (id, name, key_hash, created_at)
        VALUES (${client.id}, ${client.name}, ${keyHash}, ${ms(now)})`),
    clientByKeyHash: (keyHash) =>
      direct.query<{ id: ClientId; name: string }>(clientByKeyHash, [keyHash]).pipe(
        Effect.map((rows) => first(rows, (r) => r)),
        Effect.orDie
      ),
    hasClients: sql`SELECT 1 FROM api_clients LIMIT 1`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie),
    keyRecord: (client, key) =>
      Effect.orDie(Effect.map(direct.query<KeyRow>(keyRecord, [client, key]), (rows) => first(rows, toKeyRecord))),
    get: (client, id) => transferWhere(transferById, client, id),
    byReference: (client, reference) => transferWhere(transferByReference, client, reference),
    list: listTransfers(sql, TransferColumns),
    transferDays: dayTotals(sql, "transfers"),
    claimUnsettled: (now, pendingBefore, leaseUntil, limit) =>
      direct.query<TransferRow & { reconcile_attempts: number }>(claimUnsettled, [
        ms(now),
        ms(pendingBefore),
        ms(leaseUntil),
        limit
      ]).pipe(
        Effect.map((rows) =>
          rows.map((row) => ({ transfer: toTransfer(row), attempts: Number(row.reconcile_attempts) }))
        ),
        Effect.orDie
      ),
    reconcileLater: (id, attempts, next) => Effect.orDie(direct.query(reconcileLater, [id, attempts, ms(next)])),
    pruneKeys: (before, limit) =>
      direct.query(pruneKeys, [ms(before), limit]).pipe(Effect.map((rows) => rows.length), Effect.orDie),
    balance: (client) =>
      direct.query<BalanceRow>(balance, [client]).pipe(Effect.map((rows) => rows.map(toBalance)), Effect.orDie)
  })
})

export const layer = Layer.effect(TransferStorage, make)
