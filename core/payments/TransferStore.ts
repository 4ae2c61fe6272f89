import { Context, DateTime, Effect, Layer, Option, Struct } from "effect"
import { timeOrderedId } from "../shared/RandomId.ts"
import { audienceOf, emit, newEvent } from "../webhooks/Events.ts"
import { EventViews } from "../webhooks/EventViews.ts"
import { type EventId, transferEventType } from "../webhooks/Webhooks.ts"
import type { CurrencyCode } from "./Currency.ts"
import {
  decideStart,
  type IdempotencyKey,
  IdempotencyStart,
  KeptAnswer,
  type KeyClaim,
  type RequestHash
} from "./Idempotency.ts"
import { balanceChange } from "./Ledger.ts"
import {
  answersWaitingKeys,
  type ClientId,
  DuplicateReference,
  type Transfer,
  type TransferId,
  unsettledStatuses
} from "./Transfer.ts"
import {
  type CombinedOperations,
  TransferStorage,
  type TransferStorageShape,
  type TransferTx
} from "./TransferStorage.ts"

export interface ApiClient {
  readonly id: ClientId
  readonly name: string
}

export interface Balance {
  readonly merchantId: string
  readonly currency: CurrencyCode
  readonly amount: bigint
}

// What the store hands the use cases from the port unchanged (documented there).
const passedThrough = [
  "createClient",
  "clientByKeyHash",
  "hasClients",
  "keyRecord",
  "get",
  "byReference",
  "list",
  "transferDays",
  "refundDays",
  "balance",
  "claimUnsettled",
  "reconcileLater",
  "pruneKeys"
] as const

// The store the use cases see for API clients, transfers and idempotency keys, made once (`layer`) over any
// database's TransferStorage port: the rules live here, the statements there. It never sees a PAN, CVC or
// authentication value: a Transfer holds brand, last four, expiry and a keyed fingerprint only.
//
// A write that takes a claim first starts its key, in the same transaction, as core/payments/Idempotency.ts's
// `decideStart` says; anything but Started is answered without writing the transfer. So a request with a key
// costs the transactions one without costs: start and reserve together, settle and keep the answer together.
// Before them, core/payments/Transfers.ts reads the key (keyRecord): a retry of a key seen before is answered from that
// read alone.
export interface TransferStoreShape extends Pick<TransferStorageShape, (typeof passedThrough)[number]> {
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
  // Frees a started key that has no answer, so that a retry runs again.
  readonly release: (client: ClientId, key: IdempotencyKey) => Effect.Effect<void>
}

export interface Unsettled {
  readonly transfer: Transfer
  // How often the network has been asked about it so far.
  readonly attempts: number
}

export class TransferStore extends Context.Tag("TransferStore")<TransferStore, TransferStoreShape>() {}

const started = IdempotencyStart.Started()

// Starts the key in `tx`: inserted if new (the primary key decides between concurrent first requests), else
// judged as stored, under the lock, and rewritten when it starts again.
export const startKey = (
  tx: TransferTx,
  client: ClientId,
  claim: KeyClaim,
  now: DateTime.Utc
): Effect.Effect<IdempotencyStart> =>
  Effect.flatMap(
    tx.insertKey(client, claim, now),
    (inserted) =>
      inserted ? Effect.succeed(started) : Effect.flatMap(tx.lockKey(client, claim.key), (record) => {
        // Released in between: the key is new again.
        if (Option.isNone(record)) return startKey(tx, client, claim, now)
        const decided = decideStart(record.value, claim, now)
        return decided._tag === "Started"
          ? Effect.as(tx.restartKey(client, claim, now), decided)
          : Effect.succeed(decided)
      })
  )

// Runs `attempt` (an insert of t) until it inserts, or answers the id of the transfer holding t's reference if
// that one was first. A competing reservation cancelled in between (its card network failed) frees it.
const insertOr = (
  tx: TransferTx,
  t: Transfer,
  attempt: Effect.Effect<boolean>
): Effect.Effect<TransferId | undefined> =>
  Effect.flatMap(
    attempt,
    (inserted) =>
      inserted ? Effect.succeed(undefined) : Effect.flatMap(
        tx.referenceHolder(t.clientId, t.reference),
        (holder) => Option.isNone(holder) ? insertOr(tx, t, attempt) : Effect.succeed(holder.value)
      )
  )
const insert = (tx: TransferTx, t: Transfer) => insertOr(tx, t, tx.insertTransfer(t))

// The combined operations as core runs them on a database that has none: the same operations, in one
// transaction.
const composed = (storage: TransferStorageShape): CombinedOperations => ({
  settle: ({ answer, balance, event, from, transfer: t }) =>
    storage.transact((tx) =>
      Effect.gen(function*() {
        const changed = yield* tx.updateOutcome(t, from)
        if (changed && event !== undefined) yield* emit(tx, event.event, event.audience)
        if (changed && balance !== undefined) yield* tx.addToBalance(balance)
        if (answer !== undefined && "key" in answer) {
          yield* tx.keepAnswer(t.clientId, answer.key, KeptAnswer.TransferMade({ transferId: t.id }))
        } else if (answer !== undefined) {
          yield* tx.answerWaitingKeys(t.clientId, answer.waiting, t.id)
        }
        return changed
      })
    ),
  insertKeyAndTransfer: (t, claim) =>
    storage.transact((tx) =>
      Effect.gen(function*() {
        const keyInserted = yield* tx.insertKey(t.clientId, claim, t.createdAt)
        return { keyInserted, transferInserted: keyInserted && (yield* tx.insertTransfer(t)) }
      })
    ),
  insertTransferAndEvent: (t, { audience, event }) =>
    storage.transact((tx) =>
      Effect.gen(function*() {
        const inserted = yield* tx.insertTransfer(t)
        if (inserted) yield* emit(tx, event, audience)
        return inserted
      })
    )
})

// The id of the transfer holding the reference fails as DuplicateReference.
const taken = (holder: TransferId | undefined) =>
  holder === undefined ? Effect.succeed(started) : Effect.fail(new DuplicateReference({ existing: holder }))

export const make = Effect.gen(function*() {
  const storage = yield* TransferStorage
  const combined = storage.combined ?? composed(storage)
  const views = yield* EventViews
  // The one place a transfer's event is made; written in the transaction that made the transfer final.
  const eventOf = (t: Transfer) => {
    const type = transferEventType(t.status)
    return type === undefined ? Effect.succeed(undefined) : Effect.map(
      Effect.zip(timeOrderedId("evt_"), DateTime.now),
      ([id, now]) => newEvent(id as EventId, type, t.clientId, views.transfer(t), now, t.id)
    )
  }

  // Starts the key (if any), then writes the transfer; when it is final, keeps it as the key's answer and
  // records its event and its balance change. A taken reference leaves a started key started, for the caller to
  // answer. Without a key, a reservation is one insert: no transaction of its own; with a new key, one combined
  // operation.
  const write = (t: Transfer, claim: KeyClaim | undefined, final: boolean) =>
    Effect.gen(function*() {
      const event = final ? yield* eventOf(t) : undefined
      const balance = balanceChange(undefined, t)
      if (claim !== undefined && !final) {
        const first = yield* combined.insertKeyAndTransfer(t, claim)
        if (first.keyInserted) return yield* taken(first.transferInserted ? undefined : yield* insert(storage, t))
      } else if (claim === undefined && event !== undefined && balance === undefined) {
        const audience = audienceOf(event)
        return yield* taken(yield* insertOr(storage, t, combined.insertTransferAndEvent(t, { event, audience })))
      }
      const work = (tx: TransferTx) =>
        Effect.gen(function*() {
          if (claim !== undefined) {
            const decided = yield* startKey(tx, t.clientId, claim, t.createdAt)
            if (decided._tag !== "Started") return decided
          }
          const holder = yield* insert(tx, t)
          if (holder !== undefined) return holder
          if (final && claim !== undefined) {
            yield* tx.keepAnswer(t.clientId, claim.key, KeptAnswer.TransferMade({ transferId: t.id }))
          }
          if (event !== undefined) yield* emit(tx, event)
          if (balance !== undefined) yield* tx.addToBalance(balance)
          return started
        })
      const written = claim === undefined && event === undefined && balance === undefined
        ? yield* work(storage)
        : yield* storage.transact(work)
      return typeof written === "string" ? yield* taken(written) : written
    })

  const settle: TransferStoreShape["settle"] = (t, key) =>
    Effect.gen(function*() {
      const event = yield* eventOf(t)
      const balance = balanceChange(undefined, t)
      yield* combined.settle({
        transfer: t,
        from: unsettledStatuses,
        // Written only with a change this call made: a late request or a second reconciler writes no event and
        // moves no balance. An unsettled transfer counts nothing (BalanceStatuses has no unsettled status).
        ...(event === undefined ? {} : { event: { event, audience: audienceOf(event) } }),
        ...(balance === undefined ? {} : { balance }),
        ...(key !== undefined
          ? { answer: { key } }
          : answersWaitingKeys(t)
          ? { answer: { waiting: t.requestHash as RequestHash } }
          : {})
      })
    })

  return TransferStore.of({
    ...Struct.pick(storage, ...passedThrough),
    record: (t, claim) => write(t, claim, true),
    reserve: (t, claim) => write(t, claim, false),
    settle,
    cancel: (t) => storage.deleteTransfer(t.id, "pending"),
    keep: storage.keepAnswer,
    release: storage.releaseKey
  })
})

// The store over the database's port: what every app and test wires above its TransferStorage.
export const layer = Layer.effect(TransferStore, make)
export { TransferStorage } from "./TransferStorage.ts"
