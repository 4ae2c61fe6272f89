// The outbox worker over real SQLite storage and the in-memory mailer. Time is the TestClock's: every pass is
// a direct call of deliverDue, so a row is due or not purely by the clock.
import { SqlClient } from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import { Context, DateTime, Duration, Effect, Fiber, Layer, Option, Random, Ref, Schema, TestClock } from "effect"
import * as fc from "effect/FastCheck"
import { layer as CryptoTokens } from "../../adapters/crypto/CryptoTokens.ts"
import { MemoryMailer } from "../../adapters/mail/MemoryMailer.ts"
import { RetryPolicy } from "../../core/shared/Backoff.ts"
import { DestinationBackoff } from "../../core/shared/DestinationBackoff.ts"
import { Email } from "../../core/shared/Email.ts"
import { SiteSettings } from "../../core/shared/SiteSettings.ts"
import { Tokens } from "../../core/shared/Tokens.ts"
import { InvalidToken } from "../../core/subscriptions/Errors.ts"
import { DefaultFeed } from "../../core/subscriptions/Feed.ts"
import { type Mail, Mailer } from "../../core/subscriptions/Mailer.ts"
import { MailReceipts } from "../../core/subscriptions/MailReceipts.ts"
import {
  DefaultMailConcurrency as Concurrency,
  Lease,
  MailConcurrency,
  MaxBatchGrowth,
  nextBatch,
  OutboxWorker
} from "../../core/subscriptions/OutboxWorker.ts"
import { Event, SubscriberName } from "../../core/subscriptions/Subscription.ts"
import { SubscriptionStore } from "../../core/subscriptions/SubscriptionStore.ts"
import { Token, TokenHash } from "../../core/subscriptions/Token.ts"
import { tempSqliteStore } from "../storage/TempSqlite.ts"

const BaseUrl = "https://news.example.com/letters"
const T0 = Date.UTC(2025, 0, 15, 12, 0, 0)

const site = Layer.succeed(SiteSettings, SiteSettings.of({ baseUrl: BaseUrl }))

const testLayer = () =>
  OutboxWorker.Default.pipe(
    Layer.provideMerge(Layer.mergeAll(tempSqliteStore(), MemoryMailer.layer, CryptoTokens, site))
  )

type Services = Layer.Layer.Success<ReturnType<typeof testLayer>>

// Every test starts at T0 on a new database with an empty mailer.
const run = <A, E>(self: Effect.Effect<A, E, Services>) =>
  Effect.gen(function*() {
    yield* TestClock.setTime(T0)
    return yield* Effect.provide(self, testLayer())
  })

const ann = { name: SubscriberName.make("Ann Example"), email: Email.make("ann@example.com"), feed: DefaultFeed }

const subscribe = (who = ann) =>
  Effect.gen(function*() {
    const store = yield* SubscriptionStore
    const result = yield* store.subscribe({ ...who, now: yield* DateTime.now })
    assert.isTrue(result.queued)
    return result.subscription
  })

const deliverDue = Effect.flatMap(OutboxWorker, (worker) => worker.deliverDue)
const sent = Effect.flatMap(MemoryMailer, (memory) => memory.sent)
const attempts = Effect.flatMap(MemoryMailer, (memory) => memory.attempts)
const now = DateTime.now

interface OutboxRow {
  readonly id: number
  readonly attempts: number
  readonly sent_at: number | null
  readonly next_attempt_at: number | null
  readonly last_error: string | null
}

const outboxRows = Effect.flatMap(
  SqlClient,
  (sql) => sql<OutboxRow>`SELECT id, attempts, sent_at, next_attempt_at, last_error FROM mail_outbox ORDER BY id`
).pipe(
  Effect.map((rows) =>
    rows.map((r) => ({
      id: Number(r.id),
      attempts: Number(r.attempts),
      sent_at: r.sent_at === null ? null : Number(r.sent_at),
      next_attempt_at: r.next_attempt_at === null ? null : Number(r.next_attempt_at),
      last_error: r.last_error
    }))
  ),
  Effect.orDie
)

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
const decodeToken = Schema.decodeUnknownSync(Token)

// The token of the one link starting with `prefix` in `text`.
const tokenAfter = (text: string, prefix: string) => {
  const matches = [...text.matchAll(new RegExp(`${escapeRegExp(prefix)}([A-Za-z0-9_-]+)`, "g"))]
  assert.isAbove(matches.length, 0, `no link starting with ${prefix} in:\n${text}`)
  const tokens = new Set(matches.map((m) => m[1]!))
  assert.strictEqual(tokens.size, 1, `different tokens after ${prefix}`)
  return decodeToken(matches[0]![1])
}

const confirmToken = (mail: Mail) => tokenAfter(mail.text, `${BaseUrl}/subscribe/confirm?token=`)

const unsubscribeToken = (mail: Mail) => {
  const header = mail.headers["List-Unsubscribe"]
  assert.isDefined(header, "List-Unsubscribe header")
  assert.match(header!, /^<[^<>]+>$/)
  return tokenAfter(header!, `<${BaseUrl}/unsubscribe?token=`)
}

describe("OutboxWorker.deliverDue", () => {
  it.effect("on an empty outbox takes nothing and sends nothing", () =>
    run(Effect.gen(function*() {
      assert.strictEqual(yield* deliverDue, 0)
      assert.lengthOf(yield* attempts, 0)
    })))

  it.effect("delivers a queued confirmation once, to the subscriber, with a working confirm link", () =>
    run(Effect.gen(function*() {
      const store = yield* SubscriptionStore
      const tokens = yield* Tokens
      const subscription = yield* subscribe()
      assert.strictEqual(yield* deliverDue, 1)
      const mails = yield* sent
      assert.lengthOf(mails, 1)
      const mail = mails[0]!
      assert.deepStrictEqual(mail.to, { name: "Ann Example", address: "ann@example.com" })

      const token = confirmToken(mail)
      assert.include(mail.html, `${BaseUrl}/subscribe/confirm?token=${token}`)
      const found = yield* store.findByToken(tokens.hash(token), "confirm", yield* now)
      assert.strictEqual(Option.getOrUndefined(found)?.id, subscription.id)
      assert.strictEqual(Option.getOrUndefined(found)?.status, "pending")
      // Only the hash is stored: the token itself finds nothing.
      assert.isTrue(Option.isNone(yield* store.findByToken(TokenHash.make(token), "confirm", yield* now)))

      // Delivered once: not again now, nor after the lease, nor much later.
      assert.strictEqual(yield* deliverDue, 0)
      yield* TestClock.adjust(Duration.sum(Lease, Duration.seconds(1)))
      assert.strictEqual(yield* deliverDue, 0)
      const [row] = yield* outboxRows
      assert.strictEqual(row!.sent_at, T0)
      assert.strictEqual(row!.attempts, 0)

      const confirmed = yield* store.redeemToken(tokens.hash(token), "confirm", Event.Confirm(), yield* now)
      assert.strictEqual(confirmed.id, subscription.id)
      assert.strictEqual(confirmed.status, "active")

      yield* TestClock.adjust(Duration.days(3))
      assert.strictEqual(yield* deliverDue, 0)
      assert.lengthOf(yield* attempts, 1)
    })))

  it.effect("the confirm link stops working after ConfirmTokenTtl (48 hours)", () =>
    run(Effect.gen(function*() {
      const store = yield* SubscriptionStore
      const tokens = yield* Tokens
      yield* subscribe()
      yield* deliverDue
      const hash = tokens.hash(confirmToken((yield* sent)[0]!))
      yield* TestClock.adjust(Duration.subtract(Duration.hours(48), Duration.millis(1)))
      assert.isTrue(Option.isSome(yield* store.findByToken(hash, "confirm", yield* now)))
      yield* TestClock.adjust(Duration.millis(1))
      assert.isTrue(Option.isNone(yield* store.findByToken(hash, "confirm", yield* now)))
    })))

  it.effect("the mail carries List-Unsubscribe headers with a working unsubscribe token", () =>
    run(Effect.gen(function*() {
      const store = yield* SubscriptionStore
      const tokens = yield* Tokens
      const subscription = yield* subscribe()
      yield* deliverDue
      const mail = (yield* sent)[0]!
      assert.strictEqual(mail.headers["List-Unsubscribe-Post"], "List-Unsubscribe=One-Click")
      const token = unsubscribeToken(mail)
      assert.notStrictEqual(token, confirmToken(mail))
      assert.include(mail.text, `${BaseUrl}/unsubscribe?token=${token}`)
      const hash = tokens.hash(token)
      yield* store.redeemToken(tokens.hash(confirmToken(mail)), "confirm", Event.Confirm(), yield* now)
      // Unsubscribe links do not expire.
      yield* TestClock.adjust(Duration.days(365))
      const found = yield* store.findByToken(hash, "unsubscribe", yield* now)
      assert.strictEqual(Option.getOrUndefined(found)?.id, subscription.id)
      const gone = yield* store.redeemToken(hash, "unsubscribe", Event.Unsubscribe(), yield* now)
      assert.strictEqual(gone.id, subscription.id)
      assert.strictEqual(gone.status, "unsubscribed")
      assert.strictEqual(Option.getOrThrow(yield* store.get(subscription.id)).status, "unsubscribed")
    })))

  it.effect("each mail carries its own tokens", () =>
    run(Effect.gen(function*() {
      yield* subscribe()
      yield* subscribe()
      assert.strictEqual(yield* deliverDue, 2)
      const mails = yield* sent
      assert.lengthOf(mails, 2)
      assert.notStrictEqual(confirmToken(mails[0]!), confirmToken(mails[1]!))
      assert.notStrictEqual(unsubscribeToken(mails[0]!), unsubscribeToken(mails[1]!))
    })))

  it.effect("a temporary failure backs the server off: retried after 5-10 s, delivered on the third attempt", () =>
    run(
      Effect.gen(function*() {
        const memory = yield* MemoryMailer
        yield* subscribe()
        yield* memory.failNext(2, false)

        // With random 0.5 the wait is three quarters of the 10 s floor: 7.5 s after each failure.
        assert.strictEqual(yield* deliverDue, 1)
        assert.lengthOf(yield* attempts, 1)
        assert.lengthOf(yield* sent, 0)
        assert.strictEqual(yield* deliverDue, 0, "due again right after the failure")
        yield* TestClock.adjust(Duration.millis(7499))
        assert.strictEqual(yield* deliverDue, 0, "due before its backoff delay")
        yield* TestClock.adjust(Duration.millis(1))
        assert.strictEqual(yield* deliverDue, 1)
        assert.lengthOf(yield* attempts, 2)
        assert.lengthOf(yield* sent, 0)

        assert.strictEqual(yield* deliverDue, 0)
        yield* TestClock.adjust(Duration.millis(7499))
        assert.strictEqual(yield* deliverDue, 0)
        yield* TestClock.adjust(Duration.millis(1))
        assert.strictEqual(yield* deliverDue, 1)
        assert.lengthOf(yield* attempts, 3)
        assert.lengthOf(yield* sent, 1)

        yield* TestClock.adjust(Duration.days(1))
        assert.strictEqual(yield* deliverDue, 0)
        assert.lengthOf(yield* sent, 1)
        const [row] = yield* outboxRows
        assert.strictEqual(row!.attempts, 2)
        assert.strictEqual(row!.sent_at, T0 + 15000)
        assert.isNull(row!.last_error)
      }).pipe(Effect.withRandom(Random.fixed([0.5])))
    ))

  it.effect("MAIL_CONCURRENCY bounds the mails of one pass", () =>
    run(
      Effect.gen(function*() {
        for (let i = 0; i < 5; i++) yield* subscribe({ ...ann, email: Email.make(`few${i}@example.com`) })
        const worker = yield* Effect.provide(
          OutboxWorker,
          OutboxWorker.Default.pipe(Layer.provide(Layer.succeed(MailConcurrency, 2)))
        )
        assert.strictEqual(yield* worker.deliverDue, 2)
        assert.strictEqual(yield* worker.deliverDue, 2)
        assert.strictEqual(yield* worker.deliverDue, 1)
        assert.lengthOf(yield* sent, 5)
      })
    ))

  it.effect("while the server is down one mail probes it; the first success sends the whole backlog", () =>
    run(
      Effect.gen(function*() {
        const memory = yield* MemoryMailer
        const total = 2 * Concurrency + 7
        for (let i = 0; i < total; i++) {
          yield* subscribe({ ...ann, email: Email.make(`reader${i}@example.com`) })
        }
        yield* memory.failNext(Concurrency + 3, false)
        assert.strictEqual(yield* deliverDue, Concurrency, "a full batch fails together")
        for (let probe = 0; probe < 3; probe++) {
          assert.strictEqual(yield* deliverDue, 0, "nothing is sent before the backoff ends")
          yield* TestClock.adjust(DestinationBackoff.cap)
          assert.strictEqual(yield* deliverDue, 1, "one probe")
        }
        assert.lengthOf(yield* attempts, Concurrency + 3)
        yield* TestClock.adjust(DestinationBackoff.cap)
        assert.strictEqual(yield* deliverDue, 1, "the probe that succeeds")
        assert.strictEqual(yield* deliverDue, Concurrency)
        assert.strictEqual(yield* deliverDue, Concurrency)
        assert.strictEqual(yield* deliverDue, 6)
        assert.lengthOf(yield* sent, total)
      }).pipe(Effect.withRandom(Random.fixed([0.9999])))
    ))

  it.effect("a permanent failure is never retried", () =>
    run(Effect.gen(function*() {
      const memory = yield* MemoryMailer
      yield* subscribe()
      yield* memory.failNext(1, true, "550 no such mailbox")
      assert.strictEqual(yield* deliverDue, 1)
      for (const step of [Duration.zero, Lease, RetryPolicy.cap, Duration.days(30)]) {
        yield* TestClock.adjust(step)
        assert.strictEqual(yield* deliverDue, 0)
      }
      assert.lengthOf(yield* attempts, 1)
      assert.lengthOf(yield* sent, 0)
      const [row] = yield* outboxRows
      assert.strictEqual(row!.attempts, 1)
      assert.isNull(row!.sent_at)
      assert.isNull(row!.next_attempt_at)
      assert.strictEqual(row!.last_error, "550 no such mailbox")
    })))

  it.effect("gives up after RetryPolicy.maxAttempts temporary failures", () =>
    run(
      Effect.gen(function*() {
        const memory = yield* MemoryMailer
        yield* subscribe()
        yield* memory.failNext(RetryPolicy.maxAttempts + 5, false)
        for (let i = 1; i <= RetryPolicy.maxAttempts; i++) {
          assert.strictEqual(yield* deliverDue, 1, `attempt ${i}`)
          yield* TestClock.adjust(DestinationBackoff.cap)
        }
        yield* TestClock.adjust(Duration.days(30))
        assert.strictEqual(yield* deliverDue, 0)
        assert.lengthOf(yield* attempts, RetryPolicy.maxAttempts)
        const [row] = yield* outboxRows
        assert.strictEqual(row!.attempts, RetryPolicy.maxAttempts)
        assert.isNull(row!.next_attempt_at)
        assert.isNull(row!.sent_at)
      }).pipe(Effect.withRandom(Random.fixed([0.5])))
    ))

  it.effect("a row leased by a worker that died is delivered once the lease has passed, not before", () =>
    run(Effect.gen(function*() {
      const store = yield* SubscriptionStore
      yield* subscribe()
      // Another worker claims the row and dies before sending.
      const t = yield* now
      const claimed = yield* store.claimDue(t, DateTime.addDuration(t, Lease), 16)
      assert.lengthOf(claimed, 1)
      assert.strictEqual(yield* deliverDue, 0)
      yield* TestClock.adjust(Duration.subtract(Lease, Duration.millis(1)))
      assert.strictEqual(yield* deliverDue, 0)
      assert.lengthOf(yield* attempts, 0)
      yield* TestClock.adjust(Duration.millis(1))
      assert.strictEqual(yield* deliverDue, 1)
      const mails = yield* sent
      assert.lengthOf(mails, 1)
      assert.strictEqual(mails[0]!.to.address, "ann@example.com")
      const [row] = yield* outboxRows
      assert.strictEqual(row!.id, claimed[0]!.id)
      assert.strictEqual(row!.sent_at, T0 + Duration.toMillis(Lease))
    })))

  it.effect("a subscription confirmed before its queued mail goes out gets no mail; the row is marked sent", () =>
    run(Effect.gen(function*() {
      const store = yield* SubscriptionStore
      const tokens = yield* Tokens
      const subscription = yield* subscribe()
      assert.strictEqual(yield* deliverDue, 1)
      const first = (yield* sent)[0]!
      // A second request queues another mail; the subscriber confirms through the first before it goes out.
      yield* TestClock.adjust(Duration.seconds(5))
      yield* subscribe()
      const confirmed = yield* store.redeemToken(
        tokens.hash(confirmToken(first)),
        "confirm",
        Event.Confirm(),
        yield* now
      )
      assert.strictEqual(confirmed.status, "active")

      assert.strictEqual(yield* deliverDue, 1)
      assert.lengthOf(yield* attempts, 1)
      const rows = yield* outboxRows
      assert.lengthOf(rows, 2)
      assert.strictEqual(rows[1]!.sent_at, T0 + 5000)
      yield* TestClock.adjust(Duration.days(1))
      assert.strictEqual(yield* deliverDue, 0)
      assert.lengthOf(yield* attempts, 1)
      assert.strictEqual(Option.getOrThrow(yield* store.get(subscription.id)).status, "active")
      // And the first confirm token stays used.
      const again = yield* Effect.flip(
        store.redeemToken(tokens.hash(confirmToken(first)), "confirm", Event.Confirm(), yield* now)
      )
      assert.instanceOf(again, InvalidToken)
    })))

  it.effect("an unsubscribed subscription's queued mail is not sent", () =>
    run(Effect.gen(function*() {
      const store = yield* SubscriptionStore
      const tokens = yield* Tokens
      yield* subscribe()
      yield* deliverDue
      yield* subscribe()
      const first = (yield* sent)[0]!
      yield* store.redeemToken(tokens.hash(unsubscribeToken(first)), "unsubscribe", Event.Unsubscribe(), yield* now)
      assert.strictEqual(yield* deliverDue, 1)
      assert.lengthOf(yield* attempts, 1)
      assert.isNotNull((yield* outboxRows)[1]!.sent_at)
    })))
})

// The receipts of accepted mails (core/subscriptions/MailReceipts.ts), kept here in a list: a worker built after
// a crash marks the rows noted and never settled sent, and sends the rest.
describe("OutboxWorker with receipts of accepted mails", () => {
  it.effect("marks the rows noted before a crash sent while it is built, and settles each mail's receipt", () =>
    run(Effect.gen(function*() {
      yield* subscribe()
      yield* subscribe({ ...ann, email: Email.make("bob@example.com") })
      const [noted, other] = yield* outboxRows
      const settled: Array<number> = []
      const receipts = Layer.succeed(MailReceipts, {
        unsettled: Effect.succeed([noted!.id]),
        settle: (ids) => Effect.sync(() => void settled.push(...ids))
      })
      const taken = yield* Effect.provide(deliverDue, OutboxWorker.Default.pipe(Layer.provide(receipts)))
      assert.strictEqual(taken, 1)
      const mails = yield* sent
      assert.deepStrictEqual(mails.map((m) => [m.to.address, m.outbox]), [["bob@example.com", other!.id]])
      assert.deepStrictEqual((yield* outboxRows).map((r) => r.sent_at), [T0, T0])
      assert.deepStrictEqual(settled, [noted!.id, other!.id])
    })))
})

describe("OutboxWorker with several workers on one database", () => {
  // A regression test: deliverDue used to claim 16 rows under one 30 s lease but send them 4 at a time, so
  // with 20 s sends a second worker re-claimed rows whose lease had run out and sent them again.
  it.effect("no subscriber gets the same confirmation twice when sends are slow", () =>
    Effect.scoped(Effect.gen(function*() {
      yield* TestClock.setTime(T0)
      const delivered = yield* Ref.make<ReadonlyArray<string>>([])
      const slowMailer = Layer.succeed(
        Mailer,
        Mailer.of({
          sendAll: (mails, report) =>
            Effect.forEach(mails, (mail, index) =>
              Effect.sleep(Duration.seconds(20)).pipe(
                Effect.zipRight(Ref.update(delivered, (all) => [...all, mail.to.address])),
                Effect.zipRight(Effect.sync(() => report({ index })))
              ), { concurrency: "unbounded", discard: true })
        })
      )
      const shared = yield* Layer.build(Layer.mergeAll(tempSqliteStore(), slowMailer, CryptoTokens, site))
      const worker = Effect.map(
        Effect.provide(Layer.build(OutboxWorker.Default), shared),
        (context) => Context.get(context, OutboxWorker)
      )
      const first = yield* worker
      const second = yield* worker
      const readers = 8
      for (let i = 0; i < readers; i++) {
        yield* Effect.provide(subscribe({ ...ann, email: Email.make(`reader${i}@example.com`) }), shared)
      }

      const firstPass = yield* Effect.fork(first.deliverDue)
      yield* TestClock.adjust(Duration.seconds(31))
      // The second worker polls once the first one's lease has ended.
      const secondPass = yield* Effect.fork(second.deliverDue)
      yield* TestClock.adjust(Duration.minutes(5))
      // Between them the two passes take every row once; neither takes a row the other is sending.
      assert.strictEqual((yield* Fiber.join(firstPass)) + (yield* Fiber.join(secondPass)), readers)

      const addresses = yield* Ref.get(delivered)
      assert.sameMembers([...new Set(addresses)], Array.from({ length: readers }, (_, i) => `reader${i}@example.com`))
      assert.strictEqual(addresses.length, readers, `sent ${addresses.length} mails to ${readers} subscribers`)
    })))
})

describe("OutboxWorker.run, the loops over a backlog", () => {
  it.prop(
    "a full batch doubles the next, up to MaxBatchGrowth times the share; a partial one starts again",
    [fc.integer({ min: 1, max: 64 }), fc.integer({ min: 0, max: 10 }), fc.nat()],
    ([base, doublings, short]) => {
      const size = Math.min(base * 2 ** doublings, base * MaxBatchGrowth)
      const grown = nextBatch(base, size, size)
      assert.strictEqual(grown, Math.min(size * 2, base * MaxBatchGrowth))
      assert.isAtLeast(grown, size)
      assert.strictEqual(nextBatch(base, size, Math.min(short, size - 1)), base)
    }
  )

  it.effect("drains a backlog far above MAIL_CONCURRENCY in growing batches, one mail per subscriber", () =>
    Effect.scoped(Effect.gen(function*() {
      yield* TestClock.setTime(T0)
      const concurrency = 8 // eight loops of one
      const backlog = 300
      const limits: Array<number> = []
      const counted = Layer.effect(
        SubscriptionStore,
        Effect.map(SubscriptionStore, (store) =>
          SubscriptionStore.of({
            ...store,
            claimDue: (now, until, limit) => {
              limits.push(limit)
              return store.claimDue(now, until, limit)
            }
          }))
      )
      const base = Layer.mergeAll(tempSqliteStore(), MemoryMailer.layer, CryptoTokens, site)
      const context = yield* Layer.build(
        OutboxWorker.Default.pipe(
          Layer.provide(Layer.succeed(MailConcurrency, concurrency)),
          Layer.provideMerge(counted),
          Layer.provideMerge(base)
        )
      )
      for (let i = 0; i < backlog; i++) {
        yield* Effect.provide(subscribe({ ...ann, email: Email.make(`backlog${i}@example.com`) }), context)
      }
      const worker = Context.get(context, OutboxWorker)
      const loops = yield* Effect.fork(worker.run)
      const mails = yield* Effect.provide(Effect.flatMap(MemoryMailer, (m) => m.awaitSent(backlog)), context)
      yield* Fiber.interrupt(loops)

      assert.sameMembers(
        mails.map((m) => m.to.address),
        Array.from({ length: backlog }, (_, i) => `backlog${i}@example.com`)
      )
      assert.strictEqual(mails.length, backlog)
      assert.strictEqual(Math.min(...limits), 1)
      assert.strictEqual(Math.max(...limits), MaxBatchGrowth)
    })))
})
