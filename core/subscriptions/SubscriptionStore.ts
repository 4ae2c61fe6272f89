import { Context, DateTime, Effect, Layer, Option, Struct } from "effect"
import { type Day, dayOf } from "../shared/Day.ts"
import { type Email, normalizeEmail } from "../shared/Email.ts"
import { timeOrderedId } from "../shared/RandomId.ts"
import { emit, newEvent } from "../webhooks/Events.ts"
import { EventViews } from "../webhooks/EventViews.ts"
import { AdminOwner, type EventId } from "../webhooks/Webhooks.ts"
import { InvalidToken } from "./Errors.ts"
import type { Feed, FeedName } from "./Feed.ts"
import {
  AwaitsConfirmation,
  decideSubscribe,
  type Event,
  MailThrottle,
  type SubscriberName,
  type Subscription,
  type SubscriptionId,
  type SubscriptionStatus,
  transition
} from "./Subscription.ts"
import {
  type CombinedSubscriptionOperations,
  type NewSubscription,
  type StoredToken,
  SubscriptionStorage,
  type SubscriptionStorageShape,
  type SubscriptionTx
} from "./SubscriptionStorage.ts"
import { isUsable, type TokenHash, type TokenPurpose } from "./Token.ts"

// What a subscription's events are about (NewEvent.subject): its id, so that its page lists its changes of status.
export const subjectOf = (id: SubscriptionId): string => String(id)

export interface OutboxEntry {
  readonly id: number
  readonly subscriptionId: SubscriptionId
  readonly attempts: number
}

export interface IssuedTokens {
  readonly confirm: { readonly hash: TokenHash; readonly expiresAt: DateTime.Utc }
  readonly unsubscribe: { readonly hash: TokenHash }
}

// A page of subscriptions in id order: those after `startingAfter`, of `feed` and `status` when given.
export interface SubscriptionQuery {
  readonly feed?: FeedName | undefined
  readonly status?: SubscriptionStatus | undefined
  readonly startingAfter?: SubscriptionId | undefined
  readonly limit: number
}

// What the store hands the use cases from the port unchanged (documented there).
const passedThrough = [
  "findFeed",
  "listFeeds",
  "get",
  "claimDue",
  "markFailed",
  "listSubscriptions",
  "signupDays",
  "eventDays",
  "countByStatus",
  "history",
  "outboxSummary",
  "failingMails"
] as const

// The store the use cases see for subscriptions, their tokens and the mail outbox, made once (`layer`) over
// any database's SubscriptionStorage port. Every method is one transaction in which the rules
// (decideSubscribe, transition, isUsable) are applied here, in core, to rows the port locked, so that concurrent
// requests and several processes sharing one database see the rules hold.
export interface SubscriptionStoreShape extends Pick<SubscriptionStorageShape, (typeof passedThrough)[number]> {
  // Creates or replaces a feed; `created` tells which.
  readonly putFeed: (
    name: FeedName,
    title: string,
    now: DateTime.Utc
  ) => Effect.Effect<{ readonly feed: Feed; readonly created: boolean }>
  // Removes a feed and ends its subscriptions (they become unsubscribed); false when there was none.
  readonly deleteFeed: (name: FeedName, now: DateTime.Utc) => Effect.Effect<boolean>
  readonly subscribe: (request: {
    readonly name: SubscriberName
    readonly email: Email
    readonly feed: FeedName
    readonly now: DateTime.Utc
  }) => Effect.Effect<{ readonly subscription: Subscription; readonly queued: boolean }>
  readonly findByToken: (
    hash: TokenHash,
    purpose: TokenPurpose,
    now: DateTime.Utc
  ) => Effect.Effect<Option.Option<Subscription>>
  readonly redeemToken: (
    hash: TokenHash,
    purpose: TokenPurpose,
    event: Event,
    now: DateTime.Utc
  ) => Effect.Effect<Subscription, InvalidToken>
  // Deletes up to `limit` subscriptions still pending whose last signup was before `before`, with their tokens
  // and outbox rows; answers how many it deleted.
  readonly purgePending: (before: DateTime.Utc, limit: number) => Effect.Effect<number>
  // Stores the hashes of the tokens each confirmation mail of a claimed batch will carry, for the entries whose
  // subscription still awaits one, in one transaction; the answers (none: no mail to send) are in the batch's
  // order.
  readonly prepareConfirmations: (
    batch: ReadonlyArray<{ readonly entry: OutboxEntry; readonly tokens: IssuedTokens }>,
    now: DateTime.Utc
  ) => Effect.Effect<ReadonlyArray<Option.Option<Subscription>>>
  // Marks rows sent, in one transaction; a row sent already keeps its time.
  readonly markSentAll: (ids: ReadonlyArray<number>, now: DateTime.Utc) => Effect.Effect<void>
  // The feed's subscription of this address, compared as a signup compares it.
  readonly findByEmail: (email: Email, feed: FeedName) => Effect.Effect<Option.Option<Subscription>>
}

export class SubscriptionStore extends Context.Tag("SubscriptionStore")<SubscriptionStore, SubscriptionStoreShape>() {}

const fresh = decideSubscribe(undefined, 0)
const millisOrNull = (t: DateTime.Utc | undefined) => (t === undefined ? null : DateTime.toEpochMillis(t))
const usable = (token: StoredToken, now: DateTime.Utc) =>
  isUsable(
    { usedAt: millisOrNull(token.usedAt), expiresAt: millisOrNull(token.expiresAt) },
    DateTime.toEpochMillis(now)
  )

// A signup's row as a new address gets it.
const newSubscription = (
  { email, feed, name, now }: Parameters<SubscriptionStoreShape["subscribe"]>[0]
): NewSubscription => ({ email, emailKey: normalizeEmail(email), name, feed, status: fresh.status, now })

// The subscriptions found that still await their confirmation mail, by id.
const pendingOf = (found: ReadonlyArray<Subscription>) =>
  new Map(found.filter((s) => s.status === AwaitsConfirmation).map((s) => [s.id, s] as const))

// The combined operations as core runs them on a database that has none: the same operations, in one
// transaction.
const composed = (storage: SubscriptionStorageShape): Required<CombinedSubscriptionOperations> => ({
  insertSubscriptionAndQueue: (subscription, day) =>
    storage.transact((tx) =>
      Effect.tap(
        tx.insertSubscription(subscription),
        (inserted) =>
          Option.isNone(inserted) ? Effect.void : Effect.zipRight(
            tx.queueConfirmation(inserted.value.id, subscription.now),
            tx.countSignup({ feed: inserted.value.feed, day, id: inserted.value.id })
          )
      )
    ),
  insertPendingTokens: (mails, now) =>
    storage.transact((tx) =>
      Effect.tap(tx.subscriptions(mails.map((m) => m.subscriptionId)), (found) => {
        const pending = pendingOf(found)
        const due = mails.filter((m) => pending.has(m.subscriptionId))
        return due.length === 0 ? Effect.void : tx.insertTokens(due, now)
      })
    )
})

export const make = Effect.gen(function*() {
  const storage = yield* SubscriptionStorage
  const { insertPendingTokens, insertSubscriptionAndQueue } = { ...composed(storage), ...storage.combined }
  const views = yield* EventViews

  // Insert first: the unique (email key, feed) pair decides whether the address is new. A subscription that
  // exists is then locked and decided on by the rules, with the mails it got within the throttle window.
  const subscribeIn = (
    tx: SubscriptionTx,
    request: Parameters<SubscriptionStoreShape["subscribe"]>[0]
  ): Effect.Effect<{ readonly subscription: Subscription; readonly queued: boolean }> =>
    Effect.gen(function*() {
      const { feed, name, now } = request
      const emailKey = normalizeEmail(request.email)
      const inserted = yield* tx.insertSubscription(newSubscription(request))
      let subscription: Subscription
      let decision = fresh
      if (Option.isSome(inserted)) {
        subscription = inserted.value
      } else {
        const existing = yield* tx.lockSubscription(emailKey, feed)
        // Deleted in between: the address is new again.
        if (Option.isNone(existing)) return yield* subscribeIn(tx, request)
        const mails = yield* tx.mailsSince(existing.value.id, DateTime.subtractDuration(now, MailThrottle.window))
        decision = decideSubscribe(existing.value.status, mails)
        subscription = yield* tx.updateSubscription(
          existing.value.id,
          decision.status,
          now,
          decision.updateName ? name : undefined
        )
      }
      if (decision.queueConfirmation) yield* tx.queueConfirmation(subscription.id, now)
      if (decision.signup) yield* tx.countSignup({ feed, day: dayOf(now), id: subscription.id })
      return { subscription, queued: decision.queueConfirmation }
    })

  const redeemToken: SubscriptionStoreShape["redeemToken"] = (hash, purpose, event, now) =>
    Effect.flatMap(timeOrderedId("evt_"), (eventId) =>
      storage.transact((tx) =>
        Effect.gen(function*() {
          const token = yield* tx.lockToken(hash, purpose)
          if (Option.isNone(token) || !usable(token.value, now)) return undefined
          const id = token.value.subscriptionId
          const current = Option.getOrThrow(yield* tx.get(id))
          const next = transition(current.status, event)
          if (next === undefined) return undefined
          // Confirmation links are single use; unsubscribe links stay valid so a second click still says "done".
          if (purpose === "confirm") yield* tx.useToken(hash, now)
          // Leaving voids every confirmation link still out, so an old mail cannot revive a later signup.
          if (next === "unsubscribed") yield* tx.voidConfirmations(id, now)
          const subscription = yield* tx.updateSubscription(id, next, now, undefined)
          // The one place a subscription's event is made: in the transaction that changed it.
          if (next !== current.status) {
            const type = next === "active" ? "subscription.confirmed" : "subscription.unsubscribed"
            yield* emit(
              tx,
              newEvent(eventId as EventId, type, AdminOwner, views.subscription(subscription), now, subjectOf(id))
            )
          }
          return subscription
        })
      )).pipe(
        Effect.flatMap((subscription) => subscription === undefined ? new InvalidToken() : Effect.succeed(subscription))
      )

  return SubscriptionStore.of({
    ...Struct.pick(storage, ...passedThrough),
    putFeed: (name, title, now) =>
      storage.transact((tx) =>
        Effect.gen(function*() {
          const existing = yield* tx.lockFeed(name)
          const feed = Option.isNone(existing)
            ? yield* tx.insertFeed(name, title, now)
            : yield* tx.replaceFeed(name, title, now, existing.value.deleted)
          return { feed, created: Option.isNone(existing) || existing.value.deleted }
        })
      ),
    // A deleted feed's subscriptions end, and its confirmation links with them.
    deleteFeed: (name, now) =>
      storage.transact((tx) =>
        Effect.gen(function*() {
          if (!(yield* tx.deleteFeed(name, now))) return false
          yield* tx.setFeedStatus(name, "unsubscribed", now)
          yield* tx.voidFeedConfirmations(name, now)
          return true
        })
      ),
    // A new address is one combined write (its mail and its count included); one that exists is decided under
    // its lock.
    subscribe: (request) =>
      Effect.gen(function*() {
        if (fresh.queueConfirmation && fresh.signup) {
          const day: Day = dayOf(request.now)
          const inserted = yield* insertSubscriptionAndQueue(newSubscription(request), day)
          if (Option.isSome(inserted)) return { subscription: inserted.value, queued: true }
        }
        return yield* storage.transact((tx) => subscribeIn(tx, request))
      }),
    findByToken: (hash, purpose, now) =>
      Effect.flatMap(
        storage.token(hash, purpose),
        (token) =>
          Option.isSome(token) && usable(token.value, now)
            ? storage.get(token.value.subscriptionId)
            : Effect.succeedNone
      ),
    redeemToken,
    // Signups never confirmed: tokens and outbox rows go with them.
    purgePending: (before, limit) => storage.purge("pending", before, limit),
    // Tokens are stored only for the subscriptions still pending: a confirmed or unsubscribed one gets no mail.
    prepareConfirmations: (batch, now) =>
      Effect.map(
        batch.length === 0 ? Effect.succeed([]) : insertPendingTokens(
          batch.map(({ entry, tokens }) => ({ subscriptionId: entry.subscriptionId, tokens })),
          now
        ),
        (found) => {
          const pending = pendingOf(found)
          return batch.map(({ entry }) => Option.fromNullable(pending.get(entry.subscriptionId)))
        }
      ),
    markSentAll: (ids, now) => ids.length === 0 ? Effect.void : storage.markSentAll(ids, now),
    findByEmail: (email, feed) => storage.subscriptionByEmailKey(normalizeEmail(email), feed)
  })
})

// The store over the database's port: what every app and test wires above its SubscriptionStorage.
export const layer = Layer.effect(SubscriptionStore, make)
export { SubscriptionStorage } from "./SubscriptionStorage.ts"
