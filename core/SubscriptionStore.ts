import { Context, type DateTime, type Effect, type Option } from "effect"
import type { Email } from "./Email.ts"
import type { InvalidToken } from "./Errors.ts"
import type { Feed, FeedName } from "./Feed.ts"
import type { Event, SubscriberName, Subscription, SubscriptionId, SubscriptionStatus } from "./Subscription.ts"
import type { TokenHash, TokenPurpose } from "./Token.ts"

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

// Storage for subscriptions, their tokens and the mail outbox. Every method is one transaction: the adapter
// applies the core's rules (decideSubscribe, transition, isUsable) inside it, so that concurrent requests and
// several processes sharing one database see the rules hold.
export interface SubscriptionStoreShape {
  readonly findFeed: (name: FeedName) => Effect.Effect<Option.Option<Feed>>
  readonly listFeeds: Effect.Effect<{ readonly feeds: ReadonlyArray<Feed>; readonly lastModified: DateTime.Utc }>
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
  readonly get: (id: SubscriptionId) => Effect.Effect<Option.Option<Subscription>>
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
  readonly claimDue: (
    now: DateTime.Utc,
    leaseUntil: DateTime.Utc,
    limit: number
  ) => Effect.Effect<ReadonlyArray<OutboxEntry>>
  readonly markFailed: (id: number, nextAttemptAt: DateTime.Utc | undefined, reason: string) => Effect.Effect<void>
  readonly listSubscriptions: (query: SubscriptionQuery) => Effect.Effect<ReadonlyArray<Subscription>>
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
  // Marks rows sent, in one transaction.
  readonly markSentAll: (ids: ReadonlyArray<number>, now: DateTime.Utc) => Effect.Effect<void>
}

export class SubscriptionStore extends Context.Tag("SubscriptionStore")<SubscriptionStore, SubscriptionStoreShape>() {}
