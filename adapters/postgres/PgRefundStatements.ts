import type { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { UnsettledRefunds } from "../../core/payments/Refund.ts"
import type { TransferStorageShape, TransferTx } from "../../core/payments/TransferStorage.ts"
import { dayTotals } from "../sql/DayRows.ts"
import { sqlStrings, unsettledCondition } from "../sql/Dialect.ts"
import { listRefunds, RefundColumns, refundOutcomeRow, type RefundRow, refundRow, toRefund } from "../sql/RefundRows.ts"
import { toTransfer, TransferColumns, type TransferRow } from "../sql/TransferRows.ts"
import { type PgDirectShape, statement } from "./PgClient.ts"
import { first, ms, type Statements } from "./PgUnitOfWork.ts"

// The refunds' statements on PostgreSQL, spread into the transfer storage (adapters/postgres/PgTransferStore.ts):
// a refund is decided with its transfer's row locked FOR UPDATE, so refunds racing on one transfer, from any
// instance, run one after the other; claims take disjoint refunds with SKIP LOCKED.

const time = (millis: number) => new Date(millis)
// The columns of a refund row, in refundRow's order, each parameter cast to its column's type.
const columns = RefundColumns.replace("CAST(amount AS TEXT) AS amount", "amount").split(",").map((c) => c.trim())
const types: Record<string, string> = { amount: "bigint", created_at: "timestamptz", reconciled_at: "timestamptz" }
const values = columns.map((c, i) => `$${i + 1}::${types[c] ?? "text"}`).join(", ")

const lockTransfer = statement(
  "lock_transfer",
  `SELECT ${TransferColumns} FROM transfers WHERE client_id = $1 AND id = $2 FOR UPDATE`
)
const updateRefunded = statement(
  "update_refunded",
  `UPDATE transfers SET amount_refunded = $3 WHERE id = $1 AND amount_refunded = $2 RETURNING 1`
)
const insertRefund = statement("insert_refund", `INSERT INTO refunds (${columns.join(", ")}) VALUES (${values})`)
const updateRefundOutcome = statement(
  "update_refund_outcome",
  `UPDATE refunds SET status = $2, failure_reason = $3, reconciled_at = $4::timestamptz, reconcile_at = NULL
   WHERE id = $1 AND status = $5 RETURNING 1`
)
const deleteRefund = statement("delete_refund", `DELETE FROM refunds WHERE id = $1 AND status = $2 RETURNING 1`)
const refundByKey = statement(
  "refund_by_key",
  `SELECT ${RefundColumns} FROM refunds WHERE client_id = $1 AND idempotency_key = $2 ORDER BY created_at DESC, id DESC
   LIMIT 1`
)
const refundById = statement("refund_by_id", `SELECT ${RefundColumns} FROM refunds WHERE client_id = $1 AND id = $2`)
// Leased with SKIP LOCKED: instances claiming at once take disjoint refunds, and a leased one is not due.
const claimUnsettled = statement(
  "claim_unsettled_refunds",
  `UPDATE refunds SET reconcile_at = $3 WHERE id IN (
     SELECT id FROM refunds WHERE ${unsettledCondition(UnsettledRefunds, "$2")}
       AND (reconcile_at IS NULL OR reconcile_at <= $1)
     ORDER BY created_at LIMIT $4 FOR UPDATE SKIP LOCKED)
   RETURNING ${RefundColumns}, reconcile_attempts`
)
const reconcileLater = statement(
  "reconcile_refund_later",
  `UPDATE refunds SET reconcile_attempts = $2, reconcile_at = $3 WHERE id = $1 AND status IN (${
    sqlStrings(UnsettledRefunds.all)
  })`
)

export type RefundTx = Pick<
  TransferTx,
  "lockTransfer" | "updateRefunded" | "insertRefund" | "refundByKey" | "updateRefundOutcome" | "deleteRefund"
>

export const pgRefundStatements: Statements<RefundTx> = {
  lockTransfer: (query, client, id) =>
    Effect.map(query<TransferRow>(lockTransfer, [client, id]), (rows) => first(rows, toTransfer)),
  updateRefunded: (query, id, from, to) => Effect.map(query(updateRefunded, [id, from, to]), (rows) => rows.length > 0),
  insertRefund: (query, r) => Effect.asVoid(query(insertRefund, Object.values(refundRow(r, time)))),
  refundByKey: (query, client, key) =>
    Effect.map(query<RefundRow>(refundByKey, [client, key]), (rows) => first(rows, toRefund)),
  updateRefundOutcome: (query, r, from) =>
    Effect.map(query(updateRefundOutcome, [r.id, ...refundOutcomeRow(r, time), from]), (rows) => rows.length > 0),
  deleteRefund: (query, id, status) => Effect.map(query(deleteRefund, [id, status]), (rows) => rows.length > 0)
}

export const pgRefundStorage = (
  sql: SqlClient,
  direct: PgDirectShape
): Pick<
  TransferStorageShape,
  "getRefund" | "listRefunds" | "refundDays" | "claimUnsettledRefunds" | "reconcileRefundLater"
> => ({
  getRefund: (client, id) =>
    Effect.orDie(Effect.map(direct.query<RefundRow>(refundById, [client, id]), (rows) => first(rows, toRefund))),
  listRefunds: listRefunds(sql, RefundColumns),
  refundDays: dayTotals(sql, "refunds"),
  claimUnsettledRefunds: (now, pendingBefore, leaseUntil, limit) =>
    direct.query<RefundRow & { reconcile_attempts: number }>(claimUnsettled, [
      ms(now),
      ms(pendingBefore),
      ms(leaseUntil),
      limit
    ]).pipe(
      Effect.map((rows) => rows.map((row) => ({ refund: toRefund(row), attempts: Number(row.reconcile_attempts) }))),
      Effect.orDie
    ),
  reconcileRefundLater: (id, attempts, next) => Effect.orDie(direct.query(reconcileLater, [id, attempts, ms(next)]))
})
