import { Data, DateTime, Effect, Either, Equal, Option, Redacted } from "effect"
import { randomId } from "../shared/RandomId.ts"
import { isExpired, luhn } from "./Card.ts"
import { CardFingerprints } from "./CardFingerprints.ts"
import { type Authorization, CardNetwork, type CardNetworkUnavailable } from "./CardNetwork.ts"
import {
  answerFromKey,
  decideStart,
  type IdempotencyKey,
  type IdempotencyKeyInUse,
  IdempotencyKeyReused,
  type IdempotencyStart,
  KeptAnswer,
  type KeyClaim,
  type NotStarted,
  type RequestHash,
  requestHash
} from "./Idempotency.ts"
import { parseAmount } from "./Money.ts"
import { ReconcileSettings } from "./ReconcileSettings.ts"
import {
  awaitsAnswer,
  type ClientId,
  type DuplicateReference,
  InvalidTransfer,
  outcomeUnknown,
  type PaymentTransferRequest,
  pendingTransfer,
  settled,
  type Transfer,
  TransferId
} from "./Transfer.ts"
import { TransferStore } from "./TransferStore.ts"

export { randomId } from "../shared/RandomId.ts"

// The lasting answer to a request for a transfer: the transfer made (approved, declined, or `unknown` until
// reconciled), or the one that already holds the reference. The same for the first request and its replays.
export type Answer = Data.TaggedEnum<{
  Made: { readonly transfer: Transfer }
  ReferenceTaken: { readonly existing: TransferId }
}>
export const Answer = Data.taggedEnum<Answer>()

// `requestId` is that of the request that first got the answer: a replay names it, as the first answer did.
// `requestHash` is the request's (core/payments/Idempotency.ts), by which its retries are recognised.
export interface Submitted {
  readonly answer: Answer
  readonly requestId: string
  readonly replayed: boolean
  readonly requestHash: RequestHash
}

export class Transfers extends Effect.Service<Transfers>()("Transfers", {
  effect: Effect.gen(function*() {
    const store = yield* TransferStore
    const network = yield* CardNetwork
    const fingerprints = yield* CardFingerprints
    const { pendingLease } = yield* ReconcileSettings

    // Card checks in the documented order: format (already done by the decoder), Luhn, expiry; the network
    // comes last, only for cards that pass these.
    const checkLocally = (request: PaymentTransferRequest, now: DateTime.Utc): Authorization | undefined => {
      const account = request.sender_account_uri
      if (!luhn(Redacted.value(account.pan))) return { _tag: "Declined", code: "incorrect_number" }
      if (isExpired(account.expiry, now)) return { _tag: "Declined", code: "expired_card" }
      return undefined
    }

    const submit = (client: ClientId, request: PaymentTransferRequest, requestId: string, key?: IdempotencyKey) =>
      Effect.gen(function*() {
        const amount = parseAmount(request.amount, request.currency)
        if (Either.isLeft(amount)) {
          return yield* new InvalidTransfer({ param: "payment_transfer.amount", message: amount.left })
        }
        // Every request's hash is kept with its transfer: a retry of it is recognised, with or without a key.
        const hash = requestHash(fingerprints, request)
        const claim: KeyClaim | undefined = key === undefined ? undefined : { key, requestHash: hash, requestId }
        // What a key that does not start answers: the kept answer, or why the request cannot run now.
        const fromKey = (start: NotStarted): Effect.Effect<Submitted, IdempotencyKeyReused | IdempotencyKeyInUse> =>
          answerFromKey(start, (answer, firstRequestId) => replay(client, answer, firstRequestId, hash))
        // Anything but Started is answered from the key: the transfer was not written. A request that got no
        // lasting answer frees its key, so that a retry can run.
        const unlessStarted = (
          start: IdempotencyStart,
          run: Effect.Effect<Submitted, CardNetworkUnavailable>
        ): Effect.Effect<Submitted, CardNetworkUnavailable | IdempotencyKeyReused | IdempotencyKeyInUse> =>
          start._tag !== "Started"
            ? fromKey(start)
            : claim === undefined
            ? run
            : Effect.onError(run, () => store.release(client, claim.key))
        // A key seen before is judged from a plain read first: a kept answer, another request's hash or a
        // running first attempt stays so once read, so such a retry is answered without a write. Only a start
        // writes; the store decides it again in its transaction, which concurrent requests cannot both win.
        const now = yield* DateTime.now
        if (claim !== undefined) {
          const seen = yield* store.keyRecord(client, claim.key)
          if (Option.isSome(seen)) {
            const decided = decideStart(seen.value, claim, now)
            if (decided._tag !== "Started") return yield* fromKey(decided)
          }
        }
        const id = TransferId.make(yield* randomId("tr_"))
        const fingerprint = fingerprints.of(request.sender_account_uri.pan)
        const pending = pendingTransfer(client, id, request, amount.right, fingerprint, now, hash)
        const first = (answer: Answer): Submitted => ({ answer, requestId, replayed: false, requestHash: hash })
        // A taken reference is a lasting answer: a retry with the key gets the same conflict. Unless the holder
        // is this very request, retried after its answer was lost (a time-out, a crash): then the answer is that
        // transfer's state, `unknown` until it is reconciled, never a conflict with its own reservation.
        const taken = ({ existing }: DuplicateReference) =>
          Effect.gen(function*() {
            const holder = yield* store.get(client, existing)
            const now = yield* DateTime.now
            const own = Option.isSome(holder) && holder.value.requestHash === hash &&
              awaitsAnswer(holder.value, now, pendingLease)
            const kept = own
              ? KeptAnswer.TransferMade({ transferId: existing })
              : KeptAnswer.ReferenceTaken({ existing })
            if (claim !== undefined) {
              yield* store.keep(client, claim.key, kept)
              // The holder may have been settled `unknown` meanwhile, which answers the keys waiting for its
              // request, this one included: the key's answer is what every retry gets, so it is this one's too.
              const stored = yield* store.keyRecord(client, claim.key)
              const answer = Option.isSome(stored) ? stored.value.answer : undefined
              if (answer !== undefined && !Equal.equals(answer, kept)) {
                return { ...(yield* replay(client, answer, requestId, hash)), replayed: false }
              }
            }
            return first(
              own ? Answer.Made({ transfer: Option.getOrThrow(holder) }) : Answer.ReferenceTaken({ existing })
            )
          })
        const answered = (transfer: Transfer) =>
          Effect.as(store.settle(transfer, key), first(Answer.Made({ transfer })))
        const local = checkLocally(request, pending.createdAt)
        const declined = local === undefined ? undefined : settled(pending, local)
        const submitted = declined !== undefined
          // Declined by our own checks: nothing to ask the network, one write.
          ? store.record(declined, claim).pipe(
            Effect.flatMap((start) => unlessStarted(start, Effect.succeed(first(Answer.Made({ transfer: declined })))))
          )
          // The reference is taken before the card is charged, so a second request with it cannot charge again.
          : store.reserve(pending, claim).pipe(
            Effect.flatMap((start) =>
              unlessStarted(
                start,
                network.authorize({
                  transferId: pending.id,
                  pan: request.sender_account_uri.pan,
                  expiry: request.sender_account_uri.expiry,
                  cvc: request.sender_account_uri.cvc,
                  authenticationValue: Option.fromNullable(request.authentication_value),
                  amount: amount.right,
                  currency: request.currency,
                  merchantId: request.recipient.merchant_id
                }).pipe(
                  Effect.matchEffect({
                    onSuccess: (authorization) => answered(settled(pending, authorization)),
                    // Sent, and no answer came back: the card may be charged. Recorded as `unknown` (the
                    // reconciler asks the network again), answered 202.
                    onFailure: (error) =>
                      error._tag === "CardNetworkOutcomeUnknown"
                        ? Effect.zipRight(
                          Effect.logWarning("card network outcome unknown", {
                            transfer: pending.id,
                            reason: error.reason
                          }),
                          answered(outcomeUnknown(pending))
                        )
                        : Effect.zipRight(store.cancel(pending), Effect.fail(error))
                  })
                )
              )
            ),
            // A client that hangs up must not leave a charge without its record. The card network bounds its
            // own calls (core/payments/CardNetwork.ts), so this region always ends.
            Effect.uninterruptible
          )
        return yield* Effect.catchTag(submitted, "DuplicateReference", taken)
      })

    const replay = (
      client: ClientId,
      answer: KeptAnswer,
      requestId: string,
      hash: RequestHash
    ): Effect.Effect<Submitted> =>
      KeptAnswer.$match(answer, {
        TransferMade: ({ transferId }) =>
          Effect.map(store.get(client, transferId), (found) => ({
            answer: Answer.Made({ transfer: Option.getOrThrow(found) }),
            requestId,
            replayed: true,
            requestHash: hash
          })),
        ReferenceTaken: ({ existing }) =>
          Effect.succeed({
            answer: Answer.ReferenceTaken({ existing }),
            requestId,
            replayed: true,
            requestHash: hash
          }),
        // The key's first request was a refund (its hash has another shape, so decideStart never gets here).
        RefundMade: () => Effect.die(new IdempotencyKeyReused())
      })

    // A retry known by its request's hash alone (the app saw the very bytes of its request decoded before, under
    // this key): the key's kept answer, as submit replays it, or none when the key has none to replay (not kept,
    // expired, another request's, still running): such a request is decoded and submitted as any other.
    const replayKept = (client: ClientId, key: IdempotencyKey, hash: RequestHash, requestId: string) =>
      Effect.flatMap(store.keyRecord(client, key), (seen) => {
        if (Option.isNone(seen)) return Effect.succeedNone
        return Effect.flatMap(DateTime.now, (now) => {
          const decided = decideStart(seen.value, { key, requestHash: hash, requestId }, now)
          return decided._tag === "Replay"
            ? Effect.asSome(replay(client, decided.answer, decided.requestId, hash))
            : Effect.succeedNone
        })
      })

    return {
      submit,
      replayKept,
      get: store.get,
      list: store.list,
      balance: store.balance
    } as const
  })
}) {}
