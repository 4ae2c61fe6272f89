// Property tests of refunds (Refunds.refund, the Reconciler) over the in-memory storage adapter: random
// concurrent refunds of a few transfers, with random amounts, keys and card-network outcomes, interleaved by
// fast-check's scheduler, requests whose process "dies" while the network is asked, then reconciliation.
// The invariant of the issue: the refunds of a transfer that are succeeded or may still succeed (pending,
// unknown) never sum to more than its amount, at any point; and in the end the transfer's amount refunded is
// exactly what the network refunded.
import { assert, describe, it } from "@effect/vitest"
import {
  Cause,
  Deferred,
  Effect,
  Exit,
  Fiber,
  FiberRef,
  Layer,
  Logger,
  LogLevel,
  Option,
  Schema,
  TestClock,
  TestContext
} from "effect"
import * as fc from "effect/FastCheck"
import { MemoryDatabase } from "../../../adapters/memory/MemoryDatabase.ts"
import {
  type Authorization,
  CardNetwork,
  CardNetworkOutcomeUnknown,
  CardNetworkUnavailable,
  type RefundLookup
} from "../../../core/payments/CardNetwork.ts"
import { IdempotencyKey } from "../../../core/payments/Idempotency.ts"
import { Reconciler } from "../../../core/payments/Reconciler.ts"
import type { RefundOutcome } from "../../../core/payments/Refund.ts"
import { type RefundAnswer, Refunds } from "../../../core/payments/Refunds.ts"
import { ClientId, PaymentTransferRequest, type TransferId } from "../../../core/payments/Transfer.ts"
import { Transfers } from "../../../core/payments/Transfers.ts"
import { Fingerprints, memoryWorld } from "./MemoryWorld.ts"

const Outcome = fc.constantFrom(
  "succeeded",
  "failed",
  "unknown-succeeded",
  "unknown-failed",
  "unknown-notfound",
  "unavailable",
  "crash-succeeded",
  "crash-notfound"
)
type Outcome = typeof Outcome extends fc.Arbitrary<infer A> ? A : never

interface Command {
  // 0 and 1 are approved transfers (10.00 USD, 700 JPY), 2 a declined one.
  readonly transfer: number
  readonly amount: number | undefined
  readonly key: number | undefined
}
const command: fc.Arbitrary<Command> = fc.record({
  transfer: fc.constantFrom(0, 0, 1, 2),
  amount: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }),
  key: fc.option(fc.integer({ min: 0, max: 2 }), { nil: undefined })
})
const amounts = [["1.00", "2.50", "4.00", "0.005"], ["100", "250", "400", "1.5"]] as const

const client = ClientId.make(`cl_${"refunds".padEnd(24, "x")}`)
const decode = Schema.decodeUnknownSync(PaymentTransferRequest)
const transferRequest = (reference: string, amount: string, currency: string, pan: string) =>
  decode({
    reference,
    amount,
    currency,
    sender_account_uri: `pan:${pan};exp=2030-12;cvc=123`,
    sender: { first_name: "Ann", email: "ann@example.com" },
    recipient: { first_name: "Bob", email: "bob@example.com", merchant_id: "m-0" }
  })

const current = FiberRef.unsafeMake<{ readonly label: string; readonly died: Deferred.Deferred<void> } | undefined>(
  undefined
)

// Approves every card but 4000000000000002; refunds answer as scripted, released by the scheduler. `truth` is
// what the network did per refund id; `refunded` the money it gave back per transfer.
const scriptedNetwork = (s: fc.Scheduler, outcomes: ReadonlyArray<Outcome>, check: () => void) => {
  const truth = new Map<string, RefundOutcome | { readonly _tag: "NotFound" }>()
  const refunded = new Map<string, bigint>()
  const perKey = new Map<string, number>()
  let calls = 0
  const later = <A>(value: A) => Effect.promise(() => s.schedule(Promise.resolve(value)))
  const layer = Layer.succeed(CardNetwork, {
    authorize: (request) =>
      Effect.succeed<Authorization>(
        request.merchantId === "m-0"
          ? { _tag: "Approved", authorizationCode: "AUTH" }
          : { _tag: "Declined", code: "card_declined" }
      ),
    lookup: () => Effect.succeed({ _tag: "NotFound" as const }),
    refund: (request) =>
      Effect.gen(function*() {
        check()
        const outcome = outcomes[calls++ % outcomes.length]!
        const who = yield* FiberRef.get(current)
        const decided: RefundOutcome | undefined = outcome.endsWith("succeeded")
          ? { _tag: "Succeeded" }
          : outcome.endsWith("failed")
          ? { _tag: "Failed", reason: "declined" }
          : undefined
        if (outcome !== "unavailable") {
          truth.set(request.refundId, decided ?? { _tag: "NotFound" })
          // A refund the network got (whatever it did with it), per Idempotency-Key.
          if (!who!.label.startsWith("none-")) perKey.set(who!.label, (perKey.get(who!.label) ?? 0) + 1)
          if (decided?._tag === "Succeeded") {
            refunded.set(request.transferId, (refunded.get(request.transferId) ?? 0n) + request.amount)
          }
        }
        yield* later(undefined)
        check()
        if (outcome === "unavailable") return yield* new CardNetworkUnavailable({ reason: "down" })
        if (outcome.startsWith("unknown")) return yield* new CardNetworkOutcomeUnknown({ reason: "time-out" })
        if (outcome.startsWith("crash")) {
          yield* Deferred.succeed(who!.died, undefined)
          return yield* Effect.never
        }
        return decided!
      }),
    lookupRefund: (refundId) => later<RefundLookup>(truth.get(refundId) ?? { _tag: "NotFound" })
  })
  return { layer, truth, refunded, perKey }
}

const shown = (a: RefundAnswer) => JSON.stringify({ id: a.refund.id, status: a.refund.status, r: a.requestId })

describe("Refunds over the in-memory store", () => {
  it(
    "never refunds more than a transfer's amount, under concurrent refunds, outcomes, crashes and reconciliation",
    () =>
      fc.assert(
        fc.asyncProperty(
          fc.scheduler(),
          fc.array(command, { minLength: 1, maxLength: 12 }),
          fc.array(Outcome, { minLength: 1, maxLength: 12 }),
          async (s, commands, outcomes) => {
            let tables: MemoryDatabase["Type"]["tables"] | undefined
            // At any moment: per transfer, its counted refunds are exactly its amount refunded, within its amount.
            const check = () => {
              if (tables === undefined) return
              for (const { transfer: t } of tables.transfers.values()) {
                const counted = [...tables.refunds.values()].filter(({ refund: r }) =>
                  r.transferId === t.id && r.status !== "failed"
                ).reduce((sum, { refund: r }) => sum + r.amount, 0n)
                assert.strictEqual(t.amountRefunded, counted, `${t.id}: amount refunded against its refunds`)
                assert.isTrue(counted <= t.amount, `${t.id}: ${counted} refunded of ${t.amount}`)
              }
            }
            const network = scriptedNetwork(s, outcomes, check)
            const program = Effect.gen(function*() {
              tables = (yield* MemoryDatabase).tables
              const transfers = yield* Transfers
              const made: Array<TransferId> = []
              for (
                const [i, [amount, currency, merchant]] of [["10.00", "USD", "m-0"], ["700", "JPY", "m-0"], [
                  "5.00",
                  "USD",
                  "m-1"
                ]].entries()
              ) {
                const request = { ...transferRequest(`t-${i}`, amount, currency, "4242424242424242") }
                const submitted = yield* transfers.submit(
                  client,
                  { ...request, recipient: { ...request.recipient, merchant_id: merchant as any } },
                  `t-${i}`
                )
                assert.strictEqual(submitted.answer._tag, "Made")
                if (submitted.answer._tag === "Made") made.push(submitted.answer.transfer.id)
              }
              const refunds = yield* Refunds
              const refund = (c: Command, label: string) => {
                const amount = c.amount === undefined ? undefined : amounts[c.transfer === 1 ? 1 : 0][c.amount]
                return refunds.refund(
                  client,
                  made[c.transfer]!,
                  { ...(amount === undefined ? {} : { amount }), reason: "requested_by_customer" },
                  label,
                  c.key === undefined ? undefined : IdempotencyKey.make(`key-${c.key}`)
                )
              }
              // Every request at once; each ends (Some), or dies while the network is asked (None).
              const start = (c: Command, label: string) =>
                Effect.gen(function*() {
                  const died = yield* Deferred.make<void>()
                  const fiber = yield* Effect.forkDaemon(
                    Effect.locally(refund(c, label), current, { label: `${c.key ?? `none-${label}`}`, died })
                  )
                  return Effect.raceFirst(
                    Effect.map(Fiber.await(fiber), Option.some),
                    Effect.as(Deferred.await(died), Option.none())
                  )
                })
              const runs = yield* Effect.forEach(commands, (c, i) => start(c, `req-${i}`))
              const ended = yield* Effect.forEach(
                runs,
                (run, i) => Effect.map(run, (exit) => ({ c: commands[i]!, i, exit })),
                { concurrency: "unbounded" }
              )
              check()
              // A keyed request that died is retried once its key's lease is over, before the reconciler has
              // settled its refund: the retry takes the key over and must get that refund, not make another.
              yield* TestClock.adjust("2 minutes")
              for (const { c, exit, i } of ended) {
                if (c.key !== undefined && Option.isNone(exit)) yield* Effect.flatten(start(c, `retry-dead-${i}`))
              }
              check()

              for (const { c, exit, i } of ended) {
                if (Option.isNone(exit)) continue
                if (Exit.isFailure(exit.value)) {
                  // Only the documented refusals; a declined transfer is never refundable.
                  const failure = Cause.failureOption(exit.value.cause)
                  if (Option.isNone(failure)) assert.fail(`req-${i} died: ${Cause.pretty(exit.value.cause)}`)
                  const error = failure.value as { readonly _tag: string }
                  assert.include(
                    [
                      "AmountTooLarge",
                      "TransferAlreadyRefunded",
                      "TransferNotRefundable",
                      "InvalidRefund",
                      "CardNetworkUnavailable",
                      "IdempotencyKeyReused",
                      "IdempotencyKeyInUse"
                    ],
                    error._tag
                  )
                  continue
                }
                assert.notStrictEqual(c.transfer, 2, "a declined transfer was refunded")
                const first = exit.value.value
                // A retry with the key and body of an answered request is that answer again.
                if (c.key === undefined) continue
                const again = yield* Effect.either(refund(c, `retry-${i}`))
                assert.isTrue(again._tag === "Right", `retry of req-${i} failed`)
                if (again._tag === "Right") assert.strictEqual(shown(again.right), shown(first))
              }

              const reconciler = yield* Reconciler
              for (let pass = 0; pass < 10; pass++) {
                yield* TestClock.adjust("10 minutes")
                if ((yield* reconciler.reconcileDue) === 0) break
              }
              check()
              // Everything settled, and the store agrees with the network to the minor unit.
              for (const { refund: r } of tables.refunds.values()) {
                assert.include(["succeeded", "failed"], r.status, `${r.id} left ${r.status}`)
                const truth = network.truth.get(r.id)
                if (truth !== undefined) assert.strictEqual(r.status === "succeeded", truth._tag === "Succeeded")
              }
              for (const id of made) {
                const t = tables.transfers.get(id)!.transfer
                assert.strictEqual(t.amountRefunded, network.refunded.get(id) ?? 0n, `${id} against the network`)
              }
              for (const [key, n] of network.perKey) assert.isAtMost(n, 1, `key ${key} refunded ${n} times`)
            }).pipe(
              Effect.provide(
                Layer.mergeAll(Transfers.Default, Refunds.Default, Reconciler.Default).pipe(
                  Layer.provideMerge(memoryWorld(Effect.promise(() => s.schedule(Promise.resolve())))),
                  Layer.provide(Layer.merge(network.layer, Fingerprints))
                )
              ),
              Effect.provide(TestContext.TestContext),
              Logger.withMinimumLogLevel(LogLevel.None)
            )
            await s.waitFor(Effect.runPromise(program))
          }
        ),
        { numRuns: 150 }
      ),
    120_000
  )
})
