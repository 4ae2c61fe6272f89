import type { SqlClient } from "@effect/sql/SqlClient"
import { Effect, identity } from "effect"
import { UnsettledRefunds } from "../../core/payments/Refund.ts"
import type { TransferStorageShape, TransferTx } from "../../core/payments/TransferStorage.ts"
import { dayTotals } from "../sql/DayRows.ts"
import { listRefunds, RefundColumns, refundOutcomeRow, type RefundRow, refundRow, toRefund } from "../sql/RefundRows.ts"
import { toTransfer, TransferColumns, type TransferRow } from "../sql/TransferRows.ts"
import type { MariaDbDirectShape } from "./MariaDbDirect.ts"
import { asChar, first, reconciliation, type Statements, wrote } from "./MariaDbUnitOfWork.ts"

// The refunds' statements on MariaDB, spread into the transfer storage (adapters/mariadb/MariaDbTransferStore.ts):
// a refund is decided with its transfer's row locked FOR UPDATE, so refunds racing on one transfer, from any
// instance, run one after the other; claims take disjoint refunds with SKIP LOCKED.
const refundColumns = asChar(RefundColumns)

export type RefundTx = Pick<
  TransferTx,
  "lockTransfer" | "updateRefunded" | "insertRefund" | "refundByKey" | "updateRefundOutcome" | "deleteRefund"
>

export const mariaDbRefundStatements = (sql: SqlClient): Statements<RefundTx> => {
  const columns = sql.literal(refundColumns)
  return {
    lockTransfer: (client, id) =>
      first(
        sql<TransferRow>`SELECT ${sql.literal(asChar(TransferColumns))} FROM transfers
          WHERE client_id = ${client} AND id = ${id} FOR UPDATE`,
        toTransfer
      ),
    updateRefunded: (id, from, to) =>
      wrote(sql`UPDATE transfers SET amount_refunded = ${to} WHERE id = ${id} AND amount_refunded = ${from}`),
    insertRefund: (r) => Effect.asVoid(sql`INSERT INTO refunds ${sql.insert(refundRow(r, identity))}`),
    refundByKey: (client, key) =>
      first(
        sql<RefundRow>`SELECT ${columns} FROM refunds WHERE client_id = ${client} AND idempotency_key = ${key}
          ORDER BY created_at DESC, id DESC LIMIT 1`,
        toRefund
      ),
    updateRefundOutcome: (r, from) => {
      const [status, failure, reconciledAt] = refundOutcomeRow(r, identity)
      return wrote(sql`UPDATE refunds SET status = ${status}, failure_reason = ${failure},
        reconciled_at = ${reconciledAt}, reconcile_at = NULL WHERE id = ${r.id} AND status = ${from}`)
    },
    deleteRefund: (id, status) => wrote(sql`DELETE FROM refunds WHERE id = ${id} AND status = ${status}`)
  }
}

export const mariaDbRefundStorage = (
  sql: SqlClient,
  direct: MariaDbDirectShape
): Pick<
  TransferStorageShape,
  "getRefund" | "listRefunds" | "refundDays" | "claimUnsettledRefunds" | "reconcileRefundLater"
> => {
  const unsettled = reconciliation(sql, direct, "refunds", refundColumns, (row: RefundRow, attempts) => ({
    refund: toRefund(row),
    attempts
  }), UnsettledRefunds)
  return {
    getRefund: (client, id) =>
      Effect.orDie(first(
        sql<RefundRow>`SELECT ${sql.literal(refundColumns)} FROM refunds WHERE client_id = ${client} AND id = ${id}`,
        toRefund
      )),
    listRefunds: listRefunds(sql, refundColumns),
    refundDays: dayTotals(sql, "refunds"),
    claimUnsettledRefunds: unsettled.claim,
    reconcileRefundLater: unsettled.later
  }
}
