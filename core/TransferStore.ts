import { Context, type DateTime, type Effect, type Option } from "effect"
import type { CurrencyCode } from "./Currency.ts"
import type { ClientId, DuplicateReference, Reference, Transfer, TransferId } from "./Transfer.ts"

export interface ApiClient {
  readonly id: ClientId
  readonly name: string
}

// A response exactly as first sent, kept so that a retried request with the same Idempotency-Key gets the
// same bytes back.
export interface StoredResponse {
  readonly status: number
  readonly body: string
}

export type IdempotencyStart =
  | { readonly _tag: "Started" }
  | { readonly _tag: "Replay"; readonly response: StoredResponse }
  | { readonly _tag: "Mismatch" }
  | { readonly _tag: "InProgress" }

export interface Completion {
  readonly key: string
  readonly response: (transfer: Transfer) => StoredResponse
}

export interface Balance {
  readonly merchantId: string
  readonly currency: CurrencyCode
  readonly amount: bigint
}

// Storage for API clients, transfers and idempotency records. It never sees a PAN, CVC or authentication
// value: a Transfer holds brand, last four, expiry and a keyed fingerprint only.
export interface TransferStoreShape {
  readonly createClient: (client: ApiClient, keyHash: string, now: DateTime.Utc) => Effect.Effect<void>
  readonly clientByKeyHash: (keyHash: string) => Effect.Effect<Option.Option<ApiClient>>
  readonly hasClients: Effect.Effect<boolean>
  // Writes the transfer and, in the same transaction, the response its idempotency key replays.
  readonly record: (transfer: Transfer, completion?: Completion) => Effect.Effect<Transfer, DuplicateReference>
  // Takes the reference with a `pending` transfer before the card network is asked.
  readonly reserve: (transfer: Transfer) => Effect.Effect<void, DuplicateReference>
  // Turns a reserved transfer into its outcome, with its idempotent response, in one transaction.
  readonly settle: (transfer: Transfer, completion?: Completion) => Effect.Effect<Transfer>
  // Gives a reservation up when the network could not be asked: no transfer was made.
  readonly cancel: (transfer: Transfer) => Effect.Effect<void>
  readonly get: (client: ClientId, id: TransferId) => Effect.Effect<Option.Option<Transfer>>
  readonly byReference: (client: ClientId, reference: Reference) => Effect.Effect<Option.Option<Transfer>>
  readonly list: (
    client: ClientId,
    query: { readonly reference?: Reference; readonly limit: number; readonly startingAfter?: TransferId }
  ) => Effect.Effect<{ readonly data: ReadonlyArray<Transfer>; readonly hasMore: boolean }>
  readonly balance: (client: ClientId) => Effect.Effect<ReadonlyArray<Balance>>
  readonly beginIdempotent: (
    client: ClientId,
    key: string,
    requestHash: string,
    now: DateTime.Utc
  ) => Effect.Effect<IdempotencyStart>
  readonly completeIdempotent: (client: ClientId, key: string, response: StoredResponse) => Effect.Effect<void>
  readonly releaseIdempotent: (client: ClientId, key: string) => Effect.Effect<void>
}

export class TransferStore extends Context.Tag("TransferStore")<TransferStore, TransferStoreShape>() {}
