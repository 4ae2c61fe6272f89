import { DateTime, Option } from "effect"
import { type RefundStatus, UnsettledRefunds } from "../../core/payments/Refund.ts"
import type { TransferStorageShape, TransferTx } from "../../core/payments/TransferStorage.ts"
import { type DayTotalRow, sqliteDayTotals, toDayTotal } from "../sql/DayRows.ts"
import { sqlStrings, unsettledCondition } from "../sql/Dialect.ts"
import { RefundColumns, refundOutcomeRow, type RefundRow, refundRow, toRefund } from "../sql/RefundRows.ts"
import { toTransfer, TransferColumns, type TransferRow } from "../sql/TransferRows.ts"
import type { SqliteDirectShape } from "./SqliteClient.ts"
import { read, type Statements, write } from "./SqliteUnitOfWork.ts"

// The refunds' statements on SQLite, spread into the transfer storage (adapters/sqlite/SqliteTransferStore.ts).
// BEGIN IMMEDIATE holds the write lock for the whole transaction: the transfer's row is "locked" by reading it
// there, and refunds racing on one transfer run one after the other.

const millis = DateTime.toEpochMillis
const identity = (ms: number) => ms
const refundDays = sqliteDayTotals("refunds")
const transferById = `SELECT ${TransferColumns} FROM transfers WHERE client_id = ? AND id = ?`
const selectRefund = (where: string) => `SELECT ${RefundColumns} FROM refunds WHERE ${where}`
const refundById = selectRefund("client_id = ? AND id = ?")
const refundByKey = selectRefund("client_id = ? AND idempotency_key = ? ORDER BY created_at DESC, id DESC LIMIT 1")
const listOf = (after: boolean) =>
  selectRefund(
    `client_id = ? AND transfer_id = ?${
      after ? " AND created_at <= ? AND (created_at < ? OR id < ?)" : ""
    } ORDER BY created_at DESC, id DESC LIMIT ?`
  )
const lists = [listOf(false), listOf(true)]
const updateRefunded = `UPDATE transfers SET amount_refunded = ? WHERE id = ? AND amount_refunded = ?`
let insertRefund: string | undefined
const insertRefundOf = (row: Record<string, unknown>) =>
  insertRefund ??= `INSERT INTO refunds (${Object.keys(row).join(", ")}) VALUES (${
    Object.keys(row).map(() => "?").join(", ")
  })`
const updateOutcome = `UPDATE refunds SET status = ?, failure_reason = ?, reconciled_at = ?, reconcile_at = NULL
  WHERE id = ? AND status = ?`
const unsettled = `SELECT ${RefundColumns}, reconcile_attempts FROM refunds
  WHERE ${unsettledCondition(UnsettledRefunds, "?")}
    AND (reconcile_at IS NULL OR reconcile_at <= ?)
  ORDER BY created_at LIMIT ?`

export type RefundTx = Pick<
  TransferTx,
  "lockTransfer" | "updateRefunded" | "insertRefund" | "refundByKey" | "updateRefundOutcome" | "deleteRefund"
>

export const sqliteRefundStatements: Statements<RefundTx> = {
  lockTransfer: (db, client, id) =>
    Option.map(Option.fromNullable(db.get<TransferRow>(transferById, [client, id])), toTransfer),
  updateRefunded: (db, id, from, to) => db.run(updateRefunded, [to, id, from]) > 0,
  insertRefund: (db, r) => {
    const row = refundRow(r, identity)
    db.run(insertRefundOf(row), Object.values(row))
  },
  refundByKey: (db, client, key) =>
    Option.map(Option.fromNullable(db.get<RefundRow>(refundByKey, [client, key])), toRefund),
  updateRefundOutcome: (db, r, from) => db.run(updateOutcome, [...refundOutcomeRow(r, identity), r.id, from]) > 0,
  deleteRefund: (db, id, status) => db.run(`DELETE FROM refunds WHERE id = ? AND status = ?`, [id, status]) > 0
}

export const sqliteRefundStorage = (
  direct: SqliteDirectShape
): Pick<
  TransferStorageShape,
  "getRefund" | "listRefunds" | "refundDays" | "claimUnsettledRefunds" | "reconcileRefundLater"
> => {
  const reading = read(direct)
  const writing = write(direct)
  return {
    getRefund: (client, id) =>
      reading((db) => Option.map(Option.fromNullable(db.get<RefundRow>(refundById, [client, id])), toRefund)),
    listRefunds: (client, transfer, query) =>
      reading((db) => {
        const after = query.startingAfter === undefined
          ? undefined
          : db.get<{ created_at: number; id: string }>(
            `SELECT created_at, id FROM refunds WHERE client_id = ? AND transfer_id = ? AND id = ?`,
            [client, transfer, query.startingAfter]
          )
        const rows = db.all<RefundRow>(lists[after === undefined ? 0 : 1]!, [
          client,
          transfer,
          ...(after === undefined ? [] : [after.created_at, after.created_at, after.id]),
          query.limit + 1
        ])
        return { data: rows.slice(0, query.limit).map(toRefund), hasMore: rows.length > query.limit }
      }),
    refundDays: (client, from, before) =>
      reading((db) =>
        db.all<DayTotalRow>(refundDays, [client, millis(from), millis(before)]).map(toDayTotal<RefundStatus>)
      ),
    claimUnsettledRefunds: (now, pendingBefore, leaseUntil, limit) =>
      writing((db) => {
        const rows = db.all<RefundRow & { reconcile_attempts: number }>(unsettled, [
          millis(pendingBefore),
          millis(now),
          limit
        ])
        for (const row of rows) {
          db.run(`UPDATE refunds SET reconcile_at = ? WHERE id = ?`, [millis(leaseUntil), row.id])
        }
        return rows.map((row) => ({ refund: toRefund(row), attempts: Number(row.reconcile_attempts) }))
      }),
    reconcileRefundLater: (id, attempts, next) =>
      writing((db) =>
        void db.run(
          `UPDATE refunds SET reconcile_attempts = ?, reconcile_at = ? WHERE id = ? AND status IN (${
            sqlStrings(UnsettledRefunds.all)
          })`,
          [attempts, millis(next), id]
        )
      )
  }
}
