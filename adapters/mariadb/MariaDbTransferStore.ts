import { SqlClient } from "@effect/sql/SqlClient"
import { Effect, identity, Layer } from "effect"
import { type ClientId, type TransferId, UnsettledTransfers } from "../../core/payments/Transfer.ts"
import { TransferStorage, type TransferTx } from "../../core/payments/TransferStorage.ts"
import { dayTotals } from "../sql/DayRows.ts"
import {
  answerColumns,
  Balance,
  balanceParams,
  type BalanceRow,
  type KeyRow,
  listTransfers,
  outcomeRow,
  toBalance,
  toKeyRecord,
  toTransfer,
  TransferColumns,
  type TransferRow
} from "../sql/TransferRows.ts"
import { MariaDbDirect } from "./MariaDbDirect.ts"
import { mariaDbRefundStatements, mariaDbRefundStorage } from "./MariaDbRefundStatements.ts"
import {
  addToBalance,
  answerWaiting,
  insertKey,
  insertTransfer,
  keepAnswer,
  keyRecord,
  keyWhere,
  mariaDbCombined,
  transferValues,
  updateOutcome
} from "./MariaDbTransferCombined.ts"
import {
  asChar,
  eventStatements,
  first,
  ms,
  reconciliation,
  type Statements,
  unitOfWork,
  unlessDuplicate,
  wroteDirect
} from "./MariaDbUnitOfWork.ts"

const transferColumns = asChar(TransferColumns)

// The hot statements, prepared on MariaDbDirect (the combined operations' among them); listing, balances, clients
// and the reconciler's claims stay on @effect/sql.
const lockKey = `${keyRecord} FOR UPDATE`
const restartKey = `UPDATE idempotency_keys SET started_at = ?, request_id = ?, request_hash = ?, answer = NULL,
  transfer_id = NULL, refund_id = NULL WHERE ${keyWhere}`
const releaseKey = `DELETE FROM idempotency_keys WHERE ${keyWhere} AND answer IS NULL`
const holderOf = `SELECT id FROM transfers WHERE client_id = ? AND reference = ?`
const deleteTransfer = `DELETE FROM transfers WHERE id = ? AND status = ?`
const transferById = `SELECT ${transferColumns} FROM transfers WHERE client_id = ? AND id = ?`
const transferByReference = `SELECT ${transferColumns} FROM transfers WHERE client_id = ? AND reference = ?`
const clientByKeyHash = `SELECT id, name FROM api_clients WHERE key_hash = ?`

// The transfer storage on MariaDB. Keys and references are decided by unique constraints: the second of two
// first inserts waits for the first's row lock, then loses (1062) and answers false; keys are read FOR UPDATE
// while core judges them.
export const make = Effect.gen(function*() {
  const sql = yield* SqlClient
  const direct = yield* MariaDbDirect
  const rows = <A>(statement: string, values: ReadonlyArray<unknown>) => direct.query<A>(statement, values)
  const transferWhere = (statement: string, client: ClientId, value: string) =>
    Effect.orDie(first(rows<TransferRow>(statement, [client, value]), toTransfer))
  const unsettled = reconciliation(sql, direct, "transfers", transferColumns, (row: TransferRow, attempts) => ({
    transfer: toTransfer(row),
    attempts
  }), UnsettledTransfers)

  const statements: Statements<TransferTx> = {
    ...eventStatements(sql, direct),
    ...mariaDbRefundStatements(sql),
    insertKey: (client, claim, now) =>
      unlessDuplicate(
        Effect.as(rows(insertKey, [client, claim.key, claim.requestHash, claim.requestId, ms(now)]), true),
        false
      ),
    lockKey: (client, key) => first(rows<KeyRow>(lockKey, [client, key]), toKeyRecord),
    restartKey: (client, claim, now) =>
      Effect.asVoid(rows(restartKey, [ms(now), claim.requestId, claim.requestHash, client, claim.key])),
    keepAnswer: (client, key, answer) => Effect.asVoid(rows(keepAnswer, [...answerColumns(answer), client, key])),
    answerWaitingKeys: (client, hash, transfer) => Effect.asVoid(rows(answerWaiting, [transfer, client, hash])),
    releaseKey: (client, key) => Effect.asVoid(rows(releaseKey, [client, key])),
    insertTransfer: (t) => unlessDuplicate(Effect.as(rows(insertTransfer, transferValues(t)), true), false),
    referenceHolder: (client, reference) => first(rows<{ id: TransferId }>(holderOf, [client, reference]), (r) => r.id),
    updateOutcome: (t, from) =>
      wroteDirect(direct, updateOutcome(from.length), [...outcomeRow(t, identity), t.id, ...from]),
    deleteTransfer: (id, status) => Effect.asVoid(rows(deleteTransfer, [id, status])),
    addToBalance: (change) => Effect.asVoid(rows(addToBalance, balanceParams(change)))
  }

  return TransferStorage.of({
    ...unitOfWork<TransferTx>(direct, statements),
    ...mariaDbRefundStorage(sql, direct),
    combined: mariaDbCombined(direct),
    createClient: (client, keyHash, now) =>
      Effect.orDie(sql`INSERT INTO api_clients (id, name, key_hash, created_at)
        VALUES (${client.id}, ${client.name}, ${keyHash}, ${ms(now)})`),
    clientByKeyHash: (keyHash) =>
      Effect.orDie(first(rows<{ id: ClientId; name: string }>(clientByKeyHash, [keyHash]), identity)),
    hasClients: sql`SELECT 1 FROM api_clients LIMIT 1`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie),
    keyRecord: (client, key) => Effect.orDie(first(rows<KeyRow>(keyRecord, [client, key]), toKeyRecord)),
    get: (client, id) => transferWhere(transferById, client, id),
    byReference: (client, reference) => transferWhere(transferByReference, client, reference),
    list: listTransfers(sql, transferColumns),
    transferDays: dayTotals(sql, "transfers"),
    claimUnsettled: unsettled.claim,
    reconcileLater: unsettled.later,
    // A batch per statement: no lock is held long.
    pruneKeys: (before, limit) =>
      sql`DELETE FROM idempotency_keys WHERE started_at < ${ms(before)} LIMIT ${limit} RETURNING client_id`.pipe(
        Effect.map((rows) => rows.length),
        Effect.orDie
      ),
    balance: (client) =>
      Effect.orDie(Effect.map(sql.unsafe<BalanceRow>(asChar(Balance), [client]), (rows) => rows.map(toBalance)))
  })
})

export const layer = Layer.effect(TransferStorage, make)
