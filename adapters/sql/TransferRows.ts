import type { SqlClient } from "@effect/sql/SqlClient"
import { DateTime, Effect } from "effect"
import type { CardBrand } from "../../core/payments/Card.ts"
import type { CardErrorCode } from "../../core/payments/CardNetwork.ts"
import type { CurrencyCode } from "../../core/payments/Currency.ts"
import { KeptAnswer, type KeyRecord, type RequestHash } from "../../core/payments/Idempotency.ts"
import type { BalanceChange } from "../../core/payments/Ledger.ts"
import type { RefundId } from "../../core/payments/Refund.ts"
import {
  type ClientId,
  type Reference,
  Transfer,
  type TransferId,
  type TransferStatus
} from "../../core/payments/Transfer.ts"
import type { TransferStorageShape } from "../../core/payments/TransferStorage.ts"
import { millisOf, olderThan, timeOf } from "./Dialect.ts"

// Rows of the transfer tables and their mapping to the domain, shared by the SQLite, PostgreSQL and MariaDB stores.

export interface TransferRow {
  readonly id: string
  readonly client_id: string
  readonly reference: string
  readonly amount: number | bigint | string
  readonly amount_refunded: number | bigint | string
  readonly currency: string
  readonly status: TransferStatus
  readonly sender_first_name: string
  readonly sender_middle_name: string | null
  readonly sender_email: string
  readonly card_brand: string
  readonly card_last4: string
  readonly card_exp_month: number
  readonly card_exp_year: number
  readonly card_fingerprint: string
  readonly recipient_first_name: string
  readonly recipient_middle_name: string | null
  readonly recipient_email: string
  readonly recipient_merchant_id: string
  readonly failure_code: string | null
  readonly decline_code: string | null
  readonly authorization_code: string | null
  readonly created_at: unknown
  readonly request_hash: string | null
  readonly reconciled_at: unknown
}

const millis = DateTime.toEpochMillis

const optional = <K extends string>(key: K, value: string | null) =>
  (value === null ? {} : { [key]: value }) as { [P in K]?: string }

// A row this store wrote, through the constraints of its table: mapped, not validated again.
export const toTransfer = (r: TransferRow) =>
  new Transfer({
    id: r.id as TransferId,
    clientId: r.client_id as ClientId,
    reference: r.reference as Reference,
    amount: BigInt(r.amount),
    amountRefunded: BigInt(r.amount_refunded),
    currency: r.currency as CurrencyCode,
    status: r.status,
    sender: {
      first_name: r.sender_first_name,
      ...optional("middle_name", r.sender_middle_name),
      email: r.sender_email,
      card: {
        brand: r.card_brand as CardBrand,
        last4: r.card_last4,
        exp_month: Number(r.card_exp_month),
        exp_year: Number(r.card_exp_year),
        fingerprint: r.card_fingerprint
      }
    },
    recipient: {
      first_name: r.recipient_first_name,
      ...optional("middle_name", r.recipient_middle_name),
      email: r.recipient_email,
      merchant_id: r.recipient_merchant_id
    },
    ...(r.failure_code === null ? {} : {
      failure: { code: r.failure_code as CardErrorCode, ...optional("decline_code", r.decline_code) }
    }),
    ...optional("authorizationCode", r.authorization_code),
    createdAt: DateTime.unsafeMake(millisOf(r.created_at)),
    ...optional("requestHash", r.request_hash),
    ...(r.reconciled_at === null ? {} : { reconciledAt: DateTime.unsafeMake(millisOf(r.reconciled_at)) })
  }, { disableValidation: true })

// Amounts are read as text: SQLite drivers hand out INTEGERs as JS numbers, exact only up to 2^53.
export const TransferColumns = `id, client_id, reference, CAST(amount AS TEXT) AS amount,
    CAST(amount_refunded AS TEXT) AS amount_refunded, currency, status,
    sender_first_name, sender_middle_name, sender_email, card_brand, card_last4, card_exp_month, card_exp_year,
    card_fingerprint, recipient_first_name, recipient_middle_name, recipient_email, recipient_merchant_id,
    failure_code, decline_code, authorization_code, created_at, request_hash, reconciled_at`

// A transfer as a row of its table; `time` turns a time into the dialect's parameter.
export const transferRow = (t: Transfer, time: (ms: number) => number | Date) => ({
  id: t.id,
  client_id: t.clientId,
  reference: t.reference,
  amount: t.amount,
  amount_refunded: t.amountRefunded,
  currency: t.currency,
  status: t.status,
  sender_first_name: t.sender.first_name,
  sender_middle_name: t.sender.middle_name ?? null,
  sender_email: t.sender.email,
  card_brand: t.sender.card.brand,
  card_last4: t.sender.card.last4,
  card_exp_month: t.sender.card.exp_month,
  card_exp_year: t.sender.card.exp_year,
  card_fingerprint: t.sender.card.fingerprint,
  recipient_first_name: t.recipient.first_name,
  recipient_middle_name: t.recipient.middle_name ?? null,
  recipient_email: t.recipient.email,
  recipient_merchant_id: t.recipient.merchant_id,
  failure_code: t.failure?.code ?? null,
  decline_code: t.failure?.decline_code ?? null,
  authorization_code: t.authorizationCode ?? null,
  created_at: time(millis(t.createdAt)),
  request_hash: t.requestHash ?? null,
  reconciled_at: t.reconciledAt === undefined ? null : time(millis(t.reconciledAt))
})

// What updateOutcome writes: the outcome, and when the reconciler settled it.
export const outcomeRow = (t: Transfer, time: (ms: number) => number | Date) =>
  [
    t.status,
    t.failure?.code ?? null,
    t.failure?.decline_code ?? null,
    t.authorizationCode ?? null,
    t.reconciledAt === undefined ? null : time(millis(t.reconciledAt))
  ] as const

export interface KeyRow {
  readonly request_hash: string
  readonly request_id: string | null
  readonly started_at: unknown
  readonly answer: "transfer_made" | "reference_taken" | "refund_made" | null
  readonly transfer_id: string | null
  readonly refund_id: string | null
}

export const KeyColumns = "request_hash, request_id, started_at, answer, transfer_id, refund_id"

export const toKeyRecord = (r: KeyRow): KeyRecord => ({
  requestHash: r.request_hash as RequestHash,
  requestId: r.request_id ?? "",
  startedAt: DateTime.unsafeMake(millisOf(r.started_at)),
  answer: r.answer === null
    ? undefined
    : r.answer === "transfer_made"
    ? KeptAnswer.TransferMade({ transferId: r.transfer_id as TransferId })
    : r.answer === "reference_taken"
    ? KeptAnswer.ReferenceTaken({ existing: r.transfer_id as TransferId })
    : KeptAnswer.RefundMade({ refundId: r.refund_id as RefundId })
})

// An answer as the columns (answer, transfer_id, refund_id).
export const answerColumns = (answer: KeptAnswer) =>
  KeptAnswer.$match(answer, {
    TransferMade: (a) => ["transfer_made", a.transferId, null] as const,
    ReferenceTaken: (a) => ["reference_taken", a.existing, null] as const,
    RefundMade: (a) => ["refund_made", null, a.refundId] as const
  })

// A client's transfers, newest first, a page after `startingAfter`, through @effect/sql: the PostgreSQL and
// MariaDB stores' `list` (SQLite's is a prepared statement on its direct path), with each database's columns.
export const listTransfers = (sql: SqlClient, columns: string): TransferStorageShape["list"] => (client, query) =>
  Effect.gen(function*() {
    const time = (t: DateTime.Utc) => timeOf(sql, millis(t))
    const [after] = query.startingAfter === undefined ? [] : yield* sql<{ created_at: unknown; id: string }>`
      SELECT created_at, id FROM transfers WHERE client_id = ${client} AND id = ${query.startingAfter}`
    const rows = yield* sql<TransferRow>`SELECT ${sql.literal(columns)} FROM transfers WHERE ${
      sql.and([
        sql`client_id = ${client}`,
        ...(query.reference === undefined ? [] : [sql`reference = ${query.reference}`]),
        ...(query.status === undefined ? [] : [sql`status = ${query.status}`]),
        ...(query.createdFrom === undefined ? [] : [sql`created_at >= ${time(query.createdFrom)}`]),
        ...(query.createdBefore === undefined ? [] : [sql`created_at < ${time(query.createdBefore)}`]),
        ...(after !== undefined
          ? [olderThan(sql, after.created_at, after.id)]
          : [])
      ])
    } ORDER BY created_at DESC, id DESC LIMIT ${query.limit + 1}`
    return { data: rows.slice(0, query.limit).map(toTransfer), hasMore: rows.length > query.limit }
  }).pipe(Effect.orDie)

// A client's balances as kept (addToBalance), read back as text: exact for any total, never a float. SQLite's
// and MariaDB's text (`?` parameters); PostgreSQL's has `$1`.
export const Balance = `SELECT merchant_id, currency, CAST(amount AS TEXT) AS total FROM balances
  WHERE client_id = ? ORDER BY merchant_id, currency`
// A balance change as the parameters (client_id, merchant_id, currency, amount) of an upsert that adds it.
export const balanceParams = (c: BalanceChange) => [c.clientId, c.merchantId, c.currency, c.amount] as const
export interface BalanceRow {
  readonly merchant_id: string
  readonly currency: string
  readonly total: string
}
export const toBalance = (r: BalanceRow) => ({
  merchantId: r.merchant_id,
  currency: r.currency as CurrencyCode,
  amount: BigInt(r.total)
})
