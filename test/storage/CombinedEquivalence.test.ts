// The combined operations (docs/decisions/0038) are defined as exactly a sequence of the port's own
// operations in one transaction. This property holds each database's combined forms to that: a history of
// requests as core issues them (transfers with and without an Idempotency-Key, approved, declined, unknown,
// undecided, unavailable or dying while the network is asked; keys and references taken by concurrent requests;
// new and repeated signups, mail batches, confirmations, a reconciler) runs on a new database through the
// adapter's combined operations, with fast-check's scheduler picking the order of the storage steps, and again on
// another new database of the same kind through core's composition of them (the adapter's port without
// `combined`), in the very same order. Requests also die between steps, or inside a transaction (rolled back
// after its first operation). Both runs must give every request the same answer and leave the same rows: the
// transfers, keys, events and their webhook deliveries, subscriptions, outbox and tokens.
//
// PostgreSQL and MariaDB have combined forms (SQLite's earned under 5% of the CPU per request and were removed:
// docs/decisions/0048; MariaDB's came with its direct path: docs/decisions/0064).
//
// One storage step runs at a time: the scheduler interleaves the requests at the steps, and the database decides
// nothing by timing, so that the two runs can be compared row for row.
import { assert, describe, it } from "@effect/vitest"
import { Cause, DateTime, Effect, Exit, Fiber, Layer, Logger, LogLevel, Option, Random, Redacted, Schema } from "effect"
import * as fc from "effect/FastCheck"
import { layer as MariaDbClientLayer } from "../../adapters/mariadb/MariaDbClient.ts"
import { layer as MariaDbSubscriptionStore } from "../../adapters/mariadb/MariaDbSubscriptionStore.ts"
import { layer as MariaDbTransferStore } from "../../adapters/mariadb/MariaDbTransferStore.ts"
import { layer as MariaDbWebhookStore } from "../../adapters/mariadb/MariaDbWebhookStore.ts"
import { layer as PgClientLayer } from "../../adapters/postgres/PgClient.ts"
import { layer as PgSubscriptionStore } from "../../adapters/postgres/PgSubscriptionStore.ts"
import { layer as PgTransferStore } from "../../adapters/postgres/PgTransferStore.ts"
import { layer as PgWebhookStore } from "../../adapters/postgres/PgWebhookStore.ts"
import { CardNetwork } from "../../core/payments/CardNetwork.ts"
import { IdempotencyKey } from "../../core/payments/Idempotency.ts"
import { ReconcileSettings } from "../../core/payments/ReconcileSettings.ts"
import { ClientId, outcomeUnknown, PaymentTransferRequest, reconciled } from "../../core/payments/Transfer.ts"
import { Transfers } from "../../core/payments/Transfers.ts"
import { TransferStore } from "../../core/payments/TransferStore.ts"
import { Email, normalizeEmail } from "../../core/shared/Email.ts"
import { DefaultFeed } from "../../core/subscriptions/Feed.ts"
import { Event, SubscriberName } from "../../core/subscriptions/Subscription.ts"
import { type IssuedTokens, SubscriptionStore } from "../../core/subscriptions/SubscriptionStore.ts"
import { ConfirmTokenTtl, TokenHash } from "../../core/subscriptions/Token.ts"
import { AdminOwner, EndpointId, WebhookStore } from "../../core/webhooks/Webhooks.ts"
import { createTestDatabase as createMariaDbDatabase, mariadbEnabled, mariadbSkipReason } from "../support/MariaDb.ts"
import { createTestDatabase, postgresEnabled, postgresSkipReason } from "../support/Postgres.ts"
import { type Adapters, CardOutcome, json, scriptedNetwork, sqlAdapters, storedRows, world } from "./CombinedWorld.ts"
import { type Choose, type Crash, replayChoice, schedulerChoice, Stepper } from "./Stepper.ts"

const T0 = Date.UTC(2025, 0, 15, 12)
const Wave = 60_000

type Request =
  | {
    readonly kind: "transfer"
    readonly client: number
    readonly key: number | undefined
    readonly reference: number
    readonly amount: number
    readonly badCard: boolean
    readonly outcome: CardOutcome
  }
  | { readonly kind: "subscribe"; readonly email: number; readonly upper: boolean; readonly name: number }
  | { readonly kind: "mail" }
  | { readonly kind: "confirm"; readonly token: number }
  | { readonly kind: "reconcile" }

interface Step {
  readonly request: Request
  readonly crash: Crash | undefined
}
type History = ReadonlyArray<ReadonlyArray<Step>>

const transfer = fc.record({
  kind: fc.constant("transfer" as const),
  client: fc.integer({ min: 0, max: 1 }),
  key: fc.option(fc.integer({ min: 0, max: 1 }), { nil: undefined }),
  reference: fc.integer({ min: 0, max: 1 }),
  // Mostly the same body: retries, and their keys' replays.
  amount: fc.oneof({ arbitrary: fc.constant(0), weight: 4 }, fc.constant(1)),
  // Fails Luhn: declined by core's own checks, a final transfer written at once.
  badCard: fc.oneof({ arbitrary: fc.constant(false), weight: 3 }, fc.constant(true)),
  // A key mostly comes with its own reference: its retries are the same request.
  sameReference: fc.oneof({ arbitrary: fc.constant(true), weight: 3 }, fc.constant(false)),
  outcome: fc.oneof(
    { arbitrary: fc.constant("approved" as const), weight: 4 },
    { arbitrary: fc.constantFrom("declined" as const, "unknown" as const), weight: 4 },
    fc.constantFrom("undecided" as const, "unavailable" as const, "crash" as const)
  )
}).map(({ sameReference, ...r }) => (sameReference && r.key !== undefined ? { ...r, reference: r.key } : r))
const subscribe = fc.record({
  kind: fc.constant("subscribe" as const),
  email: fc.integer({ min: 0, max: 2 }),
  upper: fc.boolean(),
  name: fc.integer({ min: 0, max: 1 })
})
const mail = fc.constant({ kind: "mail" as const })
// One of the confirmation tokens mailed in an earlier wave.
const confirm = fc.record({ kind: fc.constant("confirm" as const), token: fc.nat(7) })
const reconcile = fc.constant({ kind: "reconcile" as const })
const crash = fc.oneof(
  { arbitrary: fc.constant(undefined), weight: 5 },
  { arbitrary: fc.record({ step: fc.integer({ min: 0, max: 4 }), inside: fc.boolean() }), weight: 1 }
)
const step = (request: fc.Arbitrary<Request>) => fc.record({ request, crash })
// The first wave's requests at T0, the second's a minute later: past the pending lease, so that the reconciler
// finds the requests that died, and their retries restart keys.
const history: fc.Arbitrary<History> = fc.tuple(
  fc.array(
    step(
      fc.oneof({ arbitrary: transfer, weight: 4 }, { arbitrary: subscribe, weight: 3 }, { arbitrary: mail, weight: 2 })
    ),
    { minLength: 1, maxLength: 6 }
  ),
  fc.array(
    step(fc.oneof({ arbitrary: transfer, weight: 3 }, { arbitrary: subscribe, weight: 2 }, mail, confirm, reconcile)),
    { minLength: 1, maxLength: 6 }
  )
)

const clientOf = (n: number) => ClientId.make(`cl_${"client".padEnd(23, "x")}${n}`)
const endpointOf = (n: number) => EndpointId.make(`we_${"endpoint".padEnd(23, "x")}${n}`)
const amounts = ["1.00", "2.50"]
const decode = Schema.decodeUnknownSync(PaymentTransferRequest)
const requestOf = (r: Extract<Request, { kind: "transfer" }>) =>
  decode({
    reference: `ref-${r.reference}`,
    amount: amounts[r.amount],
    currency: "USD",
    sender_account_uri: `pan:${r.badCard ? "4242424242424241" : "4242424242424242"};exp=2030-12;cvc=123`,
    sender: { first_name: "Ann", email: "ann@example.com" },
    recipient: { first_name: "Bob", email: "bob@example.com", merchant_id: "m-1" }
  })
const emailOf = (n: number, upper = false) => Email.make(upper ? `Reader${n}@Example.com` : `reader${n}@example.com`)

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

const shown = <A, E>(exit: Exit.Exit<A, E>) =>
  Exit.match(exit, {
    onSuccess: (value) => json({ ok: value }),
    onFailure: (cause) =>
      Option.match(Cause.failureOption(cause), {
        onNone: () => `defect ${Cause.pretty(cause)}`,
        onSome: (e) => json({ failed: e })
      })
  })

// Endpoints of every kind for both clients and the admin: every type, one type, two types, a disabled one.
const setUp = Effect.gen(function*() {
  const store = yield* TransferStore
  const webhooks = yield* WebhookStore
  const at = DateTime.unsafeMake(T0 - Wave)
  for (const n of [0, 1]) yield* store.createClient({ id: clientOf(n), name: `Client ${n}` }, `hash-${n}`, at)
  const endpoints: ReadonlyArray<readonly [string, ReadonlyArray<string>]> = [
    [clientOf(0), ["*"]],
    [clientOf(0), ["transfer.approved"]],
    [clientOf(0), ["transfer.declined", "transfer.unknown"]],
    [clientOf(0), ["*"]],
    [clientOf(1), ["transfer.unknown"]],
    [AdminOwner, ["subscription.confirmed"]]
  ]
  for (const [n, [owner, enabledEvents]] of endpoints.entries()) {
    const id = endpointOf(n)
    yield* webhooks.createEndpoint(
      { id, owner, url: `https://hooks.example.com/${n}`, enabledEvents, createdAt: at },
      `whsec_${n}`
    )
  }
  yield* webhooks.endpointFailing(endpointOf(3), { failingSince: at, retryAt: at, reason: "gone" }, "disabled")
})

// What a request does, as core's use cases and workers issue it to the stores.
const perform = (request: Request, label: string, tokens: ReadonlyArray<TokenHash>, mailed: Array<TokenHash>) =>
  Effect.gen(function*() {
    const now = yield* DateTime.now
    switch (request.kind) {
      case "transfer": {
        const transfers = yield* Transfers
        const key = request.key === undefined ? undefined : IdempotencyKey.make(`key-${request.key}`)
        return yield* transfers.submit(clientOf(request.client), requestOf(request), label, key)
      }
      case "subscribe": {
        const store = yield* SubscriptionStore
        const name = SubscriberName.make(`Reader ${request.name}`)
        return yield* store.subscribe({ name, email: emailOf(request.email, request.upper), feed: DefaultFeed, now })
      }
      case "mail": {
        // A batch of the outbox worker's: the due mails claimed, their tokens stored, the mails marked sent.
        const store = yield* SubscriptionStore
        const due = [...yield* store.claimDue(now, DateTime.add(now, { seconds: 30 }), 100)].sort((a, b) => a.id - b.id)
        const batch: Array<{ entry: (typeof due)[number]; tokens: IssuedTokens }> = []
        for (const entry of due) {
          const subscription = Option.getOrThrow(yield* store.get(entry.subscriptionId))
          const hash = TokenHash.make(`${label}-${batch.length}-${normalizeEmail(subscription.email)}`)
          batch.push({
            entry,
            tokens: {
              confirm: { hash, expiresAt: DateTime.addDuration(now, ConfirmTokenTtl) },
              unsubscribe: { hash: TokenHash.make(`${hash}-unsubscribe`) }
            }
          })
        }
        const prepared = yield* store.prepareConfirmations(batch, now)
        const sent = batch.filter((_, i) => Option.isSome(prepared[i]!))
        mailed.push(...sent.map((b) => b.tokens.confirm.hash))
        yield* store.markSentAll(sent.map((b) => b.entry.id), now)
        return prepared.map(Option.getOrUndefined)
      }
      case "confirm": {
        const store = yield* SubscriptionStore
        const hash = tokens.length === 0 ? TokenHash.make("none") : tokens[request.token % tokens.length]!
        return yield* store.redeemToken(hash, "confirm", Event.Confirm(), now)
      }
      case "reconcile": {
        // The Reconciler's pass (core/payments/Reconciler.ts), one transfer after another.
        const store = yield* TransferStore
        const network = yield* CardNetwork
        const { claimLease, pendingLease } = yield* ReconcileSettings
        const due = yield* store.claimUnsettled(
          now,
          DateTime.subtractDuration(now, pendingLease),
          DateTime.addDuration(now, claimLease),
          100
        )
        const settled: Array<string> = []
        for (const { attempts, transfer } of [...due].sort((a, b) => a.transfer.id.localeCompare(b.transfer.id))) {
          const unknown = transfer.status === "pending" ? outcomeUnknown(transfer) : transfer
          if (transfer.status === "pending") yield* store.settle(unknown)
          const asked = yield* Effect.orDie(network.lookup(unknown.id))
          if (asked._tag === "Undecided") {
            yield* store.reconcileLater(unknown.id, attempts + 1, DateTime.add(now, { minutes: 1 }))
          } else yield* store.settle(reconciled(unknown, asked, now))
          settled.push(`${unknown.id} ${asked._tag}`)
        }
        return settled
      }
    }
  })

interface Run {
  readonly order: ReadonlyArray<string>
  readonly answers: Readonly<Record<string, string>>
  readonly rows: Readonly<Record<string, ReadonlyArray<string>>>
}

// The history on a new database of `adapters`, in `form`, its steps in the order `choose` picks.
const runIn = (adapters: Adapters, form: "combined" | "composed", choose: Choose, steps: History) =>
  Effect.scoped(Effect.gen(function*() {
    const stepper = new Stepper(choose)
    const label = (wave: number, i: number) => `w${wave}r${i}`
    const outcomes = new Map(
      steps.flatMap((wave, w) =>
        wave.flatMap(({ request }, i) => request.kind === "transfer" ? [[label(w, i), request.outcome] as const] : [])
      )
    )
    const network = scriptedNetwork(stepper, outcomes)
    const context = yield* Layer.build(world(adapters, form, stepper, network.layer))
    return yield* Effect.gen(function*() {
      yield* setUp
      const answers: Record<string, string> = {}
      const mailed: Array<TokenHash> = []
      for (const [w, wave] of steps.entries()) {
        const clock = clockAt(T0 + w * Wave)
        const tokens = [...mailed]
        const started = []
        for (const [i, { crash, request }] of wave.entries()) {
          const l = label(w, i)
          const fiber = yield* stepper.start(
            l,
            crash,
            perform(request, l, tokens, mailed).pipe(Effect.withClock(clock), Effect.withRandom(Random.make(l)))
          )
          started.push({ l, fiber })
        }
        yield* stepper.drive
        for (const { fiber, l } of started) {
          answers[l] = stepper.died(l) ? "died" : shown(yield* Fiber.await(fiber))
        }
      }
      return { order: stepper.order, answers, rows: yield* storedRows } satisfies Run
    }).pipe(Effect.provide(context))
  })).pipe(Effect.provide(Logger.minimumLogLevel(LogLevel.None)))

const labels = (order: ReadonlyArray<string>) => order.map((o) => o.split(" ")[0])

// The property: the combined form first, in the scheduler's order; the composed one in the same order.
const equivalence = (adapters: () => Adapters, numRuns: number) =>
  fc.assert(
    fc.asyncProperty(fc.scheduler(), history, (s, steps) =>
      Effect.runPromise(Effect.gen(function*() {
        const combined = yield* runIn(adapters(), "combined", schedulerChoice(s), steps)
        const composed = yield* runIn(adapters(), "composed", replayChoice(combined.order), steps)
        assert.deepStrictEqual(labels(composed.order), labels(combined.order), "the steps")
        assert.deepStrictEqual(composed.answers, combined.answers, "the answers")
        for (const table of Object.keys(combined.rows)) {
          assert.deepStrictEqual(composed.rows[table], combined.rows[table], `the rows of ${table}`)
        }
      }))),
    {
      numRuns,
      // FC_SEED and FC_PATH (from a failure's report) replay its counterexample.
      ...(process.env.FC_SEED === undefined ? {} : { seed: Number(process.env.FC_SEED) }),
      ...(process.env.FC_PATH === undefined ? {} : { path: process.env.FC_PATH })
    }
  )

const pgAdapters = (): Adapters =>
  Layer.unwrapScoped(Effect.map(
    Effect.acquireRelease(Effect.promise(() => createTestDatabase()), (database) =>
      Effect.promise(() => database.drop())),
    (database) =>
      sqlAdapters(
        PgClientLayer(Redacted.make(database.url)),
        Layer.mergeAll(PgTransferStore, PgSubscriptionStore, PgWebhookStore)
      )
  ))

const mariaDbAdapters = (): Adapters =>
  Layer.unwrapScoped(Effect.map(
    Effect.acquireRelease(Effect.promise(() => createMariaDbDatabase()), (database) =>
      Effect.promise(() => database.drop())),
    (database) =>
      sqlAdapters(
        MariaDbClientLayer(Redacted.make(database.url)),
        Layer.mergeAll(MariaDbTransferStore, MariaDbSubscriptionStore, MariaDbWebhookStore)
      )
  ))

describe("combined operations equal core's composition of them", () => {
  it.skipIf(!postgresEnabled)(
    `on PostgreSQL${postgresEnabled ? "" : ` (skipped: ${postgresSkipReason})`}`,
    () => equivalence(pgAdapters, 25),
    120_000
  )
  it.skipIf(!mariadbEnabled)(
    `on MariaDB${mariadbEnabled ? "" : ` (skipped: ${mariadbSkipReason})`}`,
    () => equivalence(mariaDbAdapters, 25),
    300_000
  )
})
