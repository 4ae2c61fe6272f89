import { type Effect, Option } from "effect"
import { Refund, UnsettledRefunds } from "../../core/payments/Refund.ts"
import { type ClientId, Transfer, type TransferId } from "../../core/payments/Transfer.ts"
import type { TransferStorageShape, TransferTx } from "../../core/payments/TransferStorage.ts"
import { millis, newestFirst, type Statements, type Tables, unsettledAt } from "./MemoryDatabase.ts"
import { dayTotals } from "./MemoryDays.ts"

// Refunds in memory: the refund operations of the transfer storage port, over MemoryDatabase's tables.

type RefundTx = Pick<
  TransferTx,
  "lockTransfer" | "updateRefunded" | "insertRefund" | "refundByKey" | "updateRefundOutcome" | "deleteRefund"
>

export const memoryRefundStatements: Statements<RefundTx> = {
  lockTransfer: (t, client, id) => {
    const row = t.transfers.get(id)
    return row === undefined || row.transfer.clientId !== client ? Option.none() : Option.some(row.transfer)
  },
  updateRefunded: (t, id, from, to) => {
    const row = t.transfers.get(id)
    if (row === undefined || row.transfer.amountRefunded !== from) return false
    if (to < 0n || to > row.transfer.amount) throw new Error(`amount refunded ${to} out of range for ${id}`)
    t.transfers.set(id, { ...row, transfer: new Transfer({ ...row.transfer, amountRefunded: to }, true) })
    return true
  },
  insertRefund: (t, refund) => {
    if (t.refunds.has(refund.id)) throw new Error(`refund ${refund.id} exists`)
    t.refunds.set(refund.id, { refund, attempts: 0 })
  },
  refundByKey: (t, client, key) =>
    Option.fromNullable(
      [...t.refunds.values()].map((r) => r.refund).filter((r) => r.clientId === client && r.idempotencyKey === key)
        .sort(newestFirst((r) => r.createdAt))[0]
    ),
  updateRefundOutcome: (t, outcome, from) => {
    const row = t.refunds.get(outcome.id)
    if (row === undefined || row.refund.status !== from) return false
    const { failureReason: _f, reconciledAt: _r, ...stored } = row.refund
    const refund = new Refund({
      ...stored,
      status: outcome.status,
      ...(outcome.failureReason === undefined ? {} : { failureReason: outcome.failureReason }),
      ...(outcome.reconciledAt === undefined ? {} : { reconciledAt: outcome.reconciledAt })
    }, true)
    // The lease ends with the change.
    t.refunds.set(outcome.id, { refund, attempts: row.attempts })
    return true
  },
  deleteRefund: (t, id, status) => t.refunds.get(id)?.refund.status === status && t.refunds.delete(id)
}

type RefundReads = Pick<
  TransferStorageShape,
  "getRefund" | "listRefunds" | "refundDays" | "claimUnsettledRefunds" | "reconcileRefundLater"
>

// The reads and the reconciliation lease, each run by `read` under the database's lock.
export const memoryRefundReads = (t: Tables, read: <A>(f: () => A) => Effect.Effect<A>): RefundReads => {
  const own = (client: ClientId, transfer?: TransferId) =>
    [...t.refunds.values()].map((r) => r.refund).filter((r) =>
      r.clientId === client && (transfer === undefined || r.transferId === transfer)
    )
  return {
    getRefund: (client, id) => read(() => Option.fromNullable(own(client).find((r) => r.id === id))),
    refundDays: (client, from, before) => read(() => dayTotals(own(client), from, before)),
    listRefunds: (client, transfer, query) =>
      read(() => {
        const all = own(client, transfer).sort(newestFirst((r) => r.createdAt))
        const after = all.find((r) => r.id === query.startingAfter)
        const rows = all.filter((r) => after === undefined || newestFirst<Refund>((x) => x.createdAt)(after, r) < 0)
          .slice(0, query.limit + 1)
        return { data: rows.slice(0, query.limit), hasMore: rows.length > query.limit }
      }),
    claimUnsettledRefunds: (now, pendingBefore, leaseUntil, limit) =>
      read(() => {
        const due = [...t.refunds.values()].filter(({ reconcileAt, refund: r }) =>
          unsettledAt(UnsettledRefunds, r, pendingBefore) &&
          (reconcileAt === undefined || millis(reconcileAt) <= millis(now))
        ).sort((a, b) => millis(a.refund.createdAt) - millis(b.refund.createdAt)).slice(0, limit)
        for (const row of due) t.refunds.set(row.refund.id, { ...row, reconcileAt: leaseUntil })
        return due.map((row) => ({ refund: row.refund, attempts: row.attempts }))
      }),
    reconcileRefundLater: (id, attempts, next) =>
      read(() => {
        const row = t.refunds.get(id)
        if (row !== undefined && UnsettledRefunds.all.includes(row.refund.status)) {
          t.refunds.set(id, { ...row, attempts, reconcileAt: next })
        }
      })
  }
}
