// What only shows with two connection pools on one server database, as two app instances have: their
// transactions really interleave (unlike two better-sqlite3 connections in one process), so the unique
// constraints and row locks are what decide. Shared by the PostgreSQL and MariaDB suites.
import { SqlClient } from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import { Context, DateTime, Effect, Option, type Scope } from "effect"
import { CurrencyCode } from "../../core/payments/Currency.ts"
import { IdempotencyKey, RequestHash } from "../../core/payments/Idempotency.ts"
import { RefundId, settledRefund } from "../../core/payments/Refund.ts"
import { RefundStore } from "../../core/payments/RefundStore.ts"
import { ClientId, Reference, Transfer, TransferId } from "../../core/payments/Transfer.ts"
import { TransferStore } from "../../core/payments/TransferStore.ts"
import { Email } from "../../core/shared/Email.ts"
import { DefaultFeed } from "../../core/subscriptions/Feed.ts"
import { MailThrottle, SubscriberName } from "../../core/subscriptions/Subscription.ts"
import { SubscriptionStore } from "../../core/subscriptions/SubscriptionStore.ts"

export type Pool = Context.Context<SubscriptionStore | TransferStore | RefundStore | SqlClient>

export const countRows = (table: "subscriptions" | "mail_outbox" | "transfers" | "idempotency_keys") =>
  Effect.flatMap(SqlClient, (sql) => sql<{ n: unknown }>`SELECT count(*) AS n FROM ${sql(table)}`).pipe(
    Effect.map((rows) => Number(rows[0]!.n))
  )

// An approved transfer of `client`, its id made from `id`.
export const transfer = (client: ClientId, id: string, reference: string, amount: bigint, createdAt: DateTime.Utc) =>
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

const now = DateTime.unsafeMake(Date.UTC(2025, 0, 15, 12))
const client = ClientId.make(`cl_${"refunder".padEnd(24, "x")}`)

// Five transfers of 10.00 USD, each refunded by 16 requests of 1.00 to 5.00 at once, half through each pool,
// while the refunds already made fail (giving their amount back) through the other pool.
const refundsRacing = (pools: ReadonlyArray<Context.Context<TransferStore | RefundStore>>) =>
  Effect.gen(function*() {
    const transfers = pools.map((p) => Context.get(p, TransferStore))
    const refunds = pools.map((p) => Context.get(p, RefundStore))
    yield* transfers[0]!.createClient({ id: client, name: "Refunder" }, "hash-refunder", now)
    for (let round = 0; round < 5; round++) {
      const t = transfer(client, `refunded${round}`, `refunded-${round}`, 1000n, now)
      yield* transfers[0]!.record(t)
      const openings = yield* Effect.all(
        Array.from({ length: 16 }, (_, i) =>
          refunds[i % 2]!.open({
            client,
            transfer: t.id,
            id: RefundId.make(`re_${`r${round}n${i}`.padEnd(24, "x")}`),
            amount: `${(i % 5) + 1}.00`,
            reason: undefined,
            claim: undefined
          }, now)),
        { concurrency: "unbounded" }
      )
      const made = openings.flatMap((o) => (o._tag === "Opened" ? [o.refund] : []))
      for (const o of openings) {
        if (o._tag === "Refused") assert.oneOf(o.reason._tag, ["AmountTooLarge", "TransferAlreadyRefunded"])
      }
      const sum = made.reduce((x, r) => x + r.amount, 0n)
      assert.isAtMost(Number(sum), 1000, `round ${round}`)
      const refundedOf = (store: number) =>
        Effect.map(transfers[store]!.get(client, t.id), (found) => Option.getOrThrow(found).amountRefunded)
      assert.strictEqual(yield* refundedOf(1), sum, `round ${round}`)
      // The first half fail through one pool while new refunds are opened through the other.
      const failing = made.slice(0, Math.ceil(made.length / 2))
      const more = yield* Effect.all(
        [
          ...failing.map((r) =>
            Effect.as(refunds[0]!.settle(settledRefund(r, { _tag: "Failed", reason: "declined" }), "pending"), 0n)
          ),
          ...Array.from({ length: 8 }, (_, i) =>
            Effect.map(
              refunds[1]!.open({
                client,
                transfer: t.id,
                id: RefundId.make(`re_${`r${round}m${i}`.padEnd(24, "x")}`),
                amount: "1.00",
                reason: undefined,
                claim: undefined
              }, now),
              (o) => (o._tag === "Opened" ? o.refund.amount : 0n)
            ))
        ],
        { concurrency: "unbounded" }
      )
      const counted = sum - failing.reduce((x, r) => x + r.amount, 0n) + more.reduce((x, y) => x + y, 0n)
      assert.isAtMost(Number(counted), 1000, `round ${round}`)
      assert.strictEqual(yield* refundedOf(0), counted, `round ${round}`)
      const listed = yield* refunds[1]!.list(client, t.id, { limit: 100 })
      const live = listed.data.filter((r) => r.status !== "failed").reduce((x, r) => x + r.amount, 0n)
      assert.strictEqual(live, counted, `round ${round}`)
    }
  })

// The suite, each test over two pools (`twoPools`: two stores on one new database, built in the test's scope).
export const twoPoolsSuite = (twoPools: Effect.Effect<readonly [Pool, Pool], unknown, Scope.Scope>) =>
  describe("two pools on one database", () => {
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
      Effect.flatMap(twoPools, refundsRacing))

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
