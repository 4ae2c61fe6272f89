import { Context, type DateTime, type Effect, type Option } from "effect"
import type { Day } from "../shared/Day.ts"
import type { Email } from "../shared/Email.ts"
import type { EventTx } from "../webhooks/Events.ts"
import type { Owner } from "../webhooks/Webhooks.ts"
import type { Feed, FeedName } from "./Feed.ts"
import type { SubscriberName, Subscription, SubscriptionId, SubscriptionStatus } from "./Subscription.ts"
import type { IssuedTokens, OutboxEntry, SubscriptionQuery } from "./SubscriptionStore.ts"
import type { TokenHash, TokenPurpose } from "./Token.ts"

// The port a database implements for feeds, subscriptions, their tokens and the mail outbox: statements and
// row mapping only. Every rule (a signup is new, resent or throttled; a token is usable; which status an event
// leads to; which events a change emits) is decided in core/subscriptions/SubscriptionStore.ts, once, for every database.
// Where a decision needs the rows as they are, core runs it inside `transact`: one database transaction in
// which the `lock*` reads hold their rows until the end (BEGIN IMMEDIATE on SQLite, FOR UPDATE on
// PostgreSQL), and whatever core writes commits with it, durably, or not at all. Outside `transact`, each
// operation is a transaction of its own. The unique (email key, feed) pair is the database's: insertSubscription
// inserts unless it exists (ON CONFLICT DO NOTHING), so that concurrent first signups cannot both win.
export interface NewSubscription {
  readonly email: Email
  // The address as core compares it (core/shared/Email.ts's normalizeEmail): unique per feed.
  readonly emailKey: string
  readonly name: SubscriberName
  readonly feed: FeedName
  readonly status: SubscriptionStatus
  readonly now: DateTime.Utc
}

export interface StoredToken {
  readonly subscriptionId: SubscriptionId
  readonly expiresAt: DateTime.Utc | undefined
  readonly usedAt: DateTime.Utc | undefined
}

// What the list owner's console reads (docs/console.md): how many subscriptions a feed has in each status, a
// subscription's mails (outbox rows) and confirmation links (tokens), and the outbox's backlog.
export type StatusCounts = { readonly [S in SubscriptionStatus]: number }

export interface SubscriberMail {
  readonly id: number
  readonly queuedAt: DateTime.Utc
  readonly attempts: number
  readonly nextAttemptAt: DateTime.Utc | undefined
  readonly sentAt: DateTime.Utc | undefined
  readonly lastError: string | undefined
}

export interface ConfirmationLink {
  readonly createdAt: DateTime.Utc
  readonly expiresAt: DateTime.Utc | undefined
  // When it was clicked, or voided (the address left, or its feed was deleted): the row keeps one time for both.
  readonly usedAt: DateTime.Utc | undefined
}

export interface SubscriberHistory {
  // The latest 100, newest first.
  readonly mails: ReadonlyArray<SubscriberMail>
  readonly links: ReadonlyArray<ConfirmationLink>
}

export interface OutboxSummary {
  // Unsent and due at some time (a worker will try them).
  readonly queued: number
  readonly sentSince: number
  // Unsent after at least one failed attempt: still retried, or given up.
  readonly failing: number
}

export interface FailingMail extends SubscriberMail {
  readonly subscriptionId: SubscriptionId
  readonly email: Email
  readonly feed: FeedName
}

export interface SubscriptionTx extends EventTx {
  // Inserts it (created and updated at `now`) unless the feed has the key; the new subscription if it did.
  readonly insertSubscription: (subscription: NewSubscription) => Effect.Effect<Option.Option<Subscription>>
  readonly lockSubscription: (
    emailKey: string,
    feed: FeedName
  ) => Effect.Effect<Option.Option<{ readonly id: SubscriptionId; readonly status: SubscriptionStatus }>>
  // How many confirmation mails were queued for it after `since`.
  readonly mailsSince: (id: SubscriptionId, since: DateTime.Utc) => Effect.Effect<number>
  // Writes status and updated time, and the name when one is given.
  readonly updateSubscription: (
    id: SubscriptionId,
    status: SubscriptionStatus,
    now: DateTime.Utc,
    name: SubscriberName | undefined
  ) => Effect.Effect<Subscription>
  // Queues a confirmation mail, due at `now`.
  readonly queueConfirmation: (id: SubscriptionId, now: DateTime.Utc) => Effect.Effect<void>
  // Adds one to the feed's signups of the day (kept apart from the subscriptions, which the pending purge
  // deletes). The subscription's id lets a server database spread concurrent signups over a few rows.
  readonly countSignup: (signup: Signup) => Effect.Effect<void>
  readonly lockToken: (hash: TokenHash, purpose: TokenPurpose) => Effect.Effect<Option.Option<StoredToken>>
  readonly useToken: (hash: TokenHash, now: DateTime.Utc) => Effect.Effect<void>
  // Marks used, at `now`, every unused confirm token of the subscription.
  readonly voidConfirmations: (id: SubscriptionId, now: DateTime.Utc) => Effect.Effect<void>
  readonly get: (id: SubscriptionId) => Effect.Effect<Option.Option<Subscription>>
  // The feed row, deleted or not, locked.
  readonly lockFeed: (name: FeedName) => Effect.Effect<Option.Option<{ readonly deleted: boolean }>>
  readonly insertFeed: (name: FeedName, title: string, now: DateTime.Utc) => Effect.Effect<Feed>
  // Writes title and updated time, undeletes it, and when `recreated` also sets its created time to `now`.
  readonly replaceFeed: (name: FeedName, title: string, now: DateTime.Utc, recreated: boolean) => Effect.Effect<Feed>
  // Marks a live feed deleted at `now`; false when there was none.
  readonly deleteFeed: (name: FeedName, now: DateTime.Utc) => Effect.Effect<boolean>
  // Sets `status` (and the updated time) on every subscription of the feed that does not have it.
  readonly setFeedStatus: (feed: FeedName, status: SubscriptionStatus, now: DateTime.Utc) => Effect.Effect<void>
  // Marks used, at `now`, every unused confirm token of the feed's subscriptions.
  readonly voidFeedConfirmations: (feed: FeedName, now: DateTime.Utc) => Effect.Effect<void>
  // The subscriptions with these ids that exist, in any order.
  readonly subscriptions: (ids: ReadonlyArray<SubscriptionId>) => Effect.Effect<ReadonlyArray<Subscription>>
  // Stores both token hashes of each mail, created at `now` (the unsubscribe one never expires).
  readonly insertTokens: (
    mails: ReadonlyArray<{ readonly subscriptionId: SubscriptionId; readonly tokens: IssuedTokens }>,
    now: DateTime.Utc
  ) => Effect.Effect<void>
}

// A signup as core counts it (core/subscriptions/Subscription.ts's decideSubscribe): its feed, its UTC day, and
// the subscription it made pending.
export interface Signup {
  readonly feed: FeedName
  readonly day: Day
  readonly id: SubscriptionId
}

// Combined operations (docs/decisions/0038-combined-operations.md): what core would otherwise run as several
// operations in `transact`, in one statement, where a transaction costs a round trip a statement. Without them
// core runs the operations themselves.
export interface CombinedSubscriptionOperations {
  // insertSubscription, then, if it inserted, queueConfirmation (due at the subscription's `now`) and
  // countSignup (of its feed, on `day`).
  readonly insertSubscriptionAndQueue: (
    subscription: NewSubscription,
    day: Day
  ) => Effect.Effect<Option.Option<Subscription>>
  // subscriptions(the mails' ids), then insertTokens for the mails whose subscription is pending; answers the
  // subscriptions found, as `subscriptions` does.
  readonly insertPendingTokens?: (
    mails: ReadonlyArray<{ readonly subscriptionId: SubscriptionId; readonly tokens: IssuedTokens }>,
    now: DateTime.Utc
  ) => Effect.Effect<ReadonlyArray<Subscription>>
}

// How many rows of one kind fall on one day (whole UTC days since 1970-01-01, as DayTotal's `day`).
export interface DayCount<Kind extends string = string> {
  readonly day: number
  readonly kind: Kind
  readonly count: number
}

export interface SubscriptionStorageShape extends SubscriptionTx {
  readonly combined?: CombinedSubscriptionOperations
  // Runs `work` in one transaction. `work` only sequences the operations of `tx` (on SQLite it runs
  // synchronously inside the transaction); a defect rolls everything back.
  readonly transact: <A>(work: (tx: SubscriptionTx) => Effect.Effect<A>) => Effect.Effect<A>
  readonly findFeed: (name: FeedName) => Effect.Effect<Option.Option<Feed>>
  // Live feeds by name, and the last time any feed changed (created, updated or deleted; 0 for none).
  readonly listFeeds: Effect.Effect<{ readonly feeds: ReadonlyArray<Feed>; readonly lastModified: DateTime.Utc }>
  readonly token: (hash: TokenHash, purpose: TokenPurpose) => Effect.Effect<Option.Option<StoredToken>>
  // Leases up to `limit` unsent outbox rows due at `now`, oldest due first, until `leaseUntil`. Concurrent
  // callers never get the same row while its lease runs (SKIP LOCKED on PostgreSQL).
  readonly claimDue: (
    now: DateTime.Utc,
    leaseUntil: DateTime.Utc,
    limit: number
  ) => Effect.Effect<ReadonlyArray<OutboxEntry>>
  // Counts an attempt, keeps the reason (its first 500 characters), and makes the row due at `nextAttemptAt`
  // (never again without one).
  readonly markFailed: (id: number, nextAttemptAt: DateTime.Utc | undefined, reason: string) => Effect.Effect<void>
  // A row sent already keeps its time.
  readonly markSentAll: (ids: ReadonlyArray<number>, now: DateTime.Utc) => Effect.Effect<void>
  readonly listSubscriptions: (query: SubscriptionQuery) => Effect.Effect<ReadonlyArray<Subscription>>
  // The signups counted (countSignup) on the days from `from` up to `before` (excluded), of every feed, per day
  // (`kind` is "signup"; days without any are absent): one read of a range of the counters' primary key.
  readonly signupDays: (from: Day, before: Day) => Effect.Effect<ReadonlyArray<DayCount<"signup">>>
  // The owner's events made at or after `from` and before `before`, counted per day and type (`kind`): one read
  // of the owner's range of the (owner, created_at, id) index.
  readonly eventDays: (
    owner: Owner,
    from: DateTime.Utc,
    before: DateTime.Utc
  ) => Effect.Effect<ReadonlyArray<DayCount>>
  readonly countByStatus: (feed: FeedName) => Effect.Effect<StatusCounts>
  readonly subscriptionByEmailKey: (emailKey: string, feed: FeedName) => Effect.Effect<Option.Option<Subscription>>
  readonly history: (id: SubscriptionId) => Effect.Effect<SubscriberHistory>
  // The counts of the outbox's rows, those sent at or after `since` among them.
  readonly outboxSummary: (since: DateTime.Utc) => Effect.Effect<OutboxSummary>
  // Up to `limit` failing rows (as OutboxSummary counts them), most attempts first, then newest first.
  readonly failingMails: (limit: number) => Effect.Effect<ReadonlyArray<FailingMail>>
  // Deletes up to `limit` subscriptions of `status` last updated before `before`, oldest first, with their
  // tokens and outbox rows; answers how many (rows another purge holds are skipped on PostgreSQL).
  readonly purge: (status: SubscriptionStatus, before: DateTime.Utc, limit: number) => Effect.Effect<number>
}

export class SubscriptionStorage extends Context.Tag("SubscriptionStorage")<
  SubscriptionStorage,
  SubscriptionStorageShape
>() {}
