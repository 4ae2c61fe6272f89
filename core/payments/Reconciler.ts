import { DateTime, Duration, Effect, Either, Random, Schedule } from "effect"
import { retryDelay } from "../shared/Backoff.ts"
import { type HeldClaims, makeHeldClaims } from "../shared/HeldClaims.ts"
import { makeStorageBackoff } from "../shared/StorageBackoff.ts"
import { CardNetwork } from "./CardNetwork.ts"
import { ReconcileSettings } from "./ReconcileSettings.ts"
import { refundOutcomeUnknown, settledRefund } from "./Refund.ts"
import { RefundStore } from "./RefundStore.ts"
import { outcomeUnknown, reconciled } from "./Transfer.ts"
import type { UnsettledRefund } from "./TransferStorage.ts"
import { TransferStore, type Unsettled } from "./TransferStore.ts"

// Settles what no request could: `unknown` transfers and refunds, and `pending` ones whose request died
// between reserving and settling. It is state in the database (the transfer's status and its next attempt), so it survives
// restarts and runs on every instance; the store leases each transfer to one of them at a time. A backlog is
// taken ReconcileBatch transfers (and refunds) at a time, each claim one short statement over the unsettled
// rows' partial index, whatever the size of the table.
export const ReconcileBatch = 8
const BatchSize = ReconcileBatch

export class Reconciler extends Effect.Service<Reconciler>()("Reconciler", {
  effect: Effect.gen(function*() {
    const store = yield* TransferStore
    const refunds = yield* RefundStore
    const network = yield* CardNetwork
    const settings = yield* ReconcileSettings
    // The transfers and refunds this reconciler claimed and has not settled or put off (core/shared/HeldClaims.ts).
    const heldTransfers = makeHeldClaims((u: Unsettled) => u.transfer.id as string, settings.claimLease)
    const heldRefunds = makeHeldClaims((u: UnsettledRefund) => u.refund.id as string, settings.claimLease)
    // Capped, jittered backoff; never given up: the money is somewhere.
    // No final answer yet: asked again after the backoff, and said once per attempt.
    const askLater = <Id extends string>(
      what: "transfer" | "refund",
      id: Id,
      attempts: number,
      asked: Either.Either<unknown, { readonly reason: string }>,
      now: DateTime.Utc,
      reconcileLater: (id: Id, attempts: number, next: DateTime.Utc) => Effect.Effect<void>
    ) =>
      Effect.gen(function*() {
        const delay = Duration.min(retryDelay(attempts + 1, yield* Random.next), settings.maxDelay)
        yield* reconcileLater(id, attempts + 1, DateTime.addDuration(now, delay))
        yield* Effect.logWarning(`${what} outcome still unknown`, {
          [what]: id,
          attempts: attempts + 1,
          reason: Either.isLeft(asked) ? asked.left.reason : "the network has not decided"
        })
      })

    const reconcile = ({ attempts, transfer }: Unsettled) =>
      Effect.gen(function*() {
        // A reservation whose request died is the same unknown: shown as such, and its key answered with it.
        const unknown = transfer.status === "pending" ? outcomeUnknown(transfer) : transfer
        if (transfer.status === "pending") yield* store.settle(unknown)
        const asked = yield* Effect.either(network.lookup(unknown.id))
        const now = yield* DateTime.now
        if (Either.isRight(asked) && asked.right._tag !== "Undecided") {
          const answer = asked.right
          yield* store.settle(reconciled(unknown, answer, now))
          return yield* Effect.logInfo("transfer reconciled", { transfer: unknown.id, outcome: answer._tag })
        }
        yield* askLater("transfer", unknown.id, attempts, asked, now, store.reconcileLater)
      })

    // The same for a refund: a pending one whose request died is `unknown` first (its refund.created), then
    // final once the network answers (refund.updated). One the network never received failed: nothing moved.
    const reconcileRefund = ({ attempts, refund }: UnsettledRefund) =>
      Effect.gen(function*() {
        const unknown = refund.status === "pending" ? refundOutcomeUnknown(refund) : refund
        if (refund.status === "pending") yield* refunds.settle(unknown, "pending")
        const asked = yield* Effect.either(network.lookupRefund(unknown.id))
        const now = yield* DateTime.now
        if (Either.isRight(asked) && asked.right._tag !== "Undecided") {
          const answer = asked.right
          const outcome = answer._tag === "NotFound" ? { _tag: "Failed" as const, reason: "unknown" as const } : answer
          yield* refunds.settle(settledRefund(unknown, outcome, now), "unknown")
          return yield* Effect.logInfo("refund reconciled", { refund: unknown.id, outcome: answer._tag })
        }
        yield* askLater("refund", unknown.id, attempts, asked, now, refunds.reconcileLater)
      })

    // What a failed pass left is taken up first, then what is due. The network is asked again about what was
    // held: a lookup changes nothing.
    const claimed = <A>(
      held: HeldClaims<A, string>,
      key: (a: A) => string,
      claim: Effect.Effect<ReadonlyArray<A>>,
      now: DateTime.Utc,
      leaseUntil: DateTime.Utc,
      work: (a: A) => Effect.Effect<void>
    ) =>
      Effect.gen(function*() {
        const resumed = held.take(now, BatchSize).map((c) => c.item)
        const due = resumed.length > 0 ? resumed : yield* claim
        if (resumed.length === 0) held.hold(due, leaseUntil)
        yield* Effect.forEach(
          due,
          (a) => Effect.tap(work(a), () => held.done([key(a)])),
          { concurrency: BatchSize, discard: true }
        ).pipe(Effect.onError(() => Effect.sync(() => held.release(due.map(key)))))
        return due.length
      })

    // One pass over what is due; answers how many transfers and refunds it took.
    const reconcileDue = Effect.gen(function*() {
      const now = yield* DateTime.now
      const pendingBefore = DateTime.subtractDuration(now, settings.pendingLease)
      const leaseUntil = DateTime.addDuration(now, settings.claimLease)
      const transfers = yield* claimed(
        heldTransfers,
        (u) => u.transfer.id,
        store.claimUnsettled(now, pendingBefore, leaseUntil, BatchSize),
        now,
        leaseUntil,
        reconcile
      )
      const refundsTaken = yield* claimed(
        heldRefunds,
        (u) => u.refund.id,
        refunds.claimUnsettled(now, pendingBefore, leaseUntil, BatchSize),
        now,
        leaseUntil,
        reconcileRefund
      )
      return Math.max(transfers, refundsTaken)
    })

    // A full batch is followed by the next at once, after a timer's turn (not yieldNow's microtask): with a store
    // and a network that answer without I/O (the memory store, the sandbox's lookups on SQLite's reads), the
    // loop would otherwise hold the event loop until the backlog is gone.
    const backoff = makeStorageBackoff("reconciler")
    const run = backoff.guard(
      reconcileDue.pipe(
        Effect.flatMap((taken) => Effect.sleep(taken === BatchSize ? Duration.zero : settings.pollInterval))
      ),
      undefined
    ).pipe(Effect.repeat(Schedule.forever), Effect.asVoid)

    return { reconcileDue, run } as const
  })
}) {}
