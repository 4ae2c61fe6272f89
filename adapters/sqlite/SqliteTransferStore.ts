import { DateTime, Effect, Layer, Option } from "effect"
import {
  type ClientId,
  type TransferId,
  type TransferStatus,
  UnsettledTransfers
} from "../../core/payments/Transfer.ts"
import { TransferStorage, type TransferTx } from "../../core/payments/TransferStorage.ts"
import { type DayTotalRow, sqliteDayTotals, toDayTotal } from "../sql/DayRows.ts"
import { sqlStrings, unsettledCondition } from "../sql/Dialect.ts"
import { sqliteEventStatements } from "../sql/EventRows.ts"
import {
  answerColumns,
  Balance,
  balanceParams,
  type BalanceRow,
  KeyColumns,
  type KeyRow,
  outcomeRow,
  toBalance,
  toKeyRecord,
  toTransfer,
  TransferColumns,
  type TransferRow,
  transferRow
} from "../sql/TransferRows.ts"
import { SqliteDirect } from "./SqliteClient.ts"
import { sqliteRefundStatements, sqliteRefundStorage } from "./SqliteRefundStatements.ts"
import { read, type Statements, unitOfWork, write } from "./SqliteUnitOfWork.ts"

// The transfer storage on SQLite: statements over SqliteDirect, in the client's group commit. Statement texts
// are made once: each is also the key of its prepared statement, hashed on every lookup.

const millis = DateTime.toEpochMillis
const identity = (ms: number) => ms
const selectTransfer = (where: string) => `SELECT ${TransferColumns} FROM transfers WHERE ${where}`
const byId = selectTransfer("client_id = ? AND id = ?")
const byReference = selectTransfer("client_id = ? AND reference = ?")
// A list's conditions after client_id, each with its parameters when its filter is given; the text of every
// combination is made once, on first use. The created range, the cursor's time included, is one BETWEEN: without
// statistics, SQLite then takes the (client_id, status, created_at, id) index for a status in a range, where two
// inequalities would have it read the range of every status.
const listFilters = [
  " AND reference = ?",
  " AND status = ?",
  " AND created_at BETWEEN ? AND ?",
  " AND (created_at < ? OR id < ?)"
]
const lists = new Map<string, string>()
const listOf = (given: ReadonlyArray<boolean>) => {
  const key = given.map(Number).join("")
  let text = lists.get(key)
  if (text === undefined) {
    text = selectTransfer(
      `client_id = ?${listFilters.filter((_, i) => given[i]).join("")} ORDER BY created_at DESC, id DESC LIMIT ?`
    )
    lists.set(key, text)
  }
  return text
}
const transferDays = sqliteDayTotals("transfers")
const keyRow = `SELECT ${KeyColumns} FROM idempotency_keys WHERE client_id = ? AND idempotency_key = ?`
const insertKey = `INSERT INTO idempotency_keys (client_id, idempotency_key, request_hash, request_id, started_at)
  VALUES (?, ?, ?, ?, ?) ON CONFLICT (client_id, idempotency_key) DO NOTHING`
const restartKey = `UPDATE idempotency_keys SET started_at = ?, request_id = ?, request_hash = ?, answer = NULL,
  transfer_id = NULL, refund_id = NULL WHERE client_id = ? AND idempotency_key = ?`
const keep = `UPDATE idempotency_keys SET answer = ?, transfer_id = ?, refund_id = ?
  WHERE client_id = ? AND idempotency_key = ? AND answer IS NULL`
const answerWaiting = `UPDATE idempotency_keys SET answer = 'transfer_made', transfer_id = ?
  WHERE client_id = ? AND request_hash = ? AND answer IS NULL`
const releaseKey = `DELETE FROM idempotency_keys WHERE client_id = ? AND idempotency_key = ? AND answer IS NULL`
const holder = `SELECT id FROM transfers WHERE client_id = ? AND reference = ?`
const updateOutcome = (from: number) =>
  `UPDATE transfers SET status = ?, failure_code = ?, decline_code = ?, authorization_code = ?, reconciled_at = ?,
  reconcile_at = NULL WHERE id = ? AND status IN (${Array.from({ length: from }, () => "?").join(", ")})`
const updates = [1, 2, 3, 4].map(updateOutcome)
const unsettled = `SELECT ${TransferColumns}, reconcile_attempts FROM transfers
  WHERE ${unsettledCondition(UnsettledTransfers, "?")}
    AND (reconcile_at IS NULL OR reconcile_at <= ?)
  ORDER BY created_at LIMIT ?`
// A balance is decimal text, added in bigint: SQLite's integers would turn into floats past 2^63. The read and
// the write are one step under the write lock.
const balanceAmount = `SELECT amount FROM balances WHERE client_id = ? AND merchant_id = ? AND currency = ?`
const writeBalance = `INSERT INTO balances (client_id, merchant_id, currency, amount) VALUES (?, ?, ?, ?)
  ON CONFLICT (client_id, merchant_id, currency) DO UPDATE SET amount = excluded.amount`
let insertTransfer: string | undefined
const insertTransferOf = (row: Record<string, unknown>) =>
  insertTransfer ??= `INSERT INTO transfers (${Object.keys(row).join(", ")}) VALUES (${
    Object.keys(row).map(() => "?").join(", ")
  }) ON CONFLICT (client_id, reference) DO NOTHING`

const statements: Statements<TransferTx> = {
  ...sqliteEventStatements,
  ...sqliteRefundStatements,
  insertKey: (db, client, claim, now) =>
    db.run(insertKey, [client, claim.key, claim.requestHash, claim.requestId, millis(now)]) > 0,
  lockKey: (db, client, key) => Option.map(Option.fromNullable(db.get<KeyRow>(keyRow, [client, key])), toKeyRecord),
  restartKey: (db, client, claim, now) =>
    void db.run(restartKey, [millis(now), claim.requestId, claim.requestHash, client, claim.key]),
  keepAnswer: (db, client, key, answer) => void db.run(keep, [...answerColumns(answer), client, key]),
  answerWaitingKeys: (db, client, hash, transfer) => void db.run(answerWaiting, [transfer, client, hash]),
  releaseKey: (db, client, key) => void db.run(releaseKey, [client, key]),
  insertTransfer: (db, t) => {
    const row = transferRow(t, identity)
    return db.run(insertTransferOf(row), Object.values(row)) > 0
  },
  referenceHolder: (db, client, reference) =>
    Option.map(Option.fromNullable(db.get<{ id: TransferId }>(holder, [client, reference])), (r) => r.id),
  updateOutcome: (db, t, from) => db.run(updates[from.length - 1]!, [...outcomeRow(t, identity), t.id, ...from]) > 0,
  deleteTransfer: (db, id, status) => void db.run(`DELETE FROM transfers WHERE id = ? AND status = ?`, [id, status]),
  addToBalance: (db, change) => {
    const [client, merchant, currency, amount] = balanceParams(change)
    const kept = db.get<{ amount: string }>(balanceAmount, [client, merchant, currency])
    db.run(writeBalance, [client, merchant, currency, String((kept === undefined ? 0n : BigInt(kept.amount)) + amount)])
  }
}

export const layer = Layer.effect(
  TransferStorage,
  Effect.gen(function*() {
    const direct = yield* SqliteDirect
    const reading = read(direct)
    const writing = write(direct)
    const transfer = (sql: string, params: ReadonlyArray<unknown>) =>
      reading((db) => Option.map(Option.fromNullable(db.get<TransferRow>(sql, params)), toTransfer))

    return TransferStorage.of({
      ...sqliteRefundStorage(direct),
      ...unitOfWork<TransferTx>(direct, statements, [
        "lockKey",
        "referenceHolder",
        "liveEndpoints",
        "lockTransfer",
        "refundByKey"
      ]),
      createClient: (client, keyHash, now) =>
        writing((db) =>
          void db.run(`INSERT INTO api_clients (id, name, key_hash, created_at) VALUES (?, ?, ?, ?)`, [
            client.id,
            client.name,
            keyHash,
            millis(now)
          ])
        ),
      clientByKeyHash: (keyHash) =>
        reading((db) =>
          Option.fromNullable(
            db.get<{ id: ClientId; name: string }>(`SELECT id, name FROM api_clients WHERE key_hash = ?`, [keyHash])
          )
        ),
      hasClients: reading((db) => db.get(`SELECT 1 AS one FROM api_clients LIMIT 1`, []) !== undefined),
      keyRecord: (client, key) =>
        reading((db) => Option.map(Option.fromNullable(db.get<KeyRow>(keyRow, [client, key])), toKeyRecord)),
      get: (client, id) => transfer(byId, [client, id]),
      byReference: (client, reference) => transfer(byReference, [client, reference]),
      transferDays: (client, from, before) =>
        reading((db) =>
          db.all<DayTotalRow>(transferDays, [client, millis(from), millis(before)]).map(toDayTotal<TransferStatus>)
        ),
      list: (client, query) =>
        reading((db) => {
          const after = query.startingAfter === undefined
            ? undefined
            : db.get<{ created_at: number; id: string }>(
              `SELECT created_at, id FROM transfers WHERE client_id = ? AND id = ?`,
              [client, query.startingAfter]
            )
          const from = query.createdFrom === undefined ? undefined : millis(query.createdFrom)
          const last = Math.min(
            query.createdBefore === undefined ? Infinity : millis(query.createdBefore) - 1,
            after === undefined ? Infinity : after.created_at
          )
          const filters = [
            query.reference === undefined ? [] : [query.reference],
            query.status === undefined ? [] : [query.status],
            from === undefined && last === Infinity
              ? []
              : [from ?? Number.MIN_SAFE_INTEGER, last === Infinity ? Number.MAX_SAFE_INTEGER : last],
            after === undefined ? [] : [after.created_at, after.id]
          ]
          const rows = db.all<TransferRow>(listOf(filters.map((f) => f.length > 0)), [
            client,
            ...filters.flat(),
            query.limit + 1
          ])
          return { data: rows.slice(0, query.limit).map(toTransfer), hasMore: rows.length > query.limit }
        }),
      claimUnsettled: (now, pendingBefore, leaseUntil, limit) =>
        writing((db) => {
          const rows = db.all<TransferRow & { reconcile_attempts: number }>(unsettled, [
            millis(pendingBefore),
            millis(now),
            limit
          ])
          for (const row of rows) {
            db.run(`UPDATE transfers SET reconcile_at = ? WHERE id = ?`, [millis(leaseUntil), row.id])
          }
          return rows.map((row) => ({ transfer: toTransfer(row), attempts: Number(row.reconcile_attempts) }))
        }),
      reconcileLater: (id, attempts, next) =>
        writing((db) =>
          void db.run(
            `UPDATE transfers SET reconcile_attempts = ?, reconcile_at = ? WHERE id = ? AND status IN (${
              sqlStrings(UnsettledTransfers.all)
            })`,
            [attempts, millis(next), id]
          )
        ),
      // A batch per transaction: the write lock is held for one short DELETE at a time.
      pruneKeys: (before, limit) =>
        writing((db) =>
          db.run(
            `DELETE FROM idempotency_keys WHERE rowid IN
             (SELECT rowid FROM idempotency_keys WHERE started_at < ? LIMIT ?)`,
            [millis(before), limit]
          )
        ),
      balance: (client) => reading((db) => db.all<BalanceRow>(Balance, [client]).map(toBalance))
    })
  })
)
