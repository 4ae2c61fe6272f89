import type { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"
import type { TransferStorageShape, TransferTx } from "../../core/payments/TransferStorage.ts"
import { listRefunds, RefundColumns, refundOutcomeRow, type RefundRow, refundRow, toRefund } from "../sql/RefundRows.ts"
import { toTransfer, type TransferRow } from "../sql/TransferRows.ts"
import { transactionOn } from "./MariaDbClient.ts"
import { first, ms, type Statements } from "./MariaDbUnitOfWork.ts"

// The refunds' statements on MariaDB, spread into the transfer storage (adapters/mariadb/MariaDbTransferStore.ts):
// a refund is decided with its transfer's row locked FOR UPDATE, so refunds racing on one transfer, from any
// instance, run one after the other; claims take disjoint refunds with SKIP LOCKED. A conditional update says
// whether it wrote by a locked read of the row first (no UPDATE ... RETURNING on MariaDB).

export type RefundTx = Pick<
  TransferTx,
  "lockTransfer" | "updateRefunded" | "insertRefund" | "refundByKey" | "updateRefundOutcome" | "deleteRefund"
>

// The statements that are a locked read then a write: a transaction of their own outside `transact`.
export const refundCompound: ReadonlyArray<keyof RefundTx> = ["updateRefunded", "updateRefundOutcome"]

const time = (n: number) => n
const refundColumns = RefundColumns.replace("CAST(amount AS TEXT)", "CAST(amount AS CHAR)")

export const mariaDbRefundStatements = (sql: SqlClient, transferColumns: string): Statements<RefundTx> => {
  const columns = sql.literal(transferColumns)
  return {
    lockTransfer: (client, id) =>
      Effect.map(
        sql<TransferRow>`SELECT ${columns} FROM transfers WHERE client_id = ${client} AND id = ${id} FOR UPDATE`,
        (rows) => first(rows, toTransfer)
      ),
    updateRefunded: (id, from, to) =>
      Effect.gen(function*() {
        const found = yield* sql`SELECT id FROM transfers WHERE id = ${id} AND amount_refunded = ${from} FOR UPDATE`
        if (found.length === 0) return false
        yield* sql`UPDATE transfers SET amount_refunded = ${to} WHERE id = ${id}`
        return true
      }),
    insertRefund: (r) => Effect.asVoid(sql`INSERT INTO refunds ${sql.insert(refundRow(r, time))}`),
    refundByKey: (client, key) =>
      Effect.map(
        sql<RefundRow>`SELECT ${sql.literal(refundColumns)} FROM refunds WHERE client_id = ${client}
          AND idempotency_key = ${key}
          ORDER BY created_at DESC, id DESC LIMIT 1`,
        (rows) => first(rows, toRefund)
      ),
    updateRefundOutcome: (r, from) =>
      Effect.gen(function*() {
        const found = yield* sql`SELECT id FROM refunds WHERE id = ${r.id} AND status = ${from} FOR UPDATE`
        if (found.length === 0) return false
        const [status, failure, reconciledAt] = refundOutcomeRow(r, time)
        yield* sql`UPDATE refunds SET status = ${status}, failure_reason = ${failure}, reconciled_at = ${reconciledAt},
          reconcile_at = NULL WHERE id = ${r.id}`
        return true
      }),
    deleteRefund: (id, status) =>
      Effect.map(
        sql`DELETE FROM refunds WHERE id = ${id} AND status = ${status} RETURNING id`,
        (rows) => rows.length > 0
      )
  }
}

export const mariaDbRefundStorage = (
  sql: SqlClient
): Pick<TransferStorageShape, "getRefund" | "listRefunds" | "claimUnsettledRefunds" | "reconcileRefundLater"> => {
  const columns = sql.literal(refundColumns)
  const transaction = transactionOn(sql)
  return {
    getRefund: (client, id) =>
      sql<RefundRow>`SELECT ${columns} FROM refunds WHERE client_id = ${client} AND id = ${id}`.pipe(
        Effect.map((rows) => first(rows, toRefund)),
        Effect.orDie
      ),
    listRefunds: listRefunds(sql, refundColumns),
    // Leased with SKIP LOCKED, read in the index's order, as the transfers' claim is (MariaDbTransferStore.ts).
    claimUnsettledRefunds: (now, pendingBefore, leaseUntil, limit) =>
      transaction(Effect.gen(function*() {
        const rows = yield* sql<RefundRow & { reconcile_attempts: number }>`
          SELECT ${columns}, reconcile_attempts FROM refunds FORCE INDEX (refunds_unsettled)
          WHERE status IN ('pending', 'unknown') AND (status = 'unknown' OR created_at <= ${ms(pendingBefore)})
          AND (reconcile_at IS NULL OR reconcile_at <= ${ms(now)})
          ORDER BY created_at LIMIT ${limit} FOR UPDATE SKIP LOCKED`
        if (rows.length > 0) {
          yield* sql`UPDATE refunds SET reconcile_at = ${ms(leaseUntil)} WHERE ${sql.in("id", rows.map((r) => r.id))}`
        }
        return rows.map((row) => ({ refund: toRefund(row), attempts: Number(row.reconcile_attempts) }))
      })).pipe(Effect.orDie),
    reconcileRefundLater: (id, attempts, next) =>
      Effect.orDie(sql`UPDATE refunds SET reconcile_attempts = ${attempts}, reconcile_at = ${ms(next)}
        WHERE id = ${id} AND status IN ('pending', 'unknown')`)
  }
}
