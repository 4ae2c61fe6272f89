// The storage contracts on PostgreSQL, plus what only shows with several connection pools on one database
// (as several app instances have): every test gets a database of its own, made from the `test` database and
// dropped afterwards. Skipped, with the reason in the title, when POSTGRES_TESTS=off or no server answers.
import { SqlClient } from "@effect/sql/SqlClient"
import { assert, describe, it, layer } from "@effect/vitest"
import { Context, DateTime, Effect, Layer, Option, Redacted } from "effect"
import { layer as PgClientLayer } from "../../adapters/postgres/PgClient.ts"
import { layer as PgRateLimiterStore } from "../../adapters/postgres/PgRateLimiterStore.ts"
import { layer as PgSubscriptionStore } from "../../adapters/postgres/PgSubscriptionStore.ts"
import { layer as PgTransferStore } from "../../adapters/postgres/PgTransferStore.ts"
import { layer as PgWebhookStore } from "../../adapters/postgres/PgWebhookStore.ts"
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
import { createTestDatabase, postgresEnabled, postgresSkipReason } from "../support/Postgres.ts"
import { rateLimiterStoreContract } from "./RateLimiterStore.contract.ts"
import { withSqlRawRows } from "./RawRows.ts"
import { refundsRacingOverTwoPools } from "./RefundRace.ts"
import { refundStoreContract } from "./RefundStore.contract.ts"
import { subscriptionStoreContract } from "./SubscriptionStore.contract.ts"
import { transferStoreContract } from "./TransferStore.contract.ts"
import { webhookStoreContract } from "./WebhookStore.contract.ts"

// A new database that lives as long as the scope (dropped with FORCE, so a pool still open cannot keep it).
const tempDatabase = Effect.acquireRelease(
  Effect.promise(() => createTestDatabase()),
  (database) => Effect.promise(() => database.drop())
)

// A pool on `url` as the app makes it (adapters/postgres/PgClient.ts: one pg Pool behind @effect/sql-pg and
// PgDirect).
const pgClient = (url: string) => PgClientLayer(Redacted.make(url))

// The storage adapters over their own pool on `url`, migrations run first (a second pool finds them done).
const pgStoresOn = (url: string): Layer.Layer<SubscriptionStore | TransferStore | RefundStore | SqlClient, unknown> =>
  storesOver(Layer.merge(PgSubscriptionStore, PgTransferStore)).pipe(
    Layer.provide(EventViewsLive),
    Layer.provide(Layer.effectDiscard(runMigrations)),
    Layer.provideMerge(pgClient(url))
  )

// The storage adapters on a new database.
const tempPgStores = (): Layer.Layer<SubscriptionStore | TransferStore | RefundStore | SqlClient, unknown> =>
  Layer.unwrapScoped(Effect.map(tempDatabase, (database) => pgStoresOn(database.url)))

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

describe.skipIf(!postgresEnabled)(
  `PostgreSQL storage${postgresEnabled ? "" : ` (skipped: ${postgresSkipReason})`}`,
  () => {
    subscriptionStoreContract("PostgreSQL", withSqlRawRows(tempPgStores))
    transferStoreContract("PostgreSQL", withSqlRawRows(tempPgStores))
    refundStoreContract("PostgreSQL", withSqlRawRows(tempPgStores))
    webhookStoreContract(
      "PostgreSQL",
      () =>
        Layer.unwrapScoped(
          Effect.map(tempDatabase, (database) =>
            Layer.merge(storesOver(Layer.merge(PgSubscriptionStore, PgTransferStore)), PgWebhookStore).pipe(
              Layer.provide(EventViewsLive),
              Layer.provide(Layer.effectDiscard(runMigrations)),
              Layer.provide(pgClient(database.url))
            ))
        )
    )
    rateLimiterStoreContract(
      "PostgreSQL",
      () =>
        Layer.unwrapScoped(Effect.map(tempDatabase, (database) =>
          PgRateLimiterStore.pipe(
            Layer.provide(Layer.effectDiscard(runMigrations)),
            Layer.provideMerge(pgClient(database.url))
          )))
    )

    layer(tempPgStores())("PostgreSQL columns", (it) => {
      it.effect("amounts are exact BIGINTs, times are timestamptz to the millisecond", () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient
          const store = yield* TransferStore
          const client = ClientId.make(`cl_${"columns".padEnd(24, "x")}`)
          const createdAt = DateTime.unsafeMake(Date.UTC(2025, 0, 15, 12, 0, 0, 123))
          yield* store.createClient({ id: client, name: "Columns" }, "hash-columns", createdAt)
          yield* store.record(transfer(client, "columns", "columns", 2n ** 63n - 1n, createdAt))
          const rows = yield* sql<{ text: string; kind: string; created: string; created_kind: string }>`
            SELECT CAST(amount AS TEXT) AS text, pg_typeof(amount)::text AS kind,
              to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS') AS created,
              pg_typeof(created_at)::text AS created_kind
            FROM transfers`
          assert.deepStrictEqual(rows.map((r) => [r.text, r.kind, r.created, r.created_kind]), [
            ["9223372036854775807", "bigint", "2025-01-15T12:00:00.123", "timestamp with time zone"]
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
        const first = yield* Layer.build(pgStoresOn(database.url))
        const second = yield* Layer.build(pgStoresOn(database.url))
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
