import { Context, type DateTime, type Effect, type Option } from "effect"
import type { CurrencyCode } from "./Currency.ts"
import type { IdempotencyKey, IdempotencyStart, KeptAnswer, KeyClaim, KeyRecord } from "./Idempotency.ts"
import type { ClientId, DuplicateReference, Reference, Transfer, TransferId } from "./Transfer.ts"

export interface ApiClient {
  readonly id: ClientId
  readonly name: string
}

export interface Balance {
  readonly merchantId: string
  readonly currency: CurrencyCode
  readonly amount: bigint
}

// Storage for API clients, transfers and idempotency keys. It never sees a PAN, CVC or authentication value:
// a Transfer holds brand, last four, expiry and a keyed fingerprint only.
//
// A write that takes a claim first starts its key, in the same transaction, as core/Idempotency.ts's
// `decideStart` says; anything but Started is answered without writing the transfer. So a request with a key
// costs the transactions one without costs: start and reserve together, settle and keep the answer together.
// Before them, core/Transfers.ts reads the key (keyRecord): a retry of a key seen before is answered from that
// read alone.
export interface TransferStoreShape {
  readonly createClient: (client: ApiClient, keyHash: string, now: DateTime.Utc) => Effect.Effect<void>
  readonly clientByKeyHash: (keyHash: string) => Effect.Effect<Option.Option<ApiClient>>
  readonly hasClients: Effect.Effect<boolean>
  // Writes a transfer that is already final; with a claim, keeps it as the key's answer.
  readonly record: (transfer: Transfer, claim?: KeyClaim) => Effect.Effect<IdempotencyStart, DuplicateReference>
  // Takes the reference with a `pending` transfer before the card network is asked. A DuplicateReference
  // leaves a started key started: the caller keeps the answer it decides on.
  readonly reserve: (transfer: Transfer, claim?: KeyClaim) => Effect.Effect<IdempotencyStart, DuplicateReference>
  // Turns a reserved (`pending`) or `unknown` transfer into its new state (`unknown`, approved or declined)
  // and keeps it as the answer of `key`; without a key, as that of every unanswered key of its client with the
  // transfer's request hash (a request that died before it could). A final transfer is left as it is. The one
  // path by which an outcome is written, for requests and for the reconciler alike.
  readonly settle: (transfer: Transfer, key?: IdempotencyKey) => Effect.Effect<void>
  // Gives a reservation up when the network could not be asked: no transfer was made.
  readonly cancel: (transfer: Transfer) => Effect.Effect<void>
  // Keeps a started key's answer; a key that has one already keeps its own.
  readonly keep: (client: ClientId, key: IdempotencyKey, answer: KeptAnswer) => Effect.Effect<void>
  // A key's record as stored, read without writing (a read sees only what is durable). Once a key has an
  // answer, or is held by another request, a retry is judged from this read and costs no write.
  readonly keyRecord: (client: ClientId, key: IdempotencyKey) => Effect.Effect<Option.Option<KeyRecord>>
  // Frees a started key that has no answer, so that a retry runs again.
  readonly release: (client: ClientId, key: IdempotencyKey) => Effect.Effect<void>
  readonly get: (client: ClientId, id: TransferId) => Effect.Effect<Option.Option<Transfer>>
  readonly byReference: (client: ClientId, reference: Reference) => Effect.Effect<Option.Option<Transfer>>
  readonly list: (
    client: ClientId,
    query: { readonly reference?: Reference; readonly limit: number; readonly startingAfter?: TransferId }
  ) => Effect.Effect<{ readonly data: ReadonlyArray<Transfer>; readonly hasMore: boolean }>
  readonly balance: (client: ClientId) => Effect.Effect<ReadonlyArray<Balance>>
  // Leases up to `limit` transfers to reconcile until `leaseUntil`: `unknown` ones, and `pending` ones created
  // at or before `pendingBefore` (their request died), each only when its previous lease or wait is over.
  // Concurrent callers (other instances) never get the same transfer while its lease runs.
  readonly claimUnsettled: (
    now: DateTime.Utc,
    pendingBefore: DateTime.Utc,
    leaseUntil: DateTime.Utc,
    limit: number
  ) => Effect.Effect<ReadonlyArray<Unsettled>>
  // The network had no final answer yet: ask again at `next`.
  readonly reconcileLater: (id: TransferId, attempts: number, next: DateTime.Utc) => Effect.Effect<void>
  // Deletes up to `limit` idempotency keys started before `before`; answers how many it deleted.
  readonly pruneKeys: (before: DateTime.Utc, limit: number) => Effect.Effect<number>
}

export interface Unsettled {
  readonly transfer: Transfer
  // How often the network has been asked about it so far.
  readonly attempts: number
}

export class TransferStore extends Context.Tag("TransferStore")<TransferStore, TransferStoreShape>() {}
