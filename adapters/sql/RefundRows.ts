import type { SqlClient } from "@effect/sql/SqlClient"
import { DateTime, Effect } from "effect"
import type { CurrencyCode } from "../../core/payments/Currency.ts"
import type { IdempotencyKey } from "../../core/payments/Idempotency.ts"
import {
  Refund,
  type RefundFailureReason,
  type RefundId,
  type RefundReason,
  type RefundStatus
} from "../../core/payments/Refund.ts"
import type { ClientId, TransferId } from "../../core/payments/Transfer.ts"
import type { TransferStorageShape } from "../../core/payments/TransferStorage.ts"
import { millisOf, olderThan } from "./Dialect.ts"

// Rows of the refunds table and their mapping to the domain, shared by the SQLite, PostgreSQL and MariaDB stores.

export interface RefundRow {
  readonly id: string
  readonly transfer_id: string
  readonly client_id: string
  readonly amount: number | bigint | string
  readonly currency: string
  readonly status: RefundStatus
  readonly reason: string | null
  readonly failure_reason: string | null
  readonly created_at: unknown
  readonly idempotency_key: string | null
  readonly reconciled_at: unknown
}

// The amount is read as text, as the transfers' is (exact beyond 2^53 on SQLite). MariaDB's cast is to CHAR.
export const RefundColumns = `id, transfer_id, client_id, CAST(amount AS TEXT) AS amount, currency, status, reason,
    failure_reason, created_at, idempotency_key, reconciled_at`

// A row this store wrote, through the constraints of its table: mapped, not validated again.
export const toRefund = (r: RefundRow) =>
  new Refund({
    id: r.id as RefundId,
    transferId: r.transfer_id as TransferId,
    clientId: r.client_id as ClientId,
    amount: BigInt(r.amount),
    currency: r.currency as CurrencyCode,
    status: r.status,
    ...(r.reason === null ? {} : { reason: r.reason as RefundReason }),
    ...(r.failure_reason === null ? {} : { failureReason: r.failure_reason as RefundFailureReason }),
    createdAt: DateTime.unsafeMake(millisOf(r.created_at)),
    ...(r.idempotency_key === null ? {} : { idempotencyKey: r.idempotency_key as IdempotencyKey }),
    ...(r.reconciled_at === null ? {} : { reconciledAt: DateTime.unsafeMake(millisOf(r.reconciled_at)) })
  }, { disableValidation: true })

const millis = DateTime.toEpochMillis

// A refund as a row of its table, in RefundColumns' order; `time` turns a time into the dialect's parameter.
export const refundRow = (r: Refund, time: (ms: number) => number | Date) => ({
  id: r.id,
  transfer_id: r.transferId,
  client_id: r.clientId,
  amount: r.amount,
  currency: r.currency,
  status: r.status,
  reason: r.reason ?? null,
  failure_reason: r.failureReason ?? null,
  created_at: time(millis(r.createdAt)),
  idempotency_key: r.idempotencyKey ?? null,
  reconciled_at: r.reconciledAt === undefined ? null : time(millis(r.reconciledAt))
})

// What updateRefundOutcome writes: the outcome, and when the reconciler settled it.
export const refundOutcomeRow = (r: Refund, time: (ms: number) => number | Date) =>
  [r.status, r.failureReason ?? null, r.reconciledAt === undefined ? null : time(millis(r.reconciledAt))] as const

// A transfer's refunds, newest first, a page after `startingAfter` (a refund of that transfer), through
// @effect/sql: the PostgreSQL and MariaDB stores' `listRefunds`, with each database's columns.
export const listRefunds =
  (sql: SqlClient, columns: string): TransferStorageShape["listRefunds"] => (client, transfer, query) =>
    Effect.gen(function*() {
      const owned = sql`client_id = ${client} AND transfer_id = ${transfer}`
      const [after] = query.startingAfter === undefined ? [] : yield* sql<{ created_at: unknown; id: string }>`
      SELECT created_at, id FROM refunds WHERE ${owned} AND id = ${query.startingAfter}`
      const rows = yield* sql<RefundRow>`SELECT ${sql.literal(columns)} FROM refunds WHERE ${
        sql.and([
          owned,
          ...(after !== undefined
            ? [olderThan(sql, after.created_at, after.id)]
            : [])
        ])
      } ORDER BY created_at DESC, id DESC LIMIT ${query.limit + 1}`
      return { data: rows.slice(0, query.limit).map(toRefund), hasMore: rows.length > query.limit }
    }).pipe(Effect.orDie)
