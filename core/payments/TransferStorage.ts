import { Context, type DateTime, type Effect, type Option } from "effect"
import type { Audience, EventTx, NewEvent } from "../webhooks/Events.ts"
import type { CurrencyCode } from "./Currency.ts"
import type { IdempotencyKey, KeptAnswer, KeyClaim, KeyRecord, RequestHash } from "./Idempotency.ts"
import type { BalanceChange } from "./Ledger.ts"
import type { Refund, RefundId, RefundStatus } from "./Refund.ts"
import type { ClientId, Reference, Transfer, TransferId, TransferStatus } from "./Transfer.ts"
import type { ApiClient, Balance, Unsettled } from "./TransferStore.ts"

export interface UnsettledRefund {
  readonly refund: Refund
  // How often the network has been asked about it so far.
  readonly attempts: number
}

// The port a database implements for clients, transfers, refunds and idempotency keys: statements and row mapping
// only. Every rule (a key starts, replays, mismatches or is in progress; a reference is taken; which outcome
// may replace which; which keys an outcome answers; which events it emits) is decided in core/payments/TransferStore.ts,
// once, for every database. Where a decision needs the rows as they are, core runs it inside `transact`: one
// database transaction in which the reads hold what they read until the end (BEGIN IMMEDIATE on SQLite,
// FOR UPDATE on PostgreSQL's `lock*` reads), and whatever core writes commits with it, durably, or not at all.
// Outside `transact`, each operation is a transaction of its own.
//
// Uniqueness is the database's: insertKey and insertTransfer insert unless the row exists (ON CONFLICT DO
// NOTHING) and answer whether they did, so that concurrent first requests, in one process or several, cannot
// both win. The conditional writes (`from`, `status`, "without an answer") write only onto rows still in the
// state core names, so that a late writer changes nothing. A card number, CVC or authentication value never
// reaches this port.

// Idempotency keys, in the transaction.
export interface KeyWrites {
  // Inserts the key as started at `now` by the claim's request, unless the client has it; true if it did.
  readonly insertKey: (client: ClientId, claim: KeyClaim, now: DateTime.Utc) => Effect.Effect<boolean>
  // The key as stored, locked until the transaction ends.
  readonly lockKey: (client: ClientId, key: IdempotencyKey) => Effect.Effect<Option.Option<KeyRecord>>
  // Rewrites the key whole as started at `now` by the claim's request, with no answer.
  readonly restartKey: (client: ClientId, claim: KeyClaim, now: DateTime.Utc) => Effect.Effect<void>
  // Writes the answer onto the key if it has none.
  readonly keepAnswer: (client: ClientId, key: IdempotencyKey, answer: KeptAnswer) => Effect.Effect<void>
  // Answers every key of the client with this request hash and no answer with TransferMade(transfer).
  readonly answerWaitingKeys: (client: ClientId, hash: RequestHash, transfer: TransferId) => Effect.Effect<void>
  // Deletes the key if it has no answer.
  readonly releaseKey: (client: ClientId, key: IdempotencyKey) => Effect.Effect<void>
}

// Transfers, in the transaction.
export interface TransferWrites {
  // Inserts the transfer unless its client has its reference; true if it did.
  readonly insertTransfer: (transfer: Transfer) => Effect.Effect<boolean>
  readonly referenceHolder: (client: ClientId, reference: Reference) => Effect.Effect<Option.Option<TransferId>>
  // Writes the transfer's status, failure, authorization code and reconciled time, and ends its reconciliation
  // lease, if its stored status is one of `from`; true if it did.
  readonly updateOutcome: (transfer: Transfer, from: ReadonlyArray<TransferStatus>) => Effect.Effect<boolean>
  // Deletes the transfer if its stored status is `status`.
  readonly deleteTransfer: (id: TransferId, status: TransferStatus) => Effect.Effect<void>
  // The client's transfer as stored, locked until the transaction ends (its refunds are decided under it).
  readonly lockTransfer: (client: ClientId, id: TransferId) => Effect.Effect<Option.Option<Transfer>>
  // Writes the transfer's amount refunded as `to` if it is `from`; true if it did.
  readonly updateRefunded: (id: TransferId, from: bigint, to: bigint) => Effect.Effect<boolean>
  // Adds the change's amount to the client's balance for its merchant and currency, made at 0 if it has none
  // (one upsert: concurrent first changes of one balance both count).
  readonly addToBalance: (change: BalanceChange) => Effect.Effect<void>
}

// Refunds, in the transaction (under their transfer's lock).
export interface RefundWrites {
  readonly insertRefund: (refund: Refund) => Effect.Effect<void>
  // The client's newest refund made with this Idempotency-Key, if any.
  readonly refundByKey: (client: ClientId, key: IdempotencyKey) => Effect.Effect<Option.Option<Refund>>
  // Writes the refund's status, failure reason and reconciled time, and ends its reconciliation lease, if its
  // stored status is `from`; true if it did.
  readonly updateRefundOutcome: (refund: Refund, from: RefundStatus) => Effect.Effect<boolean>
  // Deletes the refund if its stored status is `status`; true if it did.
  readonly deleteRefund: (id: RefundId, status: RefundStatus) => Effect.Effect<boolean>
}

export interface TransferTx extends EventTx, KeyWrites, TransferWrites, RefundWrites {}

// An event with its audience (core/webhooks/Events.ts): a delivery for each of the owner's live endpoints in it,
// as `recipients` reads them, within the same transaction.
export interface EventWrite {
  readonly event: NewEvent
  readonly audience: Audience
}

// A settle's writes as core decided them: the outcome onto the transfer if its stored status is one of `from`;
// only if that changed it, the event with a delivery for each endpoint of its audience and the balance change;
// then TransferMade(transfer) as the answer of `key` if it has none, or of every unanswered key of the client with
// request hash `waiting`.
export interface SettleWrites {
  readonly transfer: Transfer
  readonly from: ReadonlyArray<TransferStatus>
  readonly event?: EventWrite
  readonly balance?: BalanceChange
  readonly answer?: { readonly key: IdempotencyKey } | { readonly waiting: RequestHash }
}

// Combined operations: a database may do in one step (a statement, a call) what core would otherwise run as
// several operations in `transact` (decision 0038). Each is exactly those operations in one transaction, nothing
// more; without them core runs the operations themselves. PostgreSQL has them (a transaction costs it a round trip
// a statement); test/storage/CombinedEquivalence.test.ts holds them to core's composition.
export interface CombinedOperations {
  // updateOutcome, then insertEvent and addToBalance if it changed the transfer, then keepAnswer or
  // answerWaitingKeys; true if the outcome was written.
  readonly settle: (writes: SettleWrites) => Effect.Effect<boolean>
  // insertKey (started at the transfer's created time), then insertTransfer if the key was inserted.
  readonly insertKeyAndTransfer: (
    transfer: Transfer,
    claim: KeyClaim
  ) => Effect.Effect<{ readonly keyInserted: boolean; readonly transferInserted: boolean }>
  // insertTransfer, then insertEvent if the transfer was inserted; true if it was.
  readonly insertTransferAndEvent: (transfer: Transfer, event: EventWrite) => Effect.Effect<boolean>
}

// API clients.
export interface ClientOperations {
  readonly createClient: (client: ApiClient, keyHash: string, now: DateTime.Utc) => Effect.Effect<void>
  readonly clientByKeyHash: (keyHash: string) => Effect.Effect<Option.Option<ApiClient>>
  readonly hasClients: Effect.Effect<boolean>
}

// Idempotency keys, each read or write a transaction of its own.
export interface KeyOperations {
  // The key as stored, read without a lock (a read sees only what is durable).
  readonly keyRecord: (client: ClientId, key: IdempotencyKey) => Effect.Effect<Option.Option<KeyRecord>>
  // Deletes up to `limit` keys started before `before`; answers how many.
  readonly pruneKeys: (before: DateTime.Utc, limit: number) => Effect.Effect<number>
}

// A page of a client's transfers: those with this reference or status, made at or after `createdFrom` and
// before `createdBefore`, as one indexed read.
export interface TransferQuery {
  readonly reference?: Reference
  readonly status?: TransferStatus
  readonly createdFrom?: DateTime.Utc
  readonly createdBefore?: DateTime.Utc
  readonly limit: number
  readonly startingAfter?: TransferId
}

// A client's transfers (or refunds) made on one day in one currency and status: how many, and their amounts
// summed. `day` counts whole UTC days since 1970-01-01 (a time's epoch milliseconds divided by 86,400,000,
// rounded down).
export interface DayTotal<Status extends string> {
  readonly day: number
  readonly currency: CurrencyCode
  readonly status: Status
  readonly count: number
  readonly amount: bigint
}

// Transfers, each read or write a transaction of its own.
export interface TransferOperations {
  readonly get: (client: ClientId, id: TransferId) => Effect.Effect<Option.Option<Transfer>>
  readonly byReference: (client: ClientId, reference: Reference) => Effect.Effect<Option.Option<Transfer>>
  // Newest first by created time, then id: those that match every filter given and come after `startingAfter`
  // (of this client), at most limit + 1 read, so `hasMore` says whether more follow.
  readonly list: (
    client: ClientId,
    query: TransferQuery
  ) => Effect.Effect<{ readonly data: ReadonlyArray<Transfer>; readonly hasMore: boolean }>
  // The client's balances as addToBalance kept them, per recipient merchant and currency, exact, ordered by
  // both: one row each, never a sum over transfers.
  readonly balance: (client: ClientId) => Effect.Effect<ReadonlyArray<Balance>>
  // The client's transfers made at or after `from` and before `before`, grouped by day, currency and status, in
  // any order: one read of the client's range of its (client_id, created_at) index.
  readonly transferDays: (
    client: ClientId,
    from: DateTime.Utc,
    before: DateTime.Utc
  ) => Effect.Effect<ReadonlyArray<DayTotal<TransferStatus>>>
  // Leases up to `limit` transfers, oldest first, until `leaseUntil`: those UnsettledTransfers takes (the
  // `afterLease` ones created at or before `pendingBefore`), whose lease is unset or over at `now`. Concurrent callers never get
  // the same transfer while its lease runs (SKIP LOCKED on PostgreSQL).
  readonly claimUnsettled: (
    now: DateTime.Utc,
    pendingBefore: DateTime.Utc,
    leaseUntil: DateTime.Utc,
    limit: number
  ) => Effect.Effect<ReadonlyArray<Unsettled>>
  // Writes the attempts and the next lease end of a transfer still in UnsettledTransfers.all.
  readonly reconcileLater: (id: TransferId, attempts: number, next: DateTime.Utc) => Effect.Effect<void>
}

// Refunds, each read or write a transaction of its own.
export interface RefundOperations {
  readonly getRefund: (client: ClientId, id: RefundId) => Effect.Effect<Option.Option<Refund>>
  // A transfer's refunds, newest first by created time, then id, as `list` pages transfers.
  readonly listRefunds: (
    client: ClientId,
    transfer: TransferId,
    query: { readonly limit: number; readonly startingAfter?: RefundId }
  ) => Effect.Effect<{ readonly data: ReadonlyArray<Refund>; readonly hasMore: boolean }>
  // transferDays for the client's refunds (their own created time, amount and status).
  readonly refundDays: (
    client: ClientId,
    from: DateTime.Utc,
    before: DateTime.Utc
  ) => Effect.Effect<ReadonlyArray<DayTotal<RefundStatus>>>
  // claimUnsettled and reconcileLater for refunds: `unknown` ones and `pending` ones created at or before
  // `pendingBefore`, leased to one caller at a time.
  readonly claimUnsettledRefunds: (
    now: DateTime.Utc,
    pendingBefore: DateTime.Utc,
    leaseUntil: DateTime.Utc,
    limit: number
  ) => Effect.Effect<ReadonlyArray<UnsettledRefund>>
  readonly reconcileRefundLater: (id: RefundId, attempts: number, next: DateTime.Utc) => Effect.Effect<void>
}

// The port: the operations of a transaction, each also a transaction of its own, `transact` to run several in
// one, and the reads and writes above, grouped by aggregate.
export interface TransferStorageShape
  extends TransferTx, ClientOperations, KeyOperations, TransferOperations, RefundOperations
{
  readonly combined?: CombinedOperations
  // Runs `work` in one transaction. `work` only sequences the operations of `tx` (on SQLite it runs
  // synchronously inside the transaction); a defect rolls everything back.
  readonly transact: <A>(work: (tx: TransferTx) => Effect.Effect<A>) => Effect.Effect<A>
}

export class TransferStorage extends Context.Tag("TransferStorage")<TransferStorage, TransferStorageShape>() {}
