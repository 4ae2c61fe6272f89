// The kept balances (docs/decisions/0050) against what they stand for: a random history of transfers (approved,
// declined, unknown then reconciled, undecided, the network unavailable, the process dying while it is asked),
// refunds of them (succeeded, failed, unknown then reconciled either way, unavailable, dying) and reconciler
// passes, with and without Idempotency-Keys, runs through core's use cases on one database. fast-check's scheduler
// picks the order of the storage steps (test/storage/Stepper.ts), and requests die between steps or inside a
// transaction (rolled back after its first operation). Before every step and at the end, each client's balance as
// the store reads it must be the sum over its approved transfers of their amount less their refunds that count
// (pending, unknown, succeeded), read from the transfers and refunds themselves.
//
// In memory, on SQLite, PostgreSQL (with its combined operations) and MariaDB.
import { assert, describe, it } from "@effect/vitest"
import { DateTime, Effect, Layer, Logger, LogLevel, Random, Redacted, Schema } from "effect"
import * as fc from "effect/FastCheck"
import { join } from "node:path"
import { layer as MariaDbClient } from "../../adapters/mariadb/MariaDbClient.ts"
import { layer as MariaDbSubscriptionStore } from "../../adapters/mariadb/MariaDbSubscriptionStore.ts"
import { layer as MariaDbTransferStore } from "../../adapters/mariadb/MariaDbTransferStore.ts"
import * as MemoryDatabase from "../../adapters/memory/MemoryDatabase.ts"
import * as MemorySubscriptionStore from "../../adapters/memory/MemorySubscriptionStore.ts"
import * as MemoryTransferStore from "../../adapters/memory/MemoryTransferStore.ts"
import { layer as PgClientLayer } from "../../adapters/postgres/PgClient.ts"
import { layer as PgSubscriptionStore } from "../../adapters/postgres/PgSubscriptionStore.ts"
import { layer as PgTransferStore } from "../../adapters/postgres/PgTransferStore.ts"
import { runMigrations } from "../../adapters/sql/Migrations.ts"
import { subscriptionStorage, transferStorage } from "../../adapters/sqlite/SqliteStores.ts"
import { EventViewsLive } from "../../apps/http/webhooks/EventViewsLive.ts"
import {
  type Authorization,
  type AuthorizationLookup,
  CardNetwork,
  CardNetworkOutcomeUnknown,
  CardNetworkUnavailable,
  type RefundLookup
} from "../../core/payments/CardNetwork.ts"
import { IdempotencyKey } from "../../core/payments/Idempotency.ts"
import { ReconcileSettings } from "../../core/payments/ReconcileSettings.ts"
import { refundOutcomeUnknown, settledRefund } from "../../core/payments/Refund.ts"
import { Refunds } from "../../core/payments/Refunds.ts"
import { RefundStore } from "../../core/payments/RefundStore.ts"
import { ClientId, outcomeUnknown, PaymentTransferRequest, reconciled } from "../../core/payments/Transfer.ts"
import { Transfers } from "../../core/payments/Transfers.ts"
import type { TransferStorage } from "../../core/payments/TransferStorage.ts"
import { TransferStore } from "../../core/payments/TransferStore.ts"
import { storesOver } from "../../core/shared/Stores.ts"
import type { SubscriptionStorage } from "../../core/subscriptions/SubscriptionStorage.ts"
import { Fingerprints } from "../core/usecases/MemoryWorld.ts"
import * as MariaDb from "../support/MariaDb.ts"
import * as Postgres from "../support/Postgres.ts"
import { type CardOutcome, type Form, steppedStorage } from "./CombinedWorld.ts"
import { type Crash, schedulerChoice, Stepper } from "./Stepper.ts"
import { sqliteClient, tempDir } from "./TempSqlite.ts"

const T0 = Date.UTC(2025, 0, 15, 12)
const Wave = 60_000

const RefundCardOutcome = [
  "succeeded",
  "failed",
  "unknown-succeeded",
  "unknown-failed",
  "unavailable",
  "crash"
] as const
type RefundCardOutcome = (typeof RefundCardOutcome)[number]

type Request =
  | {
    readonly kind: "transfer"
    readonly client: number
    readonly merchant: number
    readonly currency: number
    readonly amount: number
    readonly key: number | undefined
    readonly badCard: boolean
    readonly outcome: CardOutcome
  }
  | {
    readonly kind: "refund"
    readonly client: number
    readonly transfer: number
    readonly amount: number | undefined
    readonly key: number | undefined
    readonly outcome: RefundCardOutcome
  }
  | { readonly kind: "reconcile" }
interface Step {
  readonly request: Request
  readonly crash: Crash | undefined
}
type History = ReadonlyArray<ReadonlyArray<Step>>

const transfer = fc.record({
  kind: fc.constant("transfer" as const),
  client: fc.integer({ min: 0, max: 1 }),
  merchant: fc.integer({ min: 0, max: 1 }),
  currency: fc.integer({ min: 0, max: 1 }),
  amount: fc.integer({ min: 0, max: 2 }),
  key: fc.option(fc.integer({ min: 0, max: 2 }), { nil: undefined }),
  badCard: fc.oneof({ arbitrary: fc.constant(false), weight: 5 }, fc.constant(true)),
  outcome: fc.oneof(
    { arbitrary: fc.constant("approved" as const), weight: 6 },
    fc.constantFrom("declined" as const, "unknown" as const, "undecided" as const, "unavailable" as const),
    fc.constant("crash" as const)
  )
})
const refund = fc.record({
  kind: fc.constant("refund" as const),
  client: fc.integer({ min: 0, max: 1 }),
  transfer: fc.nat(7),
  amount: fc.option(fc.integer({ min: 0, max: 2 }), { nil: undefined }),
  key: fc.option(fc.integer({ min: 0, max: 2 }), { nil: undefined }),
  outcome: fc.constantFrom(...RefundCardOutcome)
})
const reconcile = fc.constant({ kind: "reconcile" as const })
const crash = fc.oneof(
  { arbitrary: fc.constant(undefined), weight: 4 },
  { arbitrary: fc.record({ step: fc.integer({ min: 0, max: 4 }), inside: fc.boolean() }), weight: 1 }
)
const step = (request: fc.Arbitrary<Request>) => fc.record({ request, crash })
// Transfers first; then refunds of them beside more transfers; then the reconciler settles what is left, a
// minute apart each, so that the reconciler finds the pending ones whose request died.
const history: fc.Arbitrary<History> = fc.tuple(
  fc.array(step(fc.oneof({ arbitrary: transfer, weight: 4 }, refund)), { minLength: 1, maxLength: 6 }),
  fc.array(step(fc.oneof(transfer, { arbitrary: refund, weight: 3 }, reconcile)), { minLength: 1, maxLength: 6 }),
  fc.array(step(fc.oneof(refund, { arbitrary: reconcile, weight: 2 })), { minLength: 1, maxLength: 3 })
)

const clientOf = (n: number) => ClientId.make(`cl_${"ledger".padEnd(23, "x")}${n}`)
const currencies = ["USD", "JPY"] as const
const amounts = [["10.00", "2.50", "0.01"], ["1000", "250", "1"]] as const
// Whole units: valid in both currencies (1.00 USD, 1 JPY).
const refundAmounts = ["1", "2", "5"] as const
const decode = Schema.decodeUnknownSync(PaymentTransferRequest)
const requestOf = (r: Extract<Request, { kind: "transfer" }>, label: string) =>
  decode({
    reference: `ref-${label}`,
    amount: amounts[r.currency]![r.amount],
    currency: currencies[r.currency],
    sender_account_uri: `pan:${r.badCard ? "4242424242424241" : "4242424242424242"};exp=2030-12;cvc=123`,
    sender: { first_name: "Ann", email: "ann@example.com" },
    recipient: { first_name: "Bob", email: "bob@example.com", merchant_id: `m-${r.merchant}` }
  })

// The network answers as the history says (by the request's label); what it decided is what a lookup finds.
const scriptedNetwork = (stepper: Stepper, outcomes: ReadonlyMap<string, CardOutcome | RefundCardOutcome>) => {
  const charges = new Map<string, AuthorizationLookup>()
  const refunds = new Map<string, RefundLookup>()
  const approved: Authorization = { _tag: "Approved", authorizationCode: "AUTH" }
  const declined: Authorization = { _tag: "Declined", code: "card_declined", declineCode: "generic_decline" }
  return Layer.succeed(CardNetwork, {
    authorize: (request) =>
      Effect.gen(function*() {
        const outcome = outcomes.get(yield* stepper.label) ?? "approved"
        const decided = outcome === "declined"
          ? declined
          : outcome === "undecided"
          ? { _tag: "Undecided" as const }
          : outcome === "unavailable"
          ? { _tag: "NotFound" as const }
          : approved
        charges.set(request.transferId, decided)
        if (outcome === "unavailable") return yield* new CardNetworkUnavailable({ reason: "down" })
        if (outcome === "unknown" || outcome === "undecided") {
          return yield* new CardNetworkOutcomeUnknown({ reason: "time-out" })
        }
        if (outcome === "crash") return yield* stepper.die
        return decided as Authorization
      }),
    lookup: (transferId) => Effect.succeed(charges.get(transferId) ?? { _tag: "NotFound" }),
    refund: (request) =>
      Effect.gen(function*() {
        const outcome = outcomes.get(yield* stepper.label) ?? "succeeded"
        if (outcome === "unavailable") return yield* new CardNetworkUnavailable({ reason: "down" })
        const decided = outcome === "failed" || outcome === "unknown-failed"
          ? { _tag: "Failed" as const, reason: "declined" as const }
          : { _tag: "Succeeded" as const }
        refunds.set(request.refundId, decided)
        if (outcome === "unknown-succeeded" || outcome === "unknown-failed") {
          return yield* new CardNetworkOutcomeUnknown({ reason: "time-out" })
        }
        if (outcome === "crash") return yield* stepper.die
        return decided
      }),
    lookupRefund: (refundId) => Effect.succeed(refunds.get(refundId) ?? { _tag: "NotFound" as const })
  })
}

// What a request does, as core's use cases and the reconciler (one item after another) issue it.
const perform = (request: Request, label: string) =>
  Effect.gen(function*() {
    const now = yield* DateTime.now
    switch (request.kind) {
      case "transfer": {
        const key = request.key === undefined ? undefined : IdempotencyKey.make(`key-${request.key}`)
        return yield* (yield* Transfers).submit(clientOf(request.client), requestOf(request, label), label, key)
      }
      case "refund": {
        const client = clientOf(request.client)
        const made = (yield* (yield* TransferStore).list(client, { limit: 100 })).data
        if (made.length === 0) return "no transfer"
        const target = [...made].sort((a, b) => a.id.localeCompare(b.id))[request.transfer % made.length]!
        const key = request.key === undefined ? undefined : IdempotencyKey.make(`refund-key-${request.key}`)
        const amount = request.amount === undefined ? {} : { amount: refundAmounts[request.amount]! }
        return yield* (yield* Refunds).refund(client, target.id, amount, label, key)
      }
      case "reconcile": {
        const store = yield* TransferStore
        const refunds = yield* RefundStore
        const network = yield* CardNetwork
        const { claimLease, pendingLease } = yield* ReconcileSettings
        const pendingBefore = DateTime.subtractDuration(now, pendingLease)
        const leaseUntil = DateTime.addDuration(now, claimLease)
        const later = DateTime.add(now, { seconds: 30 })
        for (const { attempts, transfer } of yield* store.claimUnsettled(now, pendingBefore, leaseUntil, 100)) {
          const unknown = transfer.status === "pending" ? outcomeUnknown(transfer) : transfer
          if (transfer.status === "pending") yield* store.settle(unknown)
          const asked = yield* Effect.orDie(network.lookup(unknown.id))
          if (asked._tag === "Undecided") yield* store.reconcileLater(unknown.id, attempts + 1, later)
          else yield* store.settle(reconciled(unknown, asked, now))
        }
        for (const { refund } of yield* refunds.claimUnsettled(now, pendingBefore, leaseUntil, 100)) {
          const unknown = refund.status === "pending" ? refundOutcomeUnknown(refund) : refund
          if (refund.status === "pending") yield* refunds.settle(unknown, "pending")
          const asked = yield* Effect.orDie(network.lookupRefund(unknown.id))
          const outcome = asked._tag === "NotFound"
            ? { _tag: "Failed" as const, reason: "unknown" as const }
            : asked._tag === "Undecided"
            ? undefined
            : asked
          if (outcome !== undefined) yield* refunds.settle(settledRefund(unknown, outcome, now), "unknown")
        }
        return "reconciled"
      }
    }
  }).pipe(Effect.either)

// The refunds that count against a transfer (docs/refunds.md): those that moved money or may have.
const counting = new Set(["pending", "unknown", "succeeded"])

// Each client's balances as the store reads them, and as the transfers and refunds sum to.
const balances = Effect.gen(function*() {
  const store = yield* TransferStore
  const refunds = yield* RefundStore
  const kept: Array<string> = []
  const summed: Array<string> = []
  for (const client of [clientOf(0), clientOf(1)]) {
    for (const b of yield* store.balance(client)) kept.push(`${client} ${b.merchantId} ${b.currency} ${b.amount}`)
    const sums = new Map<string, bigint>()
    for (const t of (yield* store.list(client, { limit: 1000 })).data) {
      if (t.status !== "approved") continue
      const refunded = (yield* refunds.list(client, t.id, { limit: 1000 })).data
        .filter((r) => counting.has(r.status))
        .reduce((sum, r) => sum + r.amount, 0n)
      const k = `${client} ${t.recipient.merchant_id} ${t.currency}`
      sums.set(k, (sums.get(k) ?? 0n) + t.amount - refunded)
    }
    for (const [k, amount] of [...sums].sort(([x], [y]) => (x < y ? -1 : 1))) summed.push(`${k} ${amount}`)
  }
  return { kept, summed }
})

type Adapters = Layer.Layer<TransferStorage | SubscriptionStorage, unknown>

const world = (adapters: Adapters, form: Form, stepper: Stepper, network: Layer.Layer<CardNetwork>) =>
  Layer.merge(Transfers.Default, Refunds.Default).pipe(
    Layer.provideMerge(storesOver(steppedStorage(stepper, form)).pipe(Layer.provide(EventViewsLive))),
    Layer.provideMerge(Layer.merge(network, Fingerprints)),
    Layer.provideMerge(adapters)
  )

// The history on a new database; the balances compared before each step and after the last.
const runOn = (adapters: Adapters, form: Form, s: fc.Scheduler, steps: History) =>
  Effect.scoped(Effect.gen(function*() {
    let check: () => Promise<void> = () => Promise.resolve()
    const choose = schedulerChoice(s)
    const stepper = new Stepper(async (waiting) => {
      await check()
      return choose(waiting)
    })
    const label = (wave: number, i: number) => `w${wave}r${i}`
    const outcomes = new Map(
      steps.flatMap((wave, w) =>
        wave.flatMap(({ request }, i) => request.kind === "reconcile" ? [] : [[label(w, i), request.outcome] as const])
      )
    )
    const context = yield* Layer.build(world(adapters, form, stepper, scriptedNetwork(stepper, outcomes)))
    const compared = Effect.gen(function*() {
      const { kept, summed } = yield* balances
      assert.deepStrictEqual(kept, summed, `the balances after the steps ${stepper.order.join(", ")}`)
    }).pipe(Effect.provide(context))
    check = () => Effect.runPromise(compared)
    yield* Effect.gen(function*() {
      const store = yield* TransferStore
      for (const n of [0, 1]) {
        yield* store.createClient({ id: clientOf(n), name: `Client ${n}` }, `hash-${n}`, DateTime.unsafeMake(T0))
      }
      for (const [w, wave] of steps.entries()) {
        const clock = clockAt(T0 + w * Wave)
        for (const [i, { crash, request }] of wave.entries()) {
          const l = label(w, i)
          yield* stepper.start(
            l,
            crash,
            perform(request, l).pipe(Effect.withClock(clock), Effect.withRandom(Random.make(l)))
          )
        }
        yield* stepper.drive
      }
    }).pipe(Effect.provide(context))
    yield* compared
  })).pipe(Effect.provide(Logger.minimumLogLevel(LogLevel.None)))

// A clock that stands at `millis`: every time a request reads is its wave's.
const clockAt = (millis: number) => {
  const live = Effect.runSync(Effect.clock)
  return {
    ...live,
    unsafeCurrentTimeMillis: () => millis,
    currentTimeMillis: Effect.succeed(millis),
    unsafeCurrentTimeNanos: () => BigInt(millis) * 1_000_000n,
    currentTimeNanos: Effect.succeed(BigInt(millis) * 1_000_000n),
    sleep: live.sleep.bind(live)
  }
}

const property = (adapters: () => Adapters, form: Form, numRuns: number) =>
  fc.assert(
    fc.asyncProperty(fc.scheduler(), history, (s, steps) => Effect.runPromise(runOn(adapters(), form, s, steps))),
    { numRuns }
  )

const memory = (): Adapters =>
  Layer.merge(MemoryTransferStore.layer, MemorySubscriptionStore.layer).pipe(Layer.provide(MemoryDatabase.layer))

const sqlite = (): Adapters =>
  Layer.unwrapScoped(Effect.map(tempDir, (dir) =>
    Layer.merge(transferStorage, subscriptionStorage).pipe(
      Layer.provide(Layer.effectDiscard(runMigrations)),
      Layer.provide(sqliteClient(join(dir, "paysub.db")))
    )))

const onNewDatabase = (
  create: () => Promise<{ readonly url: string; readonly drop: () => Promise<void> }>,
  on: (url: string) => Adapters
): Adapters =>
  Layer.unwrapScoped(Effect.map(
    Effect.acquireRelease(Effect.promise(create), (database) => Effect.promise(() => database.drop())),
    (database) => on(database.url)
  ))

const postgres = () =>
  onNewDatabase(Postgres.createTestDatabase, (url) =>
    Layer.merge(PgTransferStore, PgSubscriptionStore).pipe(
      Layer.provide(Layer.effectDiscard(runMigrations)),
      Layer.provide(PgClientLayer(Redacted.make(url)))
    ))

const mariadb = () =>
  onNewDatabase(MariaDb.createTestDatabase, (url) =>
    Layer.merge(MariaDbTransferStore, MariaDbSubscriptionStore).pipe(
      Layer.provide(Layer.effectDiscard(runMigrations)),
      Layer.provide(MariaDbClient(Redacted.make(url)))
    ))

describe("the kept balance is the sum over transfers and refunds at every step", () => {
  it("in memory", () => property(memory, "composed", 100), 120_000)
  it("on SQLite", () => property(sqlite, "composed", 30), 120_000)
  it.skipIf(!Postgres.postgresEnabled)(
    `on PostgreSQL${Postgres.postgresEnabled ? "" : ` (skipped: ${Postgres.postgresSkipReason})`}`,
    () => property(postgres, "combined", 20),
    180_000
  )
  it.skipIf(!MariaDb.mariadbEnabled)(
    `on MariaDB${MariaDb.mariadbEnabled ? "" : ` (skipped: ${MariaDb.mariadbSkipReason})`}`,
    () => property(mariadb, "composed", 8),
    180_000
  )
})
