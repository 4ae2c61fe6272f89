import { DateTime, Effect, Option } from "effect"
import { randomId } from "../shared/RandomId.ts"
import { CardFingerprints } from "./CardFingerprints.ts"
import { CardNetwork, type CardNetworkUnavailable } from "./CardNetwork.ts"
import {
  answerFromKey,
  decideStart,
  type IdempotencyKey,
  type IdempotencyKeyInUse,
  IdempotencyKeyReused,
  type KeptAnswer,
  type KeyClaim,
  type NotStarted,
  refundRequestHash
} from "./Idempotency.ts"
import {
  type Refund,
  RefundId,
  refundOutcomeUnknown,
  type RefundRefused,
  type RefundRequest,
  settledRefund,
  TransferNotFound
} from "./Refund.ts"
import { RefundStore } from "./RefundStore.ts"
import type { ClientId, TransferId } from "./Transfer.ts"
import { TransferStore } from "./TransferStore.ts"

// The lasting answer to a refund request, first or replayed: the refund made (succeeded, failed, or `unknown`
// until reconciled). `requestId` is that of the request that first got it.
export interface RefundAnswer {
  readonly refund: Refund
  readonly requestId: string
  readonly replayed: boolean
}

export type RefundError =
  | RefundRefused
  | TransferNotFound
  | CardNetworkUnavailable
  | IdempotencyKeyReused
  | IdempotencyKeyInUse

export class Refunds extends Effect.Service<Refunds>()("Refunds", {
  effect: Effect.gen(function*() {
    const store = yield* RefundStore
    const transfers = yield* TransferStore
    const network = yield* CardNetwork
    const fingerprints = yield* CardFingerprints

    const replay = (client: ClientId, answer: KeptAnswer, requestId: string) =>
      answer._tag === "RefundMade"
        ? Effect.map(store.get(client, answer.refundId), (found): RefundAnswer => ({
          refund: Option.getOrThrow(found),
          requestId,
          replayed: true
        }))
        // The key's first request was a transfer: this one is another request.
        : Effect.fail(new IdempotencyKeyReused())

    const fromKey = (client: ClientId, start: NotStarted) =>
      answerFromKey(start, (answer, requestId) => replay(client, answer, requestId))

    // Refunds `request.amount` (or all that is left) of the client's transfer. Idempotency-Key works as on
    // transfers: a key seen before is judged from a plain read; a start is decided again in the transaction
    // that counts the refund against the transfer. The card network is asked after the refund is counted, so
    // concurrent refunds cannot together exceed the transfer's amount; a network that could not be asked
    // gives the amount back.
    const refund = (
      client: ClientId,
      transfer: TransferId,
      request: RefundRequest,
      requestId: string,
      key?: IdempotencyKey
    ): Effect.Effect<RefundAnswer, RefundError> =>
      Effect.gen(function*() {
        const hash = refundRequestHash(fingerprints, transfer, request)
        const claim: KeyClaim | undefined = key === undefined ? undefined : { key, requestHash: hash, requestId }
        const now = yield* DateTime.now
        if (claim !== undefined) {
          const seen = yield* transfers.keyRecord(client, claim.key)
          if (Option.isSome(seen)) {
            const decided = decideStart(seen.value, claim, now)
            if (decided._tag !== "Started") return yield* fromKey(client, decided)
          }
        }
        const id = RefundId.make(yield* randomId("re_"))
        const opening = yield* store.open({
          client,
          transfer,
          id,
          amount: request.amount,
          reason: request.reason,
          claim
        }, now)
        switch (opening._tag) {
          case "KeyNotStarted":
            return yield* fromKey(client, opening.start)
          case "NoTransfer":
            return yield* new TransferNotFound()
          case "Refused":
            return yield* Effect.fail(opening.reason)
        }
        const pending = opening.refund
        const answered = (r: Refund) => Effect.as(store.settle(r, "pending"), { refund: r, requestId, replayed: false })
        const asked = network.refund({
          refundId: pending.id,
          transferId: transfer,
          authorizationCode: opening.authorizationCode,
          amount: pending.amount,
          currency: pending.currency
        }).pipe(
          Effect.matchEffect({
            onSuccess: (outcome) => answered(settledRefund(pending, outcome)),
            onFailure: (error) =>
              error._tag === "CardNetworkOutcomeUnknown"
                ? Effect.zipRight(
                  Effect.logWarning("card network outcome unknown", { refund: pending.id, reason: error.reason }),
                  answered(refundOutcomeUnknown(pending))
                )
                : Effect.zipRight(store.cancel(pending), Effect.fail(error))
          })
        )
        // A request that got no lasting answer frees its key, so that a retry runs again. A client that hangs
        // up must not leave a refund without its record: the network bounds its own calls.
        return yield* (claim === undefined ? asked : Effect.onError(asked, () => transfers.release(client, claim.key)))
          .pipe(Effect.uninterruptible)
      })

    return { refund, get: store.get, list: store.list } as const
  })
}) {}
