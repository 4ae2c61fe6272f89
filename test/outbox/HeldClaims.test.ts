// Work a live worker claimed when the database went away is taken up again by its next pass that the database
// answers, not left to wait out its lease (core/shared/HeldClaims.ts): mails, webhook deliveries and reconciles.
// Each worker runs over real SQLite storage whose store fails, as PostgreSQL's does while it is down, in the
// statement after the claim while `away` says so. Time is the TestClock's.
import { SqlClient } from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import { DateTime, Duration, Effect, Exit, Layer, Option, Redacted, Ref, Schema, TestClock } from "effect"
import { join } from "node:path"
import { SandboxCardNetwork, sandboxTimeoutCards } from "../../adapters/cardnetwork/SandboxCardNetwork.ts"
import { layer as CryptoTokens } from "../../adapters/crypto/CryptoTokens.ts"
import { layer as HmacFingerprints } from "../../adapters/crypto/HmacFingerprints.ts"
import { MemoryMailer } from "../../adapters/mail/MemoryMailer.ts"
import { runMigrations } from "../../adapters/sql/Migrations.ts"
import { layer as SqliteWebhookStore } from "../../adapters/sqlite/SqliteWebhookStore.ts"
import { Reconciler } from "../../core/payments/Reconciler.ts"
import { ClientId, PaymentTransferRequest } from "../../core/payments/Transfer.ts"
import { Transfers } from "../../core/payments/Transfers.ts"
import { TransferStore } from "../../core/payments/TransferStore.ts"
import { Email } from "../../core/shared/Email.ts"
import { SiteSettings } from "../../core/shared/SiteSettings.ts"
import { DefaultFeed } from "../../core/subscriptions/Feed.ts"
import { Lease, OutboxWorker } from "../../core/subscriptions/OutboxWorker.ts"
import { SubscriberName } from "../../core/subscriptions/Subscription.ts"
import { SubscriptionStore } from "../../core/subscriptions/SubscriptionStore.ts"
import { EndpointId, EventId, type SignedRequest, WebhookSender, WebhookStore } from "../../core/webhooks/Webhooks.ts"
import { DeliveryLease, WebhookWorker } from "../../core/webhooks/WebhookWorker.ts"
import { sqliteClient, tempDir, tempSqliteStore, tempSqliteTransferStore } from "../storage/TempSqlite.ts"

const T0 = Date.UTC(2025, 0, 15, 12, 0, 0)
const second = Duration.seconds(1)
// What a store's statement answers while the database is away (a defect, as on PostgreSQL): `away.from` names the
// first statement that fails; it and every one after it fail.
const away: { from: string | undefined; gone: boolean } = { from: undefined, gone: false }
const orAway = <A>(name: string, effect: Effect.Effect<A>): Effect.Effect<A> =>
  Effect.suspend(() => {
    if (away.from === name) away.gone = true
    return away.gone ? Effect.die(new Error("Connection terminated unexpectedly")) : effect
  })
const failsWhileAway = <A, E, R>(from: string, effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    away.from = from
    const exit = yield* Effect.exit(effect)
    away.from = undefined
    away.gone = false
    assert.isTrue(Exit.isFailure(exit), "the pass failed with the database")
  })

describe("mails claimed when the database went away", () => {
  const layer = () => {
    const flaky = Layer.effect(
      SubscriptionStore,
      Effect.map(SubscriptionStore, (store) =>
        SubscriptionStore.of({
          ...store,
          prepareConfirmations: (...args) => orAway("prepareConfirmations", store.prepareConfirmations(...args)),
          markSentAll: (...args) => orAway("markSentAll", store.markSentAll(...args))
        }))
    )
    return OutboxWorker.Default.pipe(
      Layer.provide(flaky),
      Layer.provideMerge(Layer.mergeAll(
        tempSqliteStore(),
        MemoryMailer.layer,
        CryptoTokens,
        Layer.succeed(SiteSettings, SiteSettings.of({ baseUrl: "https://news.example.com" }))
      ))
    )
  }
  const run = <A, E>(self: Effect.Effect<A, E, Layer.Layer.Success<ReturnType<typeof layer>>>) =>
    Effect.gen(function*() {
      yield* TestClock.setTime(T0)
      yield* Effect.flatMap(SubscriptionStore, (store) =>
        store.subscribe({
          name: SubscriberName.make("Ann Example"),
          email: Email.make("ann@example.com"),
          feed: DefaultFeed,
          now: DateTime.unsafeMake(T0)
        }))
      return yield* self
    }).pipe(Effect.provide(layer()))
  const deliverDue = Effect.flatMap(OutboxWorker, (worker) => worker.deliverDue)
  const sent = Effect.flatMap(MemoryMailer, (memory) => memory.sent)
  const unsent = Effect.flatMap(SqlClient, (sql) => sql`SELECT id FROM mail_outbox WHERE sent_at IS NULL`).pipe(
    Effect.map((rows) => rows.length),
    Effect.orDie
  )

  it.effect("a mail not sent yet goes out with the next pass, not once its lease ends", () =>
    run(Effect.gen(function*() {
      // The row is claimed; its tokens cannot be stored.
      yield* failsWhileAway("prepareConfirmations", deliverDue)
      assert.lengthOf(yield* sent, 0)
      yield* TestClock.adjust(second)
      assert.strictEqual(yield* deliverDue, 1)
      assert.lengthOf(yield* sent, 1)
      assert.strictEqual(yield* unsent, 0)
    })))

  it.effect("a mail the server accepted is marked with the next pass, not sent again", () =>
    run(Effect.gen(function*() {
      yield* failsWhileAway("markSentAll", deliverDue)
      assert.lengthOf(yield* sent, 1)
      yield* TestClock.adjust(second)
      assert.strictEqual(yield* deliverDue, 1)
      assert.strictEqual(yield* unsent, 0)
      yield* TestClock.adjust(Lease)
      assert.strictEqual(yield* deliverDue, 0)
      assert.lengthOf(yield* sent, 1)
    })))

  it.effect("a claim with less than half its lease left waits for the lease, as a dead worker's does", () =>
    run(Effect.gen(function*() {
      yield* failsWhileAway("prepareConfirmations", deliverDue)
      yield* TestClock.adjust(Duration.sum(Duration.times(Lease, 0.5), second))
      assert.strictEqual(yield* deliverDue, 0)
      yield* TestClock.adjust(Duration.times(Lease, 0.5))
      assert.strictEqual(yield* deliverDue, 1)
      assert.lengthOf(yield* sent, 1)
    })))
})

describe("webhook deliveries claimed when the database went away", () => {
  const owner = "cl_000000000000000000000001"
  const endpointId = EndpointId.make("we_000000000000000000000001")
  const layer = (sent: Ref.Ref<ReadonlyArray<SignedRequest>>) => {
    const flaky = Layer.effect(
      WebhookStore,
      Effect.map(
        WebhookStore,
        (store) => WebhookStore.of({ ...store, delivered: (...args) => orAway("delivered", store.delivered(...args)) })
      )
    )
    return WebhookWorker.Default.pipe(
      Layer.provide(flaky),
      Layer.provideMerge(SqliteWebhookStore),
      Layer.provideMerge(Layer.succeed(
        WebhookSender,
        WebhookSender.of({
          check: () => Effect.void,
          send: (requests) => Effect.as(Ref.update(sent, (all) => [...all, ...requests]), requests.map(() => 202))
        })
      )),
      Layer.provide(Layer.effectDiscard(runMigrations)),
      Layer.provideMerge(Layer.unwrapScoped(Effect.map(tempDir, (dir) => sqliteClient(join(dir, "paysub.db")))))
    )
  }
  const undelivered = Effect.flatMap(
    SqlClient,
    (sql) => sql`SELECT id FROM webhook_deliveries WHERE delivered_at IS NULL`
  )
    .pipe(Effect.map((rows) => rows.length), Effect.orDie)

  it.effect("deliveries the receiver accepted are marked with the next pass, not sent again", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(T0)
      const sent = yield* Ref.make<ReadonlyArray<SignedRequest>>([])
      yield* Effect.gen(function*() {
        const store = yield* WebhookStore
        const sql = yield* SqlClient
        const now = yield* DateTime.now
        yield* store.createEndpoint(
          { id: endpointId, owner, url: "https://hooks.example/x", enabledEvents: ["*"], createdAt: now },
          "whsec_AAAA"
        )
        for (let i = 0; i < 3; i++) {
          const id = EventId.make(`evt_${String(i).padStart(24, "0")}`)
          yield* sql`INSERT INTO events (id, type, owner, created_at, body)
            VALUES (${id}, 'transfer.approved', ${owner}, ${T0}, ${`{"id":"${id}"}`})`
          yield* store.resend(owner, id, endpointId, now)
        }
        const deliverDue = Effect.flatMap(WebhookWorker, (w) => w.deliverDue)
        yield* failsWhileAway("delivered", deliverDue)
        assert.lengthOf(yield* Ref.get(sent), 3)
        yield* TestClock.adjust(second)
        yield* deliverDue
        assert.strictEqual(yield* undelivered, 0)
        // Each marked with its one attempt and the status the receiver answered before the database went away.
        const attempts = yield* sql<{ attempt: number; status: number }>`SELECT attempt, status FROM webhook_attempts`
        assert.deepStrictEqual(attempts.map((a) => [a.attempt, a.status]), [[1, 202], [1, 202], [1, 202]])
        yield* TestClock.adjust(DeliveryLease)
        yield* deliverDue
        assert.lengthOf(yield* Ref.get(sent), 3)
      }).pipe(Effect.provide(layer(sent)))
    }).pipe(Effect.scoped))
})

describe("reconciles claimed when the database went away", () => {
  const client = ClientId.make(`cl_${"heldclaims".padEnd(24, "x")}`)
  const layer = () => {
    const flaky = Layer.effect(
      TransferStore,
      Effect.map(
        TransferStore,
        (store) => TransferStore.of({ ...store, settle: (...args) => orAway("settle", store.settle(...args)) })
      )
    )
    return Layer.mergeAll(Transfers.Default, Reconciler.Default.pipe(Layer.provide(flaky))).pipe(
      Layer.provideMerge(Layer.mergeAll(
        tempSqliteTransferStore(),
        SandboxCardNetwork.layer,
        HmacFingerprints(Redacted.make("held-claims-test-key"))
      ))
    )
  }

  it.effect("a transfer whose settle failed is reconciled by the next pass, not once its lease ends", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(T0)
      const store = yield* TransferStore
      yield* store.createClient({ id: client, name: "Held claims" }, "hash-held", yield* DateTime.now)
      const request = Schema.decodeUnknownSync(PaymentTransferRequest)({
        reference: "held-1",
        amount: "12.30",
        currency: "USD",
        sender_account_uri: `pan:${sandboxTimeoutCards[0]!.pan};exp=2031-07;cvc=123`,
        sender: { first_name: "Ann", email: "ann@example.com" },
        recipient: { first_name: "Bob", email: "bob@example.com", merchant_id: "merchant_1" }
      })
      const submitted = yield* (yield* Transfers).submit(client, request, "req-1")
      assert.strictEqual(submitted.answer._tag, "Made")
      const id = submitted.answer._tag === "Made" ? submitted.answer.transfer.id : undefined
      const reconciler = yield* Reconciler
      yield* failsWhileAway("settle", reconciler.reconcileDue)
      yield* TestClock.adjust(second)
      assert.strictEqual(yield* reconciler.reconcileDue, 1)
      const transfer = Option.getOrThrow(yield* (yield* Transfers).get(client, id!))
      assert.strictEqual(transfer.status, "approved")
    }).pipe(Effect.provide(layer())))
})
