import { AdminOwner } from "../../core/webhooks/Webhooks.ts"
// What every SubscriptionStore must do, whatever storage is behind it (the core's store over each adapter's
// SubscriptionStorage port). The checks use the port only, plus RawRows to count rows; `makeLayer` must give a
// new, migrated database (with the "default" feed) each time. Every check runs on the in-memory adapter too.
import { assert, describe, it } from "@effect/vitest"
import { DateTime, Duration, Effect, type Layer, Option } from "effect"
import { Email } from "../../core/shared/Email.ts"
import { InvalidToken } from "../../core/subscriptions/Errors.ts"
import { DefaultFeed, FeedName } from "../../core/subscriptions/Feed.ts"
import {
  Event,
  MailThrottle,
  SubscriberName,
  type Subscription,
  SubscriptionId
} from "../../core/subscriptions/Subscription.ts"
import { type IssuedTokens, type OutboxEntry, SubscriptionStore } from "../../core/subscriptions/SubscriptionStore.ts"
import { ConfirmTokenTtl, TokenHash } from "../../core/subscriptions/Token.ts"
import { count, RawRows } from "./RawRows.ts"

const T0 = Date.UTC(2025, 0, 15, 12, 0, 0)
const at = (ms: number) => DateTime.unsafeMake(T0 + ms)
const t0 = at(0)
const plus = (time: DateTime.Utc, duration: Duration.DurationInput) => DateTime.addDuration(time, duration)
// A negative Duration is zero in Effect: going back in time needs its own function.
const minus = (time: DateTime.Utc, duration: Duration.DurationInput) => DateTime.subtractDuration(time, duration)
// chai's deep equality treats every Option as equal to every other (their fields live on prototypes), so
// Options are compared through their values.
const valueOf = <A>(option: Option.Option<A>): A | undefined => Option.getOrUndefined(option)
// A batch of one: what the outbox worker does for each claimed row.
const prepareOne = (
  store: SubscriptionStore["Type"],
  entry: OutboxEntry,
  tokens: IssuedTokens,
  now: DateTime.Utc
) => Effect.map(store.prepareConfirmations([{ entry, tokens }], now), ([prepared]) => prepared!)
const Lease = Duration.seconds(30)

const ann = { name: SubscriberName.make("Ann"), email: Email.make("ann@example.com"), feed: DefaultFeed }
const bob = { name: SubscriberName.make("Bob"), email: Email.make("bob@example.com"), feed: DefaultFeed }
const OtherFeed = FeedName.make("other")

const insertOtherFeed = Effect.flatMap(SubscriptionStore, (store) => store.putFeed(OtherFeed, "Other", t0))

// Token hashes as a worker would store them when it mails a confirmation at `now`.
const issued = (label: string, now: DateTime.Utc): IssuedTokens => ({
  confirm: { hash: TokenHash.make(`${label}-confirm`), expiresAt: plus(now, ConfirmTokenTtl) },
  unsubscribe: { hash: TokenHash.make(`${label}-unsubscribe`) }
})

const idsOf = (entries: ReadonlyArray<OutboxEntry>) => entries.map((e) => e.id).sort((a, b) => a - b)

const assertInvalidToken = (error: unknown) => {
  assert.instanceOf(error, InvalidToken)
  assert.strictEqual((error as InvalidToken)._tag, "InvalidToken")
}

export const subscriptionStoreContract = (
  name: string,
  makeLayer: () => Layer.Layer<SubscriptionStore | RawRows, unknown>
): void => {
  describe(`SubscriptionStore contract: ${name}`, () => {
    const run = <A, E>(self: Effect.Effect<A, E, SubscriptionStore | RawRows>) => Effect.provide(self, makeLayer())

    // Plays the worker for `subscription`: claims its due mail, stores the tokens it would carry, marks it sent.
    const mailConfirmation = (subscription: Subscription, label: string, now: DateTime.Utc) =>
      Effect.gen(function*() {
        const store = yield* SubscriptionStore
        const due = yield* store.claimDue(now, plus(now, Lease), 100)
        const entry = due.find((e) => e.subscriptionId === subscription.id)
        assert.isDefined(entry, `no due mail for subscription ${subscription.id}`)
        const tokens = issued(label, now)
        const prepared = yield* prepareOne(store, entry!, tokens, now)
        assert.isTrue(Option.isSome(prepared), "prepareConfirmations refused a pending subscription")
        yield* store.markSentAll([entry!.id], now)
        return tokens
      })

    // Subscribes `who` and confirms through the token flow; answers the tokens the confirmation mail carried.
    const activeSubscription = (who: typeof ann, label: string, now: DateTime.Utc) =>
      Effect.gen(function*() {
        const store = yield* SubscriptionStore
        const { subscription } = yield* store.subscribe({ ...who, now })
        const tokens = yield* mailConfirmation(subscription, label, now)
        const confirmed = yield* store.redeemToken(tokens.confirm.hash, "confirm", Event.Confirm(), now)
        assert.strictEqual(confirmed.status, "active")
        assert.strictEqual(confirmed.id, subscription.id)
        return { subscription: confirmed, tokens }
      })

    describe("feeds", () => {
      it.effect("the migrated database has the default feed; an unknown feed is none", () =>
        run(Effect.gen(function*() {
          const store = yield* SubscriptionStore
          const feed = yield* store.findFeed(DefaultFeed)
          assert.isTrue(Option.isSome(feed))
          assert.strictEqual(Option.getOrThrow(feed).name, "default")
          assert.isTrue(Option.isNone(yield* store.findFeed(FeedName.make("no-such-feed"))))
        })))
    })

    describe("subscribe", () => {
      it.effect("a new address becomes a pending subscription with one confirmation mail queued", () =>
        run(Effect.gen(function*() {
          const store = yield* SubscriptionStore
          const { queued, subscription } = yield* store.subscribe({ ...ann, now: t0 })
          assert.strictEqual(subscription.status, "pending")
          assert.isTrue(Number.isInteger(subscription.id) && subscription.id > 0, `id ${subscription.id}`)
          assert.isTrue(queued)
          assert.strictEqual(subscription.name, "Ann")
          assert.strictEqual(subscription.email, "ann@example.com")
          assert.strictEqual(subscription.feed, "default")
          assert.strictEqual(DateTime.toEpochMillis(subscription.createdAt), T0)
          assert.strictEqual(DateTime.toEpochMillis(subscription.updatedAt), T0)
          assert.strictEqual(yield* count("subscriptions"), 1)
          assert.strictEqual(yield* count("mail_outbox"), 1)
          const stored = yield* store.get(subscription.id)
          assert.deepStrictEqual(valueOf(Option.map(stored, (s) => [s.id, s.status, s.email])), [
            subscription.id,
            "pending",
            "ann@example.com"
          ])
        })))

      it.effect("addresses match case-insensitively within a feed", () =>
        run(Effect.gen(function*() {
          const store = yield* SubscriptionStore
          const first = yield* store.subscribe({ ...ann, email: Email.make("Ann@Example.com"), now: t0 })
          const second = yield* store.subscribe({ ...ann, email: Email.make("ann@example.com"), now: at(1000) })
          assert.strictEqual(second.subscription.id, first.subscription.id)
          const third = yield* store.subscribe({ ...ann, email: Email.make("ANN@EXAMPLE.COM"), now: at(2000) })
          assert.strictEqual(third.subscription.id, first.subscription.id)
          assert.strictEqual(yield* count("subscriptions"), 1)
        })))

      it.effect("the same address in another feed is another subscription", () =>
        run(Effect.gen(function*() {
          const store = yield* SubscriptionStore
          yield* insertOtherFeed
          const inDefault = yield* store.subscribe({ ...ann, now: t0 })
          const inOther = yield* store.subscribe({ ...ann, feed: OtherFeed, now: t0 })
          assert.notStrictEqual(inOther.subscription.id, inDefault.subscription.id)
          assert.strictEqual(inOther.subscription.feed, "other")
          assert.strictEqual(inOther.subscription.status, "pending")
          assert.isTrue(inOther.queued)
          assert.strictEqual(yield* count("subscriptions"), 2)
          assert.strictEqual(yield* count("mail_outbox"), 2)
        })))

      it.effect("a different address is a different subscription", () =>
        run(Effect.gen(function*() {
          const store = yield* SubscriptionStore
          const a = yield* store.subscribe({ ...ann, now: t0 })
          const b = yield* store.subscribe({ ...bob, now: t0 })
          assert.notStrictEqual(a.subscription.id, b.subscription.id)
          assert.strictEqual(yield* count("subscriptions"), 2)
        })))

      it.effect("a pending address subscribed again keeps its id and takes the new name", () =>
        run(Effect.gen(function*() {
          const store = yield* SubscriptionStore
          const first = yield* store.subscribe({ ...ann, now: t0 })
          const again = yield* store.subscribe({ ...ann, name: SubscriberName.make("Ann Smith"), now: at(60_000) })
          assert.strictEqual(again.subscription.id, first.subscription.id)
          assert.strictEqual(again.subscription.status, "pending")
          assert.strictEqual(again.subscription.name, "Ann Smith")
          assert.strictEqual(DateTime.toEpochMillis(again.subscription.updatedAt), T0 + 60_000)
          assert.strictEqual(DateTime.toEpochMillis(again.subscription.createdAt), T0)
        })))

      it.effect("queues at most MailThrottle.maxMails confirmation mails per subscription within the window", () =>
        run(Effect.gen(function*() {
          const store = yield* SubscriptionStore
          const minutes = (n: number) => at(n * 60_000)
          let id: number | undefined
          for (let i = 0; i < MailThrottle.maxMails + 3; i++) {
            const { queued, subscription } = yield* store.subscribe({ ...ann, now: minutes(i) })
            id ??= subscription.id
            assert.strictEqual(subscription.id, id)
            assert.strictEqual(subscription.status, "pending")
            assert.strictEqual(queued, i < MailThrottle.maxMails, `request ${i + 1}`)
          }
          assert.strictEqual(yield* count("mail_outbox"), MailThrottle.maxMails)
          // Still within 24 hours of the last queued mail: nothing more.
          const later = yield* store.subscribe({ ...ann, now: plus(t0, Duration.hours(23)) })
          assert.isFalse(later.queued)
          assert.strictEqual(yield* count("mail_outbox"), MailThrottle.maxMails)
          // Once the window has passed over every queued mail, the address gets a mail again.
          const nextDay = yield* store.subscribe({ ...ann, now: plus(t0, Duration.hours(25)) })
          assert.isTrue(nextDay.queued)
          assert.strictEqual(nextDay.subscription.id, id)
          assert.strictEqual(yield* count("mail_outbox"), MailThrottle.maxMails + 1)
        })))

      it.effect("the throttle counts per subscription: another address is not held back", () =>
        run(Effect.gen(function*() {
          const store = yield* SubscriptionStore
          for (let i = 0; i < MailThrottle.maxMails + 1; i++) yield* store.subscribe({ ...ann, now: t0 })
          const other = yield* store.subscribe({ ...bob, now: t0 })
          assert.isTrue(other.queued)
          assert.strictEqual(yield* count("mail_outbox"), MailThrottle.maxMails + 1)
        })))

      it.effect("an active subscription subscribed again stays active, keeps its name and queues nothing", () =>
        run(Effect.gen(function*() {
          const store = yield* SubscriptionStore
          const { subscription } = yield* activeSubscription(ann, "ann", t0)
          const outboxBefore = yield* count("mail_outbox")
          const again = yield* store.subscribe({ ...ann, name: SubscriberName.make("Mallory"), now: at(1000) })
          assert.strictEqual(again.subscription.id, subscription.id)
          assert.strictEqual(again.subscription.status, "active")
          assert.strictEqual(again.subscription.name, "Ann")
          assert.isFalse(again.queued)
          assert.strictEqual(yield* count("mail_outbox"), outboxBefore)
          const stored = Option.getOrThrow(yield* store.get(subscription.id))
          assert.strictEqual(stored.status, "active")
          assert.strictEqual(stored.name, "Ann")
        })))

      it.effect("an unsubscribed subscription subscribed again is pending again and gets a mail", () =>
        run(Effect.gen(function*() {
          const store = yield* SubscriptionStore
          const { subscription, tokens } = yield* activeSubscription(ann, "ann", t0)
          const gone = yield* store.redeemToken(tokens.unsubscribe.hash, "unsubscribe", Event.Unsubscribe(), at(1000))
          assert.strictEqual(gone.status, "unsubscribed")
          const again = yield* store.subscribe({ ...ann, now: at(2000) })
          assert.strictEqual(again.subscription.id, subscription.id)
          assert.strictEqual(again.subscription.status, "pending")
          assert.isTrue(again.queued)
          assert.strictEqual(yield* count("mail_outbox"), 2)
          const due = yield* store.claimDue(at(2000), plus(at(2000), Lease), 10)
          assert.deepStrictEqual(due.map((e) => e.subscriptionId), [subscription.id])
        })))

      it.effect("20 concurrent subscribe calls for one address make one subscription and at most maxMails mails", () =>
        run(Effect.gen(function*() {
          const store = yield* SubscriptionStore
          const results = yield* Effect.all(
            Array.from({ length: 20 }, (_, i) =>
              store.subscribe({
                ...ann,
                email: Email.make(i % 2 === 0 ? "ann@example.com" : "Ann@Example.COM"),
                now: t0
              })),
            { concurrency: "unbounded" }
          )
          assert.strictEqual(new Set(results.map((r) => r.subscription.id)).size, 1)
          assert.strictEqual(yield* count("subscriptions"), 1)
          const outbox = yield* count("mail_outbox")
          assert.isAtLeast(outbox, 1)
          assert.isAtMost(outbox, MailThrottle.maxMails)
          // Every "queued" answer stands for a row, and no row went unreported.
          assert.strictEqual(results.filter((r) => r.queued).length, outbox)
        })))
    })

    describe("outbox", () => {
      it.effect("claimDue returns the due rows and leases them until leaseUntil", () =>
        run(Effect.gen(function*() {
          const store = yield* SubscriptionStore
          const a = yield* store.subscribe({ ...ann, now: t0 })
          const b = yield* store.subscribe({ ...bob, now: at(10) })
          // Not due before it was queued.
          assert.deepStrictEqual(yield* store.claimDue(at(-1), plus(at(-1), Lease), 10), [])
          const leaseUntil = plus(at(10), Lease)
          const due = yield* store.claimDue(at(10), leaseUntil, 10)
          assert.lengthOf(due, 2)
          assert.sameMembers(due.map((e) => e.subscriptionId), [a.subscription.id, b.subscription.id])
          for (const entry of due) {
            assert.strictEqual(entry.attempts, 0)
            assert.isTrue(Number.isInteger(entry.id) && entry.id > 0)
          }
          // Leased: nobody else takes them, now or until the lease ends.
          assert.deepStrictEqual(yield* store.claimDue(at(10), leaseUntil, 10), [])
          assert.deepStrictEqual(yield* store.claimDue(minus(leaseUntil, Duration.millis(1)), leaseUntil, 10), [])
          // When the lease ends they are due again.
          const again = yield* store.claimDue(leaseUntil, plus(leaseUntil, Lease), 10)
          assert.deepStrictEqual(idsOf(again), idsOf(due))
          for (const entry of again) assert.strictEqual(entry.attempts, 0)
        })))

      it.effect("claimDue takes at most `limit` rows, oldest first", () =>
        run(Effect.gen(function*() {
          const store = yield* SubscriptionStore
          const a = yield* store.subscribe({ ...ann, now: t0 })
          const b = yield* store.subscribe({ ...bob, now: at(5) })
          const first = yield* store.claimDue(at(10), plus(at(10), Lease), 1)
          assert.deepStrictEqual(first.map((e) => e.subscriptionId), [a.subscription.id])
          const second = yield* store.claimDue(at(10), plus(at(10), Lease), 1)
          assert.deepStrictEqual(second.map((e) => e.subscriptionId), [b.subscription.id])
          assert.deepStrictEqual(yield* store.claimDue(at(10), plus(at(10), Lease), 1), [])
        })))

      it.effect("concurrent claimDue calls never hand out the same row twice", () =>
        run(Effect.gen(function*() {
          const store = yield* SubscriptionStore
          for (let i = 0; i < 8; i++) {
            yield* store.subscribe({ ...ann, email: Email.make(`reader${i}@example.com`), now: t0 })
          }
          const claims = yield* Effect.all(
            Array.from({ length: 6 }, () => store.claimDue(t0, plus(t0, Lease), 2)),
            { concurrency: "unbounded" }
          )
          const ids = claims.flatMap((c) => c.map((e) => e.id))
          assert.strictEqual(ids.length, 8)
          assert.strictEqual(new Set(ids).size, 8)
        })))

      it.effect("markSentAll takes a row out of every future claim", () =>
        run(Effect.gen(function*() {
          const store = yield* SubscriptionStore
          yield* store.subscribe({ ...ann, now: t0 })
          const [entry] = yield* store.claimDue(t0, plus(t0, Lease), 10)
          assert.isDefined(entry)
          yield* store.markSentAll([entry!.id], at(100))
          assert.deepStrictEqual(yield* store.claimDue(plus(t0, Lease), plus(t0, Duration.minutes(1)), 10), [])
          assert.deepStrictEqual(
            yield* store.claimDue(plus(t0, Duration.days(3650)), plus(t0, Duration.days(3651)), 10),
            []
          )
          assert.strictEqual(yield* count("mail_outbox"), 1)
        })))

      // The outbox marks rows from their mails' receipts at start (core/subscriptions/MailReceipts.ts), some of
      // them marked already.
      it.effect("markSentAll leaves a row sent already with its time", () =>
        run(Effect.gen(function*() {
          const store = yield* SubscriptionStore
          yield* store.subscribe({ ...ann, now: t0 })
          const [entry] = yield* store.claimDue(t0, plus(t0, Lease), 10)
          yield* store.markSentAll([entry!.id], at(100))
          yield* store.markSentAll([entry!.id], at(200))
          const [row] = yield* Effect.flatMap(RawRows, (raw) => raw.rows("mail_outbox"))
          const sentAt = row!["sent_at"] ?? row!["row.sentAt"]
          assert.strictEqual(
            typeof sentAt === "string" && sentAt.includes("T") ? Date.parse(sentAt) : Number(sentAt),
            T0 + 100
          )
        })))

      it.effect("markFailed with a next attempt counts the attempt and makes the row due at that time", () =>
        run(Effect.gen(function*() {
          const store = yield* SubscriptionStore
          yield* store.subscribe({ ...ann, now: t0 })
          const [entry] = yield* store.claimDue(t0, plus(t0, Lease), 10)
          const next = at(10_000)
          yield* store.markFailed(entry!.id, next, "connection refused")
          assert.deepStrictEqual(yield* store.claimDue(at(9_999), plus(at(9_999), Lease), 10), [])
          const retry = yield* store.claimDue(next, plus(next, Lease), 10)
          assert.deepStrictEqual(retry, [{ id: entry!.id, subscriptionId: entry!.subscriptionId, attempts: 1 }])
          const next2 = at(20_000)
          yield* store.markFailed(entry!.id, next2, "connection refused")
          const retry2 = yield* store.claimDue(next2, plus(next2, Lease), 10)
          assert.deepStrictEqual(retry2.map((e) => e.attempts), [2])
        })))

      it.effect("markFailed without a next attempt gives the row up for good", () =>
        run(Effect.gen(function*() {
          const store = yield* SubscriptionStore
          yield* store.subscribe({ ...ann, now: t0 })
          const [entry] = yield* store.claimDue(t0, plus(t0, Lease), 10)
          yield* store.markFailed(entry!.id, undefined, "550 mailbox unavailable")
          assert.deepStrictEqual(yield* store.claimDue(plus(t0, Lease), plus(t0, Duration.minutes(1)), 10), [])
          assert.deepStrictEqual(
            yield* store.claimDue(plus(t0, Duration.days(3650)), plus(t0, Duration.days(3651)), 10),
            []
          )
          // A given-up row still counts towards the throttle: it is not deleted.
          assert.strictEqual(yield* count("mail_outbox"), 1)
        })))
    })

    describe("tokens", () => {
      it.effect("prepareConfirmations stores the token hashes of a pending subscription", () =>
        run(Effect.gen(function*() {
          const store = yield* SubscriptionStore
          const { subscription } = yield* store.subscribe({ ...ann, now: t0 })
          const [entry] = yield* store.claimDue(t0, plus(t0, Lease), 10)
          const tokens = issued("ann", t0)
          const prepared = yield* prepareOne(store, entry!, tokens, t0)
          assert.deepStrictEqual(valueOf(Option.map(prepared, (s) => [s.id, s.status])), [subscription.id, "pending"])
          assert.strictEqual(yield* count("subscription_tokens"), 2)
          const byConfirm = yield* store.findByToken(tokens.confirm.hash, "confirm", t0)
          assert.strictEqual(valueOf(byConfirm)?.id, subscription.id)
          const byUnsubscribe = yield* store.findByToken(tokens.unsubscribe.hash, "unsubscribe", t0)
          assert.strictEqual(valueOf(byUnsubscribe)?.id, subscription.id)
        })))

      it.effect("prepareConfirmations stores nothing and answers none once the subscription is active", () =>
        run(Effect.gen(function*() {
          const store = yield* SubscriptionStore
          const { subscription } = yield* store.subscribe({ ...ann, now: t0 })
          yield* store.subscribe({ ...ann, now: t0 }) // a second queued mail
          const due = yield* store.claimDue(t0, plus(t0, Lease), 10)
          assert.lengthOf(due, 2)
          const tokens = issued("first", t0)
          assert.isTrue(Option.isSome(yield* prepareOne(store, due[0]!, tokens, t0)))
          yield* store.redeemToken(tokens.confirm.hash, "confirm", Event.Confirm(), t0)
          const tokensBefore = yield* count("subscription_tokens")
          const late = issued("late", t0)
          assert.isTrue(Option.isNone(yield* prepareOne(store, due[1]!, late, t0)))
          assert.strictEqual(yield* count("subscription_tokens"), tokensBefore)
          assert.isTrue(Option.isNone(yield* store.findByToken(late.confirm.hash, "confirm", t0)))
          assert.isTrue(Option.isNone(yield* store.findByToken(late.unsubscribe.hash, "unsubscribe", t0)))
          assert.strictEqual(Option.getOrThrow(yield* store.get(subscription.id)).status, "active")
        })))

      it.effect("prepareConfirmations stores nothing and answers none once the subscription is unsubscribed", () =>
        run(Effect.gen(function*() {
          const store = yield* SubscriptionStore
          yield* store.subscribe({ ...ann, now: t0 })
          yield* store.subscribe({ ...ann, now: t0 })
          const due = yield* store.claimDue(t0, plus(t0, Lease), 10)
          const tokens = issued("first", t0)
          yield* prepareOne(store, due[0]!, tokens, t0)
          yield* store.redeemToken(tokens.unsubscribe.hash, "unsubscribe", Event.Unsubscribe(), t0)
          const tokensBefore = yield* count("subscription_tokens")
          assert.isTrue(Option.isNone(yield* prepareOne(store, due[1]!, issued("late", t0), t0)))
          assert.strictEqual(yield* count("subscription_tokens"), tokensBefore)
        })))

      it.effect("prepareConfirmations prepares a batch in its order: tokens for the pending, none for the others", () =>
        run(Effect.gen(function*() {
          const store = yield* SubscriptionStore
          const { subscription: first } = yield* store.subscribe({ ...ann, now: t0 })
          yield* store.subscribe({ ...ann, now: t0 }) // a second mail to Ann, who confirms in between
          const { subscription: second } = yield* store.subscribe({ ...bob, now: t0 })
          const due = yield* store.claimDue(t0, plus(t0, Lease), 10)
          assert.lengthOf(due, 3)
          const confirmed = issued("ann-early", t0)
          yield* prepareOne(store, due.find((e) => e.subscriptionId === first.id)!, confirmed, t0)
          yield* store.redeemToken(confirmed.confirm.hash, "confirm", Event.Confirm(), t0)
          const tokensBefore = yield* count("subscription_tokens")
          assert.deepStrictEqual(yield* store.prepareConfirmations([], t0), [])
          const batch = due.map((entry, i) => ({ entry, tokens: issued(`batch-${i}`, t0) }))
          const prepared = yield* store.prepareConfirmations(batch, t0)
          assert.deepStrictEqual(
            prepared.map((p) => valueOf(Option.map(p, (s) => s.id))),
            due.map((e) => e.subscriptionId === second.id ? second.id : undefined)
          )
          assert.strictEqual(yield* count("subscription_tokens"), tokensBefore + 2)
          const bobs = batch.find((b) => b.entry.subscriptionId === second.id)!.tokens
          assert.strictEqual(valueOf(yield* store.findByToken(bobs.confirm.hash, "confirm", t0))?.id, second.id)
          assert.strictEqual(valueOf(yield* store.findByToken(bobs.unsubscribe.hash, "unsubscribe", t0))?.id, second.id)
          for (const { tokens } of batch.filter((b) => b.entry.subscriptionId !== second.id)) {
            assert.isTrue(Option.isNone(yield* store.findByToken(tokens.confirm.hash, "confirm", t0)))
          }
        })))

      it.effect("markSentAll takes every row given, and only those, out of future claims", () =>
        run(Effect.gen(function*() {
          const store = yield* SubscriptionStore
          yield* store.subscribe({ ...ann, now: t0 })
          yield* store.subscribe({ ...bob, now: t0 })
          yield* store.subscribe({ ...ann, feed: DefaultFeed, email: Email.make("cat@example.com"), now: t0 })
          const due = yield* store.claimDue(t0, plus(t0, Lease), 10)
          assert.lengthOf(due, 3)
          yield* store.markSentAll([], at(100))
          yield* store.markSentAll([due[0]!.id, due[2]!.id], at(100))
          const again = yield* store.claimDue(plus(t0, Lease), plus(plus(t0, Lease), Lease), 10)
          assert.deepStrictEqual(idsOf(again), [due[1]!.id])
        })))

      it.effect("findByToken finds a usable confirm token only: not expired, not of another purpose, not unknown", () =>
        run(Effect.gen(function*() {
          const store = yield* SubscriptionStore
          const { subscription } = yield* store.subscribe({ ...ann, now: t0 })
          const tokens = yield* mailConfirmation(subscription, "ann", t0)
          const expiresAt = tokens.confirm.expiresAt
          const found = (hash: TokenHash, purpose: "confirm" | "unsubscribe", now: DateTime.Utc) =>
            Effect.map(store.findByToken(hash, purpose, now), (s) => valueOf(s)?.id)
          assert.strictEqual(yield* found(tokens.confirm.hash, "confirm", t0), subscription.id)
          assert.strictEqual(yield* found(tokens.confirm.hash, "confirm", minus(expiresAt, 1)), subscription.id)
          assert.isUndefined(yield* found(tokens.confirm.hash, "confirm", expiresAt))
          assert.isUndefined(yield* found(tokens.confirm.hash, "confirm", plus(expiresAt, Duration.days(1))))
          // A hash only works for the purpose it was issued for.
          assert.isUndefined(yield* found(tokens.confirm.hash, "unsubscribe", t0))
          assert.isUndefined(yield* found(tokens.unsubscribe.hash, "confirm", t0))
          assert.isUndefined(yield* found(TokenHash.make("never-issued"), "confirm", t0))
          // Unsubscribe tokens do not expire.
          assert.strictEqual(
            yield* found(tokens.unsubscribe.hash, "unsubscribe", plus(t0, Duration.days(3650))),
            subscription.id
          )
        })))

      it.effect("a confirm token activates the subscription once; a second redeem fails with InvalidToken", () =>
        run(Effect.gen(function*() {
          const store = yield* SubscriptionStore
          const { subscription } = yield* store.subscribe({ ...ann, now: t0 })
          const tokens = yield* mailConfirmation(subscription, "ann", t0)
          const confirmed = yield* store.redeemToken(tokens.confirm.hash, "confirm", Event.Confirm(), at(1000))
          assert.strictEqual(confirmed.id, subscription.id)
          assert.strictEqual(confirmed.status, "active")
          assert.strictEqual(DateTime.toEpochMillis(confirmed.updatedAt), T0 + 1000)
          assert.strictEqual(Option.getOrThrow(yield* store.get(subscription.id)).status, "active")
          assertInvalidToken(
            yield* Effect.flip(store.redeemToken(tokens.confirm.hash, "confirm", Event.Confirm(), at(2000)))
          )
          assert.isTrue(Option.isNone(yield* store.findByToken(tokens.confirm.hash, "confirm", at(2000))))
        })))

      it.effect("an expired, unknown or wrong-purpose token cannot be redeemed and changes nothing", () =>
        run(Effect.gen(function*() {
          const store = yield* SubscriptionStore
          const { subscription } = yield* store.subscribe({ ...ann, now: t0 })
          const tokens = yield* mailConfirmation(subscription, "ann", t0)
          const redeem = (hash: TokenHash, purpose: "confirm" | "unsubscribe", now: DateTime.Utc) =>
            Effect.flip(store.redeemToken(hash, purpose, Event.Confirm(), now))
          assertInvalidToken(yield* redeem(tokens.confirm.hash, "confirm", tokens.confirm.expiresAt))
          assertInvalidToken(yield* redeem(tokens.confirm.hash, "unsubscribe", t0))
          assertInvalidToken(yield* redeem(TokenHash.make("never-issued"), "confirm", t0))
          assert.strictEqual(Option.getOrThrow(yield* store.get(subscription.id)).status, "pending")
          // The failed attempts did not use the token up.
          const confirmed = yield* store.redeemToken(tokens.confirm.hash, "confirm", Event.Confirm(), at(1000))
          assert.strictEqual(confirmed.status, "active")
        })))

      it.effect("an unsubscribe token unsubscribes, and works again (idempotent)", () =>
        run(Effect.gen(function*() {
          const store = yield* SubscriptionStore
          const { subscription, tokens } = yield* activeSubscription(ann, "ann", t0)
          const first = yield* store.redeemToken(tokens.unsubscribe.hash, "unsubscribe", Event.Unsubscribe(), at(1000))
          assert.strictEqual(first.id, subscription.id)
          assert.strictEqual(first.status, "unsubscribed")
          const second = yield* store.redeemToken(tokens.unsubscribe.hash, "unsubscribe", Event.Unsubscribe(), at(2000))
          assert.strictEqual(second.status, "unsubscribed")
          assert.strictEqual(Option.getOrThrow(yield* store.get(subscription.id)).status, "unsubscribed")
          assert.isTrue(Option.isSome(yield* store.findByToken(tokens.unsubscribe.hash, "unsubscribe", at(3000))))
        })))

      it.effect("an unsubscribe token works on a pending subscription too", () =>
        run(Effect.gen(function*() {
          const store = yield* SubscriptionStore
          const { subscription } = yield* store.subscribe({ ...ann, now: t0 })
          const tokens = yield* mailConfirmation(subscription, "ann", t0)
          const gone = yield* store.redeemToken(tokens.unsubscribe.hash, "unsubscribe", Event.Unsubscribe(), t0)
          assert.strictEqual(gone.status, "unsubscribed")
        })))

      it.effect("a confirm token does not revive an unsubscribed subscription", () =>
        run(Effect.gen(function*() {
          const store = yield* SubscriptionStore
          const { subscription } = yield* store.subscribe({ ...ann, now: t0 })
          const tokens = yield* mailConfirmation(subscription, "ann", t0)
          yield* store.redeemToken(tokens.unsubscribe.hash, "unsubscribe", Event.Unsubscribe(), at(1000))
          assertInvalidToken(
            yield* Effect.flip(store.redeemToken(tokens.confirm.hash, "confirm", Event.Confirm(), at(2000)))
          )
          assert.strictEqual(Option.getOrThrow(yield* store.get(subscription.id)).status, "unsubscribed")
        })))

      it.effect("unsubscribing voids the confirmation links still out, so they cannot confirm a later signup", () =>
        run(Effect.gen(function*() {
          const store = yield* SubscriptionStore
          const { subscription } = yield* store.subscribe({ ...ann, now: t0 })
          const tokens = yield* mailConfirmation(subscription, "ann", t0)
          yield* store.redeemToken(tokens.unsubscribe.hash, "unsubscribe", Event.Unsubscribe(), at(1000))
          const again = yield* store.subscribe({ ...ann, now: at(2000) })
          assert.strictEqual(again.subscription.status, "pending")
          assertInvalidToken(
            yield* Effect.flip(store.redeemToken(tokens.confirm.hash, "confirm", Event.Confirm(), at(3000)))
          )
          assert.strictEqual(Option.getOrThrow(yield* store.get(subscription.id)).status, "pending")
        })))
    })

    describe("listing and purging", () => {
      const people = (n: number, feed = DefaultFeed) =>
        Array.from({ length: n }, (_, i) => ({
          name: SubscriberName.make(`P${i}`),
          email: Email.make(`p${i}.${feed}@example.com`),
          feed
        }))

      it.effect("lists in id order after the cursor, by feed and status, at most limit", () =>
        run(Effect.gen(function*() {
          const store = yield* SubscriptionStore
          yield* insertOtherFeed
          const ids: Array<number> = []
          for (const who of [...people(3), ...people(2, OtherFeed)]) {
            ids.push((yield* store.subscribe({ ...who, now: t0 })).subscription.id)
          }
          yield* activeSubscription(bob, "bob", t0)
          const idsOf = (rows: ReadonlyArray<Subscription>) => rows.map((r) => r.id)
          assert.deepStrictEqual(idsOf(yield* store.listSubscriptions({ limit: 100 })).slice(0, 5), ids)
          assert.deepStrictEqual(idsOf(yield* store.listSubscriptions({ feed: OtherFeed, limit: 100 })), ids.slice(3))
          assert.deepStrictEqual(
            idsOf(yield* store.listSubscriptions({ feed: DefaultFeed, status: "pending", limit: 2 })),
            ids.slice(0, 2)
          )
          const after = yield* store.listSubscriptions({
            feed: DefaultFeed,
            status: "pending",
            startingAfter: ids[1]! as Subscription["id"],
            limit: 10
          })
          assert.deepStrictEqual(idsOf(after), [ids[2]])
          const active = yield* store.listSubscriptions({ status: "active", limit: 10 })
          assert.deepStrictEqual(active.map((s) => [s.email, s.status]), [["bob@example.com", "active"]])
        })))

      it.effect("purges pending subscriptions signed up before the cut-off, with their tokens and mails", () =>
        run(Effect.gen(function*() {
          const store = yield* SubscriptionStore
          const old = people(5)
          for (const who of old) {
            const { subscription } = yield* store.subscribe({ ...who, now: t0 })
            if (who === old[0]) yield* mailConfirmation(subscription, "old0", t0)
          }
          yield* activeSubscription(ann, "ann", t0)
          yield* activeSubscription(bob, "bob", t0)
          yield* store.redeemToken(TokenHash.make("bob-unsubscribe"), "unsubscribe", Event.Unsubscribe(), at(1))
          // A signup renewed later counts from its renewal.
          yield* store.subscribe({ ...old[4]!, now: at(10_000) })
          const cutOff = at(5_000)
          assert.strictEqual(yield* count("subscriptions"), 7)

          assert.strictEqual(yield* store.purgePending(cutOff, 2), 2)
          assert.strictEqual(yield* store.purgePending(cutOff, 2), 2)
          assert.strictEqual(yield* store.purgePending(cutOff, 2), 0)
          const left = yield* store.listSubscriptions({ limit: 10 })
          assert.sameMembers(left.map((s) => s.email), ["ann@example.com", "bob@example.com", old[4]!.email])
          // Only the tokens of those kept (ann's, bob's) and the mails of those kept remain.
          assert.strictEqual(yield* count("subscription_tokens"), 4)
          assert.strictEqual(yield* count("mail_outbox"), 4)
          assert.strictEqual(yield* store.purgePending(at(20_000), 10), 1)
          assert.strictEqual(yield* count("subscriptions"), 2)
        })))
    })

    it.effect("signupDays and eventDays count per UTC day, in [from, before)", () =>
      run(Effect.gen(function*() {
        const store = yield* SubscriptionStore
        yield* insertOtherFeed
        const Day = 86_400_000
        const day = Math.floor(T0 / Day)
        const noon = T0 - day * Day
        const startOf = (d: number) => DateTime.unsafeMake(d * Day)
        const dave = { ...ann, name: SubscriberName.make("Dave"), email: Email.make("dave@example.com") }
        const carol = { ...ann, name: SubscriberName.make("Carol"), email: Email.make("carol@example.com") }
        // Dave signs up the day before (not counted) and confirms the day after.
        const late = yield* store.subscribe({ ...dave, now: at(-noon - 1) })
        const daveTokens = yield* mailConfirmation(late.subscription, "dave", at(-noon - 1))
        const { tokens } = yield* activeSubscription(ann, "ann", t0)
        yield* store.subscribe({ ...bob, now: at(noon - 1) })
        yield* activeSubscription({ ...carol, feed: OtherFeed }, "carol", at(noon))
        yield* store.redeemToken(daveTokens.confirm.hash, "confirm", Event.Confirm(), at(noon + 5))
        yield* store.redeemToken(tokens.unsubscribe.hash, "unsubscribe", Event.Unsubscribe(), at(noon + 10))
        // Ann, who left, signs up again: a signup of that day (her row's created time stays).
        yield* store.subscribe({ ...ann, now: at(noon + 20) })
        const byDay = <R extends { day: number; kind: string }>(rows: ReadonlyArray<R>) =>
          [...rows].sort((x, y) => x.day - y.day || x.kind.localeCompare(y.kind))
        assert.deepStrictEqual(byDay(yield* store.signupDays(day, day + 2)), [
          { day, kind: "signup", count: 2 },
          { day: day + 1, kind: "signup", count: 2 }
        ])
        assert.deepStrictEqual(byDay(yield* store.eventDays(AdminOwner, startOf(day), startOf(day + 2))), [
          { day, kind: "subscription.confirmed", count: 1 },
          { day: day + 1, kind: "subscription.confirmed", count: 2 },
          { day: day + 1, kind: "subscription.unsubscribed", count: 1 }
        ])
        assert.deepStrictEqual(yield* store.eventDays("cl_other", startOf(day), startOf(day + 2)), [])
        assert.deepStrictEqual(yield* store.signupDays(day + 2, day + 3), [])
      })))

    it.effect("a signup is counted on its day when an address starts to await confirmation, and outlives the purge", () =>
      run(Effect.gen(function*() {
        const store = yield* SubscriptionStore
        yield* insertOtherFeed
        const Day = 86_400_000
        const day = Math.floor(T0 / Day)
        const signups = Effect.map(
          store.signupDays(day, day + 2),
          (rows) => [...rows].sort((x, y) => x.day - y.day).map((r) => [r.day - day, r.count])
        )
        // Day 0: twelve new addresses (a server database spreads them over several rows), Ann among them, and
        // Bob who confirms and leaves; Ann's second request, still pending, is not a new signup.
        const many = Array.from({ length: 10 }, (_, i) => ({
          ...ann,
          name: SubscriberName.make(`P${i}`),
          email: Email.make(`p${i}@example.com`),
          feed: i % 2 === 0 ? DefaultFeed : OtherFeed
        }))
        for (const who of many) yield* store.subscribe({ ...who, now: t0 })
        yield* store.subscribe({ ...ann, now: t0 })
        yield* store.subscribe({ ...ann, now: at(1) })
        const { tokens } = yield* activeSubscription(bob, "bob", at(2))
        yield* store.redeemToken(tokens.unsubscribe.hash, "unsubscribe", Event.Unsubscribe(), at(3))
        assert.deepStrictEqual(yield* signups, [[0, 12]])
        // Day 1: Bob comes back (counted again), and P0, confirmed meanwhile, asks again (not counted).
        yield* store.subscribe({ ...bob, now: at(Day) })
        const p0 = yield* activeSubscription(many[0]!, "p0", at(Day + 1))
        assert.strictEqual(p0.subscription.status, "active")
        yield* store.subscribe({ ...many[0]!, now: at(Day + 2) })
        assert.deepStrictEqual(yield* signups, [[0, 12], [1, 1]])
        // The purge deletes every signup never confirmed: the counts stay.
        assert.strictEqual(yield* store.purgePending(at(10 * Day), 100), 11)
        assert.strictEqual(yield* count("subscriptions"), 1)
        assert.deepStrictEqual(yield* signups, [[0, 12], [1, 1]])
      })))

    describe("the list owner's views", () => {
      const ms = (t: DateTime.Utc | undefined) => t === undefined ? undefined : DateTime.toEpochMillis(t) - T0

      it.effect("counts a feed's subscriptions by status, and no other feed's", () =>
        run(Effect.gen(function*() {
          const store = yield* SubscriptionStore
          yield* insertOtherFeed
          yield* store.subscribe({ ...ann, now: t0 })
          yield* activeSubscription(bob, "bob", t0)
          const carl = { ...bob, name: SubscriberName.make("Carl"), email: Email.make("carl@example.com") }
          yield* activeSubscription(carl, "carl", t0)
          yield* store.redeemToken(TokenHash.make("carl-unsubscribe"), "unsubscribe", Event.Unsubscribe(), at(1))
          yield* store.subscribe({ ...ann, feed: OtherFeed, now: t0 })
          assert.deepStrictEqual(yield* store.countByStatus(DefaultFeed), { pending: 1, active: 1, unsubscribed: 1 })
          assert.deepStrictEqual(yield* store.countByStatus(OtherFeed), { pending: 1, active: 0, unsubscribed: 0 })
          assert.deepStrictEqual(yield* store.countByStatus(FeedName.make("none")), {
            pending: 0,
            active: 0,
            unsubscribed: 0
          })
        })))

      it.effect("finds a feed's subscription by address, compared as a signup compares it", () =>
        run(Effect.gen(function*() {
          const store = yield* SubscriptionStore
          yield* insertOtherFeed
          const { subscription } = yield* store.subscribe({ ...ann, now: t0 })
          const found = yield* store.findByEmail(Email.make("ANN@example.com"), DefaultFeed)
          assert.strictEqual(valueOf(Option.map(found, (s) => s.id)), subscription.id)
          assert.isTrue(Option.isNone(yield* store.findByEmail(ann.email, OtherFeed)))
          assert.isTrue(Option.isNone(yield* store.findByEmail(bob.email, DefaultFeed)))
        })))

      it.effect("a subscription's history: its mails newest first, and its confirmation links with their use", () =>
        run(Effect.gen(function*() {
          const store = yield* SubscriptionStore
          const { subscription, tokens } = yield* activeSubscription(ann, "ann", t0)
          yield* store.redeemToken(tokens.unsubscribe.hash, "unsubscribe", Event.Unsubscribe(), at(5_000))
          yield* store.subscribe({ ...ann, now: at(10_000) })
          const [entry] = yield* store.claimDue(at(10_000), plus(at(10_000), Lease), 10)
          yield* store.markFailed(entry!.id, at(20_000), "connection refused")
          yield* store.subscribe({ ...bob, now: t0 })
          const { links, mails } = yield* store.history(subscription.id)
          assert.deepStrictEqual(
            mails.map((m) => [ms(m.queuedAt), m.attempts, ms(m.nextAttemptAt), ms(m.sentAt), m.lastError]),
            [[10_000, 1, 20_000, undefined, "connection refused"], [0, 0, undefined, 0, undefined]]
          )
          // The first link was clicked at 0; none other was issued yet.
          assert.deepStrictEqual(links.map((l) => [ms(l.createdAt), ms(l.usedAt)]), [[0, 0]])
          assert.deepStrictEqual(yield* store.history(SubscriptionId.make(999_999)), { mails: [], links: [] })
        })))

      it.effect("the outbox: queued, sent since a time, failing, and the failing mails most attempts first", () =>
        run(Effect.gen(function*() {
          const store = yield* SubscriptionStore
          // Ann's mail is claimed and sent first, alone.
          yield* activeSubscription(ann, "ann", at(1_000))
          const { subscription: bobs } = yield* store.subscribe({ ...bob, now: t0 })
          const carl = { ...bob, name: SubscriberName.make("Carl"), email: Email.make("carl@example.com") }
          const { subscription: carls } = yield* store.subscribe({ ...carl, now: t0 })
          const dan = { ...bob, name: SubscriberName.make("Dan"), email: Email.make("dan@example.com") }
          yield* store.subscribe({ ...dan, now: at(2_000) })
          const claimed = yield* store.claimDue(at(1_500), plus(at(1_500), Lease), 10)
          const of = (id: number) => claimed.find((e) => e.subscriptionId === id)!.id
          yield* store.markFailed(of(bobs.id), at(60_000), "timeout")
          yield* store.markFailed(of(carls.id), at(60_000), "first")
          yield* store.markFailed(of(carls.id), undefined, "550 <b>no</b>")
          assert.deepStrictEqual(yield* store.outboxSummary(at(1_000)), { queued: 2, sentSince: 1, failing: 2 })
          assert.deepStrictEqual(yield* store.outboxSummary(at(1_001)), { queued: 2, sentSince: 0, failing: 2 })
          const failing = yield* store.failingMails(10)
          assert.deepStrictEqual(
            failing.map((m) => [m.subscriptionId, m.email, m.feed, m.attempts, ms(m.nextAttemptAt), m.lastError]),
            [
              [carls.id, "carl@example.com", "default", 2, undefined, "550 <b>no</b>"],
              [bobs.id, "bob@example.com", "default", 1, 60_000, "timeout"]
            ]
          )
          assert.deepStrictEqual((yield* store.failingMails(1)).map((m) => m.subscriptionId), [carls.id])
        })))
    })
  })
}
