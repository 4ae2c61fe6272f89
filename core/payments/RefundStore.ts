import { Context, Data, DateTime, Effect, Either, Layer, Option } from "effect"
import { timeOrderedId } from "../shared/RandomId.ts"
import { emit, newEvent } from "../webhooks/Events.ts"
import { EventViews } from "../webhooks/EventViews.ts"
import type { EventId } from "../webhooks/Webhooks.ts"
import { IdempotencyStart, KeptAnswer, type KeyClaim, type NotStarted } from "./Idempotency.ts"
import { balanceChange } from "./Ledger.ts"
import {
  decideRefund,
  keyAnswersWith,
  pendingRefund,
  type Refund,
  refundEventType,
  type RefundId,
  type RefundReason,
  type RefundRefused,
  type RefundStatus
} from "./Refund.ts"
import { type ClientId, Transfer, type TransferId } from "./Transfer.ts"
import { TransferStorage, type TransferStorageShape, type TransferTx } from "./TransferStorage.ts"
import { startKey } from "./TransferStore.ts"

// What opening a refund came to: the refund made (`pending`, its amount counted against the transfer), or a
// key that did not start, or no such transfer, or a refusal. Only Opened writes anything.
export type Opening = Data.TaggedEnum<{
  // With the charge's authorization code, which names it to the card network.
  Opened: { readonly refund: Refund; readonly authorizationCode: string }
  KeyNotStarted: { readonly start: NotStarted }
  NoTransfer: {}
  Refused: { readonly reason: RefundRefused }
}>
export const Opening = Data.taggedEnum<Opening>()

export interface OpenRefund {
  readonly client: ClientId
  readonly transfer: TransferId
  readonly id: RefundId
  readonly amount: string | undefined
  readonly reason: RefundReason | undefined
  readonly claim: KeyClaim | undefined
}

// The store the refunds use case sees, made once over any database's TransferStorage port: the rules live
// here (what may be refunded, which events a change emits, which keys an outcome answers), the statements
// there. The transfer's row is locked while a refund is decided and its amount counted, so two refunds
// racing on one transfer, in one process or across instances, never together exceed its amount.
export interface RefundStoreShape {
  readonly open: (request: OpenRefund, now: DateTime.Utc) => Effect.Effect<Opening>
  // Writes the refund's new state (`unknown`, succeeded or failed) if it is still `from`, with its event; a
  // failed refund gives its amount back to its transfer, in the same transaction. Keeps it as the answer of
  // the key it was made with, if that key has none yet: for the request, or for the reconciler when the
  // request died.
  readonly settle: (refund: Refund, from: RefundStatus) => Effect.Effect<void>
  // Gives a refund up when the network could not be asked: no refund was made, its amount is left again.
  readonly cancel: (refund: Refund) => Effect.Effect<void>
  readonly get: TransferStorageShape["getRefund"]
  readonly list: TransferStorageShape["listRefunds"]
  readonly claimUnsettled: TransferStorageShape["claimUnsettledRefunds"]
  readonly reconcileLater: TransferStorageShape["reconcileRefundLater"]
}

export class RefundStore extends Context.Tag("RefundStore")<RefundStore, RefundStoreShape>() {}

export const make = Effect.gen(function*() {
  const storage = yield* TransferStorage
  const views = yield* EventViews

  // Moves a transfer read under its lock by `delta`: the write is conditional on the amount it read, and its
  // balance moves with it in the same transaction.
  const shift = (tx: TransferTx, t: Transfer, delta: bigint) =>
    Effect.flatMap(
      tx.updateRefunded(t.id, t.amountRefunded, t.amountRefunded + delta),
      (done) => {
        if (!done) return Effect.dieMessage(`transfer ${t.id} changed under its lock`)
        const change = balanceChange(t, new Transfer({ ...t, amountRefunded: t.amountRefunded + delta }, true))
        return change === undefined ? Effect.void : tx.addToBalance(change)
      }
    )
  // Moves the refund's transfer's amount refunded by `delta`, under its lock.
  const moveRefunded = (tx: TransferTx, refund: Refund, delta: bigint) =>
    Effect.flatMap(tx.lockTransfer(refund.clientId, refund.transferId), (t) =>
      Option.isNone(t)
        ? Effect.dieMessage(`refund ${refund.id} has no transfer ${refund.transferId}`)
        : shift(tx, t.value, delta))

  const open: RefundStoreShape["open"] = (request, now) =>
    storage.transact((tx) =>
      Effect.gen(function*() {
        if (request.claim !== undefined) {
          const start = yield* startKey(tx, request.client, request.claim, now)
          if (start._tag !== "Started") return Opening.KeyNotStarted({ start })
          // Taken over from a request that died after making its refund: that refund is the key's answer.
          const made = yield* tx.refundByKey(request.client, request.claim.key)
          if (Option.isSome(made) && keyAnswersWith(made.value, now)) {
            const answer = KeptAnswer.RefundMade({ refundId: made.value.id })
            yield* tx.keepAnswer(request.client, request.claim.key, answer)
            return Opening.KeyNotStarted({
              start: IdempotencyStart.Replay({ answer, requestId: request.claim.requestId })
            })
          }
        }
        // Nothing is made: the key started for this request is given up in the same transaction.
        const none = (opening: Opening) =>
          request.claim === undefined
            ? Effect.succeed(opening)
            : Effect.as(tx.releaseKey(request.client, request.claim.key), opening)
        const transfer = yield* tx.lockTransfer(request.client, request.transfer)
        if (Option.isNone(transfer)) return yield* none(Opening.NoTransfer())
        const amount = decideRefund(transfer.value, request.amount)
        if (Either.isLeft(amount)) return yield* none(Opening.Refused({ reason: amount.left }))
        const refund = pendingRefund(transfer.value, request.id, amount.right, request.reason, now, request.claim?.key)
        yield* tx.insertRefund(refund)
        yield* shift(tx, transfer.value, refund.amount)
        return Opening.Opened({ refund, authorizationCode: transfer.value.authorizationCode ?? "" })
      })
    )

  const settle: RefundStoreShape["settle"] = (refund, from) =>
    Effect.flatMap(
      Effect.zip(timeOrderedId("evt_"), DateTime.now),
      ([eventId, now]) =>
        storage.transact((tx) =>
          Effect.gen(function*() {
            // A late request or a second reconciler changes nothing, and emits nothing.
            if (yield* tx.updateRefundOutcome(refund, from)) {
              if (refund.status === "failed") yield* moveRefunded(tx, refund, -refund.amount)
              yield* emit(
                tx,
                newEvent(
                  eventId as EventId,
                  refundEventType(from),
                  refund.clientId,
                  views.refund(refund),
                  now,
                  refund.transferId
                )
              )
            }
            if (refund.idempotencyKey !== undefined && refund.status !== "pending") {
              const answer = KeptAnswer.RefundMade({ refundId: refund.id })
              yield* tx.keepAnswer(refund.clientId, refund.idempotencyKey, answer)
            }
          })
        )
    )

  const cancel: RefundStoreShape["cancel"] = (refund) =>
    storage.transact((tx) =>
      Effect.flatMap(
        tx.deleteRefund(refund.id, "pending"),
        (deleted) => deleted ? moveRefunded(tx, refund, -refund.amount) : Effect.void
      )
    )

  return RefundStore.of({
    open,
    settle,
    cancel,
    get: storage.getRefund,
    list: storage.listRefunds,
    claimUnsettled: storage.claimUnsettledRefunds,
    reconcileLater: storage.reconcileRefundLater
  })
})

export const layer = Layer.effect(RefundStore, make)
