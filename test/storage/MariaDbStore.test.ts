// The storage contracts on MariaDB, plus what only shows with several connection pools on one database (as
// several app instances have): every test gets a database of its own, dropped afterwards. Skipped, with the
// reason in the title, when MARIADB_TESTS=off or no server answers.
import { SqlClient } from "@effect/sql/SqlClient"
import { assert, describe, it, layer } from "@effect/vitest"
import { Context, DateTime, Effect, Layer, Option, Redacted } from "effect"
import { afterAll } from "vitest"
import { layer as MariaDbClient } from "../../adapters/mariadb/MariaDbClient.ts"
import { layer as MariaDbRateLimiterStore } from "../../adapters/mariadb/MariaDbRateLimiterStore.ts"
import { layer as MariaDbSubscriptionStore } from "../../adapters/mariadb/MariaDbSubscriptionStore.ts"
import { layer as MariaDbTransferStore } from "../../adapters/mariadb/MariaDbTransferStore.ts"
import { layer as MariaDbWebhookStore } from "../../adapters/mariadb/MariaDbWebhookStore.ts"
import { runMigrations } from "../../adapters/sql/Migrations.ts"
import { EventViewsLive } from "../../apps/http/EventViewsLive.ts"
import { CurrencyCode } from "../../core/payments/Currency.ts"
import { IdempotencyKey, RequestHash } from "../../core/payments/Idempotency.ts"
import { RefundStore } from "../../core/payments/RefundStore.ts"
import { ClientId, Reference, Transfer, TransferId } from "../../core/payments/Transfer.ts"
import { TransferStore } from "../../core/payments/TransferStore.ts"
import { Email } from "../../core/shared/Email.ts"
import { storesOver } from "../../core/shared/Stores.ts"
import { DefaultFeed } from "../../core/subscriptions/Feed.ts"
import { MailThrottle, SubscriberName } from "../../core/subscriptions/Subscription.ts"
import { SubscriptionStore } from "../../core/subscriptions/SubscriptionStore.ts"
import type { EventViews } from "../../core/webhooks/EventViews.ts"
import { createTestDatabase, mariadbEnabled, mariadbSkipReason } from "../support/MariaDb.ts"
import { rateLimiterStoreContract } from "./RateLimiterStore.contract.ts"
import { withSqlRawRows } from "./RawRows.ts"
import { refundsRacingOverTwoPools } from "./RefundRace.ts"
import { refundStoreContract } from "./RefundStore.contract.ts"
import { subscriptionStoreContract } from "./SubscriptionStore.contract.ts"
import { transferStoreContract } from "./TransferStore.contract.ts"
import { webhookStoreContract } from "./WebhookStore.contract.ts"

// A new database that lives as long as the scope.
const tempDatabase = Effect.acquireRelease(
  Effect.promise(() => createTestDatabase()),
  (database) => Effect.promise(() => database.drop())
)

// The stores over the storage adapters.
const stores = storesOver(Layer.merge(MariaDbSubscriptionStore, MariaDbTransferStore))

// The storage adapters over their own pool on `url`, migrations run first (a second pool finds them done).
const storesOn = (url: string): Layer.Layer<SubscriptionStore | TransferStore | RefundStore | SqlClient, unknown> =>
  stores.pipe(
    Layer.provide(EventViewsLive),
    Layer.provide(Layer.effectDiscard(runMigrations)),
    Layer.provideMerge(MariaDbClient(Redacted.make(url)))
  )

// The storage adapters on this file's database, emptied first: its tests run one after another, and making and
// migrating a database per test (a property test makes dozens) costs MariaDB seconds each.
const shared = Effect.runSync(Effect.cached(Effect.promise(() => createTestDatabase())))
afterAll(() =>
  mariadbEnabled
    ? Effect.runPromise(Effect.flatMap(shared, (database) => Effect.promise(() => database.drop())))
    : undefined
)
const tables = [
  "webhook_deliveries",
  "events",
  "webhook_endpoints",
  "mail_outbox",
  "subscription_tokens",
  "subscriptions",
  "idempotency_keys",
  "refunds",
  "transfers",
  "api_clients",
  "rate_limits",
  "service_secrets"
]
const emptied = Effect.flatMap(
  SqlClient,
  (sql) =>
    Effect.forEach(tables, (table) => sql`DELETE FROM ${sql(table)}`, { discard: true }).pipe(
      Effect.zipRight(sql`DELETE FROM feeds WHERE name <> 'default'`),
      Effect.zipRight(sql`UPDATE feeds SET deleted_at = NULL, title = 'Newsletter'`)
    )
)
// `layer` (stores, webhook store, rate limit store) over a pool on this file's database, migrated and emptied.
const onShared = <A, E>(layer: Layer.Layer<A, E, SqlClient | EventViews>): Layer.Layer<A | SqlClient, unknown> =>
  Layer.unwrapEffect(Effect.map(shared, (database) =>
    layer.pipe(
      Layer.provide(EventViewsLive),
      Layer.provide(Layer.effectDiscard(Effect.zipRight(runMigrations, emptied))),
      Layer.provideMerge(MariaDbClient(Redacted.make(database.url)))
    )))
const tempStores = (): Layer.Layer<SubscriptionStore | TransferStore | RefundStore | SqlClient, unknown> =>
  onShared(stores)

const countRows = (table: "subscriptions" | "mail_outbox" | "transfers" | "idempotency_keys") =>
  Effect.flatMap(SqlClient, (sql) => sql<{ n: unknown }>`SELECT count(*) AS n FROM ${sql(table)}`).pipe(
    Effect.map((rows) => Number(rows[0]!.n))
  )

const transfer = (client: ClientId, id: string, reference: string, amount: bigint, createdAt: DateTime.Utc) =>
  new Transfer({
    id: TransferId.make(`tr_${id.padEnd(24, "x")}`),
    clientId: client,
    reference: Reference.make(reference),
    amount,
    currency: CurrencyCode.make("USD"),
    status: "approved",
    sender: {
      first_name: "Ann",
      email: "ann@example.com",
      card: { brand: "visa", last4: "4242", exp_month: 12, exp_year: 2030, fingerprint: "fp" }
    },
    recipient: { first_name: "Bob", email: "bob@example.com", merchant_id: "merchant-a" },
    authorizationCode: "AUTH",
    createdAt
  })

describe.skipIf(!mariadbEnabled)(
  `MariaDB storage${mariadbEnabled ? "" : ` (skipped: ${mariadbSkipReason})`}`,
  () => {
    subscriptionStoreContract("MariaDB", withSqlRawRows(tempStores))
    transferStoreContract("MariaDB", withSqlRawRows(tempStores))
    refundStoreContract("MariaDB", withSqlRawRows(tempStores))
    webhookStoreContract("MariaDB", () => onShared(Layer.merge(stores, MariaDbWebhookStore)))
    rateLimiterStoreContract("MariaDB", () => onShared(MariaDbRateLimiterStore))

    layer(tempStores())("MariaDB columns", (it) => {
      it.effect("amounts are exact BIGINTs, times BIGINT milliseconds, keys compared byte for byte", () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient
          const store = yield* TransferStore
          const client = ClientId.make(`cl_${"columns".padEnd(24, "x")}`)
          const createdAt = DateTime.unsafeMake(Date.UTC(2025, 0, 15, 12, 0, 0, 123))
          yield* store.createClient({ id: client, name: "Columns" }, "hash-columns", createdAt)
          yield* store.record(transfer(client, "columns", "columns", 2n ** 63n - 1n, createdAt))
          yield* store.record(transfer(client, "columnz", "COLUMNS", 1n, createdAt))
          const rows = yield* sql<{ text: string; created: unknown }>`
            SELECT CAST(amount AS CHAR) AS text, created_at AS created FROM transfers ORDER BY reference`
          assert.deepStrictEqual(rows.map((r) => [r.text, Number(r.created)]), [
            ["1", Date.UTC(2025, 0, 15, 12, 0, 0, 123)],
            ["9223372036854775807", Date.UTC(2025, 0, 15, 12, 0, 0, 123)]
          ])
          const stored = Option.getOrThrow(yield* store.get(client, TransferId.make(`tr_${"columns".padEnd(24, "x")}`)))
          assert.strictEqual(stored.amount, 2n ** 63n - 1n)
          assert.strictEqual(DateTime.toEpochMillis(stored.createdAt), DateTime.toEpochMillis(createdAt))
        }))
    })

    // Two pools on one database are two app instances: their transactions really interleave (unlike two
    // better-sqlite3 connections in one process), so the unique constraints and row locks are what decide.
    describe("two pools on one database", () => {
      const twoPools = Effect.gen(function*() {
        const database = yield* tempDatabase
        const first = yield* Layer.build(storesOn(database.url))
        const second = yield* Layer.build(storesOn(database.url))
        assert.notStrictEqual(Context.get(first, SqlClient), Context.get(second, SqlClient))
        return [first, second] as const
      })

      it.scoped("40 concurrent subscribes of one address over both: one row, exactly maxMails mails queued", () =>
        Effect.gen(function*() {
          const pools = yield* twoPools
          const stores = pools.map((p) => Context.get(p, SubscriptionStore))
          const now = DateTime.unsafeMake(Date.UTC(2025, 0, 15, 12))
          const results = yield* Effect.all(
            Array.from({ length: 40 }, (_, i) =>
              stores[i % 2]!.subscribe({
                name: SubscriberName.make(`Ann ${i}`),
                email: Email.make(i % 3 === 0 ? "Ann@Example.com" : "ann@example.com"),
                feed: DefaultFeed,
                now
              })),
            { concurrency: "unbounded" }
          )
          assert.strictEqual(new Set(results.map((r) => r.subscription.id)).size, 1)
          assert.strictEqual(results.filter((r) => r.queued).length, MailThrottle.maxMails)
          for (const pool of pools) {
            const counts = yield* Effect.provide(
              Effect.all([countRows("subscriptions"), countRows("mail_outbox")]),
              pool
            )
            assert.deepStrictEqual(counts, [1, MailThrottle.maxMails])
          }
        }))

      it.scoped("refunds racing on one transfer over both pools never together exceed its amount", () =>
        Effect.flatMap(twoPools, refundsRacingOverTwoPools))

      it.scoped("claims over both pools at once never hand out one outbox row twice", () =>
        Effect.gen(function*() {
          const pools = yield* twoPools
          const stores = pools.map((p) => Context.get(p, SubscriptionStore))
          const now = DateTime.unsafeMake(Date.UTC(2025, 0, 15, 12))
          for (let i = 0; i < 30; i++) {
            yield* stores[0]!.subscribe({
              name: SubscriberName.make("Reader"),
              email: Email.make(`reader${i}@example.com`),
              feed: DefaultFeed,
              now
            })
          }
          const leaseUntil = DateTime.add(now, { seconds: 60 })
          const claims = yield* Effect.all(
            Array.from({ length: 16 }, (_, i) => stores[i % 2]!.claimDue(now, leaseUntil, 3)),
            { concurrency: "unbounded" }
          )
          const ids = claims.flatMap((c) => c.map((e) => e.id))
          assert.strictEqual(new Set(ids).size, ids.length, `a row was claimed twice: ${ids.join(", ")}`)
          assert.strictEqual(ids.length, 30)
        }))

      it.scoped("20 rounds of keyed and plain records racing over both pools: one Started, one row a reference", () =>
        Effect.gen(function*() {
          const pools = yield* twoPools
          const stores = pools.map((p) => Context.get(p, TransferStore))
          const client = ClientId.make(`cl_${"racer".padEnd(24, "x")}`)
          const now = DateTime.unsafeMake(Date.now())
          yield* stores[0]!.createClient({ id: client, name: "Racer" }, "hash-racer", now)
          const claim = (round: number) => ({
            key: IdempotencyKey.make(`key-${round}`),
            requestHash: RequestHash.make("hash-same-body"),
            requestId: `req-${round}`
          })
          for (let round = 0; round < 20; round++) {
            const racers = Array.from({ length: 8 }, (_, i) => i)
            const starts = yield* Effect.all(
              racers.map((i) =>
                stores[i % 2]!.reserve(
                  new Transfer({ ...transfer(client, `r${round}p${i}`, `ref-${round}`, 100n, now), status: "pending" }),
                  claim(round)
                )
              ),
              { concurrency: "unbounded" }
            )
            assert.strictEqual(starts.filter((s) => s._tag === "Started").length, 1, `round ${round}`)
            assert.strictEqual(starts.filter((s) => s._tag === "InProgress").length, 7, `round ${round}`)
            const records = yield* Effect.all(
              racers.map((i) =>
                Effect.either(stores[i % 2]!.record(transfer(client, `r${round}q${i}`, `plain-${round}`, 100n, now)))
              ),
              { concurrency: "unbounded" }
            )
            const winners = racers.filter((i) => records[i]!._tag === "Right")
            assert.lengthOf(winners, 1, `round ${round}`)
            const winner = TransferId.make(`tr_${`r${round}q${winners[0]}`.padEnd(24, "x")}`)
            for (const r of records) if (r._tag === "Left") assert.strictEqual(r.left.existing, winner)
          }
          const counts = yield* Effect.provide(
            Effect.all([countRows("transfers"), countRows("idempotency_keys")]),
            pools[1]
          )
          assert.deepStrictEqual(counts, [40, 20])
        }))
    })
  }
)
