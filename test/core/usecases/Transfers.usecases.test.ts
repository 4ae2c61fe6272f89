// Property tests of the payment use cases (Transfers.submit, the Reconciler) over the in-memory storage
// adapter: random keys, references, bodies and card-network outcomes, concurrent requests interleaved by
// fast-check's scheduler (the network's answers come back in the order it picks), requests whose process
// "dies" while the network is asked (they never return), then reconciliation.
import { assert, describe, it } from "@effect/vitest"
import {
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
import type { Authorization, AuthorizationLookup } from "../../../core/payments/CardNetwork.ts"
import { CardNetwork, CardNetworkOutcomeUnknown, CardNetworkUnavailable } from "../../../core/payments/CardNetwork.ts"
import { IdempotencyKey } from "../../../core/payments/Idempotency.ts"
import { Reconciler } from "../../../core/payments/Reconciler.ts"
import { ClientId, PaymentTransferRequest, type Transfer } from "../../../core/payments/Transfer.ts"
import { type Submitted, Transfers } from "../../../core/payments/Transfers.ts"
import { TransferStore } from "../../../core/payments/TransferStore.ts"
import { Fingerprints, memoryWorld } from "./MemoryWorld.ts"

const Outcome = fc.constantFrom(
  "approved",
  "declined",
  "unknown-approved",
  "unknown-declined",
  "unknown-notfound",
  "unavailable",
  "crash-approved",
  "crash-notfound"
)
type Outcome = typeof Outcome extends fc.Arbitrary<infer A> ? A : never

interface Command {
  readonly client: number
  readonly key: number | undefined
  readonly reference: number
  readonly amount: number
  readonly merchant: number
  readonly badCard: boolean
}
const command: fc.Arbitrary<Command> = fc.record({
  client: fc.integer({ min: 0, max: 1 }),
  key: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }),
  reference: fc.integer({ min: 0, max: 3 }),
  amount: fc.integer({ min: 0, max: 2 }),
  merchant: fc.integer({ min: 0, max: 1 }),
  // Fails Luhn: declined by the core's own checks, without asking the network.
  badCard: fc.boolean()
})

const amounts = ["1.00", "2.50", "10.00"]
const clientOf = (n: number) => ClientId.make(`cl_${"client".padEnd(23, "x")}${n}`)
const decode = Schema.decodeUnknownSync(PaymentTransferRequest)
const requestOf = (c: Command) =>
  decode({
    reference: `ref-${c.reference}`,
    amount: amounts[c.amount],
    currency: "USD",
    sender_account_uri: `pan:${c.badCard ? "4242424242424241" : "4242424242424242"};exp=2030-12;cvc=123`,
    sender: { first_name: "Ann", email: "ann@example.com" },
    recipient: { first_name: "Bob", email: "bob@example.com", merchant_id: `m-${c.merchant}` }
  })

// Which request a network call belongs to, and where it tells that its process died.
const current = FiberRef.unsafeMake<{ readonly label: string; readonly died: Deferred.Deferred<void> } | undefined>(
  undefined
)

// A card network whose answers the scheduler releases; what it decided per transfer is the truth the
// reconciler finds out (NotFound: the request never reached it, nothing was charged).
const scriptedNetwork = (s: fc.Scheduler, outcomes: ReadonlyArray<Outcome>) => {
  const truth = new Map<string, Authorization | { readonly _tag: "NotFound" }>()
  const charges: Array<
    { readonly transferId: string; readonly label: string; readonly amount: bigint; merchant: string }
  > = []
  let calls = 0
  const later = <A>(value: A) => Effect.promise(() => s.schedule(Promise.resolve(value)))
  const approved: Authorization = { _tag: "Approved", authorizationCode: "AUTH" }
  const declined: Authorization = { _tag: "Declined", code: "card_declined", declineCode: "generic_decline" }
  const layer = Layer.succeed(CardNetwork, {
    authorize: (request) =>
      Effect.gen(function*() {
        const outcome = outcomes[calls++ % outcomes.length]!
        const who = yield* FiberRef.get(current)
        const decided = outcome.endsWith("approved") ? approved : outcome.endsWith("declined") ? declined : undefined
        if (outcome !== "unavailable") {
          truth.set(request.transferId, decided ?? { _tag: "NotFound" })
          if (decided === approved) {
            charges.push({
              transferId: request.transferId,
              label: who!.label,
              amount: request.amount,
              merchant: request.merchantId
            })
          }
        }
        yield* later(undefined)
        if (outcome === "unavailable") return yield* new CardNetworkUnavailable({ reason: "down" })
        if (outcome.startsWith("unknown")) return yield* new CardNetworkOutcomeUnknown({ reason: "time-out" })
        if (outcome.startsWith("crash")) {
          yield* Deferred.succeed(who!.died, undefined)
          return yield* Effect.never
        }
        return decided!
      }),
    lookup: (transferId) => later<AuthorizationLookup>(truth.get(transferId) ?? { _tag: "NotFound" }),
    // These properties make no refunds.
    refund: () => Effect.die("refund is not part of these properties"),
    lookupRefund: () => Effect.die("lookupRefund is not part of these properties")
  })
  return { layer, truth, charges }
}

// What a client sees of an answer: a replay must show exactly this again.
const shown = (submitted: Submitted) =>
  JSON.stringify({
    requestId: submitted.requestId,
    answer: submitted.answer._tag === "Made"
      ? { made: submitted.answer.transfer.id, status: submitted.answer.transfer.status }
      : { taken: submitted.answer.existing }
  })
const final = (submitted: Submitted) =>
  submitted.answer._tag === "ReferenceTaken" ||
  submitted.answer.transfer.status === "approved" || submitted.answer.transfer.status === "declined"

describe("Transfers over the in-memory store", () => {
  it("keeps every payment invariant under concurrent requests, outcomes, crashes and reconciliation", () =>
    fc.assert(
      fc.asyncProperty(
        fc.scheduler(),
        fc.array(command, { minLength: 1, maxLength: 12 }),
        fc.array(Outcome, { minLength: 1, maxLength: 12 }),
        async (s, commands, outcomes) => {
          const network = scriptedNetwork(s, outcomes)
          const program = Effect.gen(function*() {
            const transfers = yield* Transfers
            const store = yield* TransferStore
            const submit = (c: Command, label: string) =>
              transfers.submit(
                clientOf(c.client),
                requestOf(c),
                label,
                c.key === undefined ? undefined : IdempotencyKey.make(`key-${c.key}`)
              )
            // Every request at once; each ends, or dies while the network is asked.
            const runs = yield* Effect.forEach(commands, (c, i) =>
              Effect.gen(function*() {
                const died = yield* Deferred.make<void>()
                const fiber = yield* Effect.forkDaemon(
                  Effect.locally(submit(c, `req-${i}`), current, { label: `${c.client}/${c.key ?? `none-${i}`}`, died })
                )
                return { c, i, fiber, died }
              }))
            const ended = yield* Effect.forEach(runs, (r) =>
              Effect.raceFirst(
                Effect.map(Fiber.await(r.fiber), Option.some),
                Effect.as(Deferred.await(r.died), Option.none())
              ).pipe(Effect.map((exit) => ({ ...r, exit }))), { concurrency: "unbounded" })

            // Every acknowledged final answer is replayed as it was, for a retry with its key and body.
            for (const { c, exit, i } of ended) {
              if (c.key === undefined || Option.isNone(exit) || !Exit.isSuccess(exit.value)) continue
              const first = exit.value.value
              if (!final(first)) continue
              const again = yield* Effect.either(submit(c, `retry-${i}`))
              assert.isTrue(again._tag === "Right", `retry of req-${i} failed`)
              if (again._tag === "Right") {
                assert.isTrue(again.right.replayed || again.right.requestId === first.requestId)
                assert.strictEqual(shown(again.right), shown(first))
              }
            }

            // Reconciliation: past every lease, until nothing is left to settle.
            const reconciler = yield* Reconciler
            for (let pass = 0; pass < 10; pass++) {
              yield* TestClock.adjust("10 minutes")
              if ((yield* reconciler.reconcileDue) === 0) break
            }

            const all: Array<Transfer> = []
            for (const client of [0, 1]) {
              const { data } = yield* store.list(clientOf(client), { limit: 1000 })
              all.push(...data)
              const references = data.map((t) => t.reference)
              assert.strictEqual(new Set(references).size, references.length, "one transfer per reference")
              for (const t of data) {
                assert.include(["approved", "declined"], t.status, `${t.id} left ${t.status}`)
                const truth = network.truth.get(t.id)
                if (truth !== undefined) {
                  assert.strictEqual(t.status === "approved", truth._tag === "Approved", `${t.id} against the network`)
                }
              }
              // The balance is the sum of the approved transfers, and of what the network charged.
              const balance = yield* store.balance(clientOf(client))
              const sum = (merchant: string) =>
                data.filter((t) => t.status === "approved" && t.recipient.merchant_id === merchant)
                  .reduce((a, t) => a + t.amount, 0n)
              for (const merchant of ["m-0", "m-1"]) {
                const shownBalance = balance.find((b) => b.merchantId === merchant)?.amount ?? 0n
                assert.strictEqual(shownBalance, sum(merchant))
              }
            }
            // Every charge has its approved transfer, and no key or reference is charged twice.
            const ids = new Set(all.filter((t) => t.status === "approved").map((t) => t.id))
            for (const charge of network.charges) {
              assert.isTrue(ids.has(charge.transferId as any), "a charge without its transfer")
            }
            const perKey = new Map<string, number>()
            for (const charge of network.charges) {
              if (charge.label.includes("/none-")) {
                continue
              }
              perKey.set(charge.label, (perKey.get(charge.label) ?? 0) + 1)
            }
            for (const [key, n] of perKey) assert.isAtMost(n, 1, `key ${key} charged ${n} times`)
            assert.strictEqual(ids.size, network.charges.length)
          }).pipe(
            Effect.provide(
              Layer.mergeAll(Transfers.Default, Reconciler.Default).pipe(
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
    ), 120_000)
})
