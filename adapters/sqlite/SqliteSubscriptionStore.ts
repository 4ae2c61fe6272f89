import { DateTime, Effect, Layer, Option } from "effect"
import { normalizeEmail } from "../../core/Email.ts"
import { InvalidToken } from "../../core/Errors.ts"
import { EventViews } from "../../core/EventViews.ts"
import {
  decideSubscribe,
  MailThrottle,
  type Subscription,
  SubscriptionId,
  type SubscriptionStatus,
  transition
} from "../../core/Subscription.ts"
import { type IssuedTokens, type OutboxEntry, SubscriptionStore } from "../../core/SubscriptionStore.ts"
import { isUsable } from "../../core/Token.ts"
import { AdminOwner } from "../../core/Webhooks.ts"
import { newEvent, writeEvent } from "../sql/EventRows.ts"
import { FeedColumns, feedOf, SubscriptionColumns, subscriptionOf } from "../sql/SubscriptionRows.ts"
import { type DirectSql, SqliteDirect } from "./SqliteClient.ts"

// The subscription store on SQLite: every method one synchronous function over prepared statements
// (SqliteDirect), in the client's group commit, instead of statement by statement through @effect/sql, which
// cost several times the SQLite work. The write lock (BEGIN IMMEDIATE) is held for the whole transaction, so a
// transaction that reads then writes cannot race another one, in this process or another on the same file: no
// FOR UPDATE is needed, and the unique constraints still decide between concurrent first requests.

const millis = DateTime.toEpochMillis
const fresh = decideSubscribe(undefined, 0)

// Statement texts are made once: each is also the key of its prepared statement, hashed on every lookup.
const feedByName = `SELECT ${FeedColumns} FROM feeds WHERE name = ? AND deleted_at IS NULL`
const liveFeeds = `SELECT ${FeedColumns} FROM feeds WHERE deleted_at IS NULL ORDER BY name`
const feedsChanged = `SELECT max(CASE WHEN deleted_at IS NULL THEN updated_at ELSE deleted_at END) AS at FROM feeds`
const feedState = `SELECT deleted_at FROM feeds WHERE name = ?`
const insertFeed = `INSERT INTO feeds (name, title, created_at, updated_at) VALUES (?, ?, ?, ?)
  RETURNING ${FeedColumns}`
const replaceFeed = `UPDATE feeds SET title = ?, updated_at = ?, deleted_at = NULL,
  created_at = CASE WHEN deleted_at IS NULL THEN created_at ELSE ? END
  WHERE name = ? RETURNING ${FeedColumns}`
const deleteFeedRow = `UPDATE feeds SET deleted_at = ? WHERE name = ? AND deleted_at IS NULL`
const endFeedSubscriptions = `UPDATE subscriptions SET status = 'unsubscribed', updated_at = ?
  WHERE feed = ? AND status <> 'unsubscribed'`
const voidFeedConfirmations = `UPDATE subscription_tokens SET used_at = ?
  WHERE purpose = 'confirm' AND used_at IS NULL AND subscription_id IN (SELECT id FROM subscriptions WHERE feed = ?)`

const insertSubscription = `INSERT INTO subscriptions (email, email_key, name, feed, status, created_at, updated_at)
  VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (email_key, feed) DO NOTHING RETURNING ${SubscriptionColumns}`
const existingSubscription = `SELECT id, status FROM subscriptions WHERE email_key = ? AND feed = ?`
const mailsSince = `SELECT count(*) AS n FROM mail_outbox WHERE subscription_id = ? AND created_at > ?`
const resubscribe = `UPDATE subscriptions SET status = ?, updated_at = ?, name = CASE WHEN ? = 1 THEN ? ELSE name END
  WHERE id = ? RETURNING ${SubscriptionColumns}`
const queueConfirmation = `INSERT INTO mail_outbox (kind, subscription_id, created_at, next_attempt_at)
  VALUES ('confirmation', ?, ?, ?)`
const subscriptionById = `SELECT ${SubscriptionColumns} FROM subscriptions WHERE id = ?`

const tokenByHash =
  `SELECT subscription_id, expires_at, used_at FROM subscription_tokens WHERE hash = ? AND purpose = ?`
const statusById = `SELECT status FROM subscriptions WHERE id = ?`
const useToken = `UPDATE subscription_tokens SET used_at = ? WHERE hash = ?`
const voidConfirmations = `UPDATE subscription_tokens SET used_at = ?
  WHERE subscription_id = ? AND purpose = 'confirm' AND used_at IS NULL`
const setStatus = `UPDATE subscriptions SET status = ?, updated_at = ? WHERE id = ? RETURNING ${SubscriptionColumns}`
const insertTokens = `INSERT INTO subscription_tokens (hash, subscription_id, purpose, created_at, expires_at)
  VALUES (?, ?, 'confirm', ?, ?), (?, ?, 'unsubscribe', ?, NULL)`

const dueMails = `SELECT id, subscription_id, attempts FROM mail_outbox
  WHERE sent_at IS NULL AND next_attempt_at <= ? ORDER BY next_attempt_at LIMIT ?`
const lease = `UPDATE mail_outbox SET next_attempt_at = ? WHERE id = ?`
const sent = `UPDATE mail_outbox SET sent_at = ?, next_attempt_at = NULL, last_error = NULL WHERE id = ?`
const failed = `UPDATE mail_outbox SET attempts = attempts + 1, next_attempt_at = ?, last_error = ? WHERE id = ?`

// Signups never confirmed, oldest first; their tokens and outbox rows go with them (ON DELETE CASCADE).
const purgePending = `DELETE FROM subscriptions WHERE id IN (
  SELECT id FROM subscriptions WHERE status = 'pending' AND updated_at < ? ORDER BY updated_at LIMIT ?)`

// One statement text per combination of filters (four), each kept prepared.
const listQuery = (feed: boolean, status: boolean) =>
  `SELECT ${SubscriptionColumns} FROM subscriptions WHERE id > ?${feed ? " AND feed = ?" : ""}${
    status ? " AND status = ?" : ""
  } ORDER BY id LIMIT ?`

interface TokenRow {
  readonly subscription_id: number
  readonly expires_at: number | null
  readonly used_at: number | null
}

const subscriptionRow = (db: DirectSql, id: number): Subscription | undefined => {
  const row = db.get(subscriptionById, [id])
  return row === undefined ? undefined : subscriptionOf(row)
}

const usableToken = (db: DirectSql, hash: string, purpose: string, now: number): TokenRow | undefined => {
  const row = db.get<TokenRow>(tokenByHash, [hash, purpose])
  return row !== undefined &&
      isUsable({
        usedAt: row.used_at === null ? null : Number(row.used_at),
        expiresAt: row.expires_at === null ? null : Number(row.expires_at)
      }, now)
    ? row
    : undefined
}

// Stores the token hashes of a confirmation mail, if its subscription still awaits one.
const prepare = (db: DirectSql, entry: OutboxEntry, tokens: IssuedTokens, at: number): Option.Option<Subscription> => {
  const subscription = subscriptionRow(db, entry.subscriptionId)
  if (subscription === undefined || subscription.status !== "pending") return Option.none()
  db.run(insertTokens, [
    tokens.confirm.hash,
    entry.subscriptionId,
    at,
    millis(tokens.confirm.expiresAt),
    tokens.unsubscribe.hash,
    entry.subscriptionId,
    at
  ])
  return Option.some(subscription)
}

export const layer = Layer.effect(
  SubscriptionStore,
  Effect.gen(function*() {
    const direct = yield* SqliteDirect
    const views = yield* EventViews
    // Storage faults are not something a caller can act on: they become defects here and a 500 at the edge.
    const read = <A>(work: (db: DirectSql) => A) => Effect.orDie(direct.read(work))
    const transaction = <A>(work: (db: DirectSql) => A) => Effect.orDie(direct.transaction(work))

    return SubscriptionStore.of({
      findFeed: (name) => read((db) => Option.map(Option.fromNullable(db.get(feedByName, [name])), feedOf)),
      listFeeds: read((db) => ({
        feeds: db.all(liveFeeds, []).map(feedOf),
        lastModified: DateTime.unsafeMake(Number(db.get<{ at: number | null }>(feedsChanged, [])?.at ?? 0))
      })),
      putFeed: (name, title, now) =>
        transaction((db) => {
          const at = millis(now)
          const existing = db.get<{ deleted_at: number | null }>(feedState, [name])
          const row = existing === undefined
            ? db.get(insertFeed, [name, title, at, at])
            : db.get(replaceFeed, [title, at, at, name])
          return { feed: feedOf(row), created: existing === undefined || existing.deleted_at !== null }
        }),
      deleteFeed: (name, now) =>
        transaction((db) => {
          const at = millis(now)
          if (db.run(deleteFeedRow, [at, name]) === 0) return false
          db.run(endFeedSubscriptions, [at, name])
          db.run(voidFeedConfirmations, [at, name])
          return true
        }),
      // Insert first: the unique (email_key, feed) constraint decides whether the address is new. A subscription
      // that exists is then decided on by the rules, with the mails it got within the throttle window.
      subscribe: ({ email, feed, name, now }) =>
        transaction((db) => {
          const at = millis(now)
          const key = normalizeEmail(email)
          const inserted = db.get(insertSubscription, [email, key, name, feed, fresh.status, at, at])
          let subscription: Subscription
          let decision = fresh
          if (inserted !== undefined) {
            subscription = subscriptionOf(inserted)
          } else {
            const existing = db.get<{ id: number; status: SubscriptionStatus }>(existingSubscription, [key, feed])!
            const since = millis(DateTime.subtractDuration(now, MailThrottle.window))
            const mails = db.get<{ n: number }>(mailsSince, [existing.id, since])!.n
            decision = decideSubscribe(existing.status, Number(mails))
            subscription = subscriptionOf(
              db.get(resubscribe, [decision.status, at, decision.updateName ? 1 : 0, name, existing.id])
            )
          }
          if (decision.queueConfirmation) db.run(queueConfirmation, [subscription.id, at, at])
          return { subscription, queued: decision.queueConfirmation }
        }),
      get: (id) => read((db) => Option.fromNullable(subscriptionRow(db, id))),
      findByToken: (hash, purpose, now) =>
        read((db) => {
          const token = usableToken(db, hash, purpose, millis(now))
          return Option.fromNullable(token === undefined ? undefined : subscriptionRow(db, token.subscription_id))
        }),
      redeemToken: (hash, purpose, event, now) =>
        Effect.flatMap(
          transaction((db): Subscription | undefined => {
            const at = millis(now)
            const token = usableToken(db, hash, purpose, at)
            if (token === undefined) return undefined
            const current = db.get<{ status: SubscriptionStatus }>(statusById, [token.subscription_id])!
            const next = transition(current.status, event)
            if (next === undefined) return undefined
            // Confirmation links are single use; unsubscribe links stay valid so a second click still says "done".
            if (purpose === "confirm") db.run(useToken, [at, hash])
            // Leaving voids every confirmation link still out, so an old mail cannot revive a later signup.
            if (next === "unsubscribed") db.run(voidConfirmations, [at, token.subscription_id])
            const subscription = subscriptionOf(db.get(setStatus, [next, at, token.subscription_id]))
            // The one place this store records a subscription's event: in the transaction that changed it.
            if (next !== current.status) {
              const type = next === "active" ? "subscription.confirmed" : "subscription.unsubscribed"
              writeEvent(db, newEvent(type, AdminOwner, views.subscription(subscription), at))
            }
            return subscription
          }),
          (subscription) => subscription === undefined ? new InvalidToken() : Effect.succeed(subscription)
        ),
      // The rows taken are leased until leaseUntil: no other claim, here or in another process, sees them due
      // before then.
      claimDue: (now, leaseUntil, limit) =>
        transaction((db) => {
          const due = db.all<{ id: number; subscription_id: number; attempts: number }>(dueMails, [millis(now), limit])
          const until = millis(leaseUntil)
          return due.map((row): OutboxEntry => {
            db.run(lease, [until, row.id])
            return {
              id: Number(row.id),
              subscriptionId: SubscriptionId.make(Number(row.subscription_id), { disableValidation: true }),
              attempts: Number(row.attempts)
            }
          })
        }),
      markFailed: (id, nextAttemptAt, reason) =>
        transaction((db) =>
          void db.run(failed, [nextAttemptAt === undefined ? null : millis(nextAttemptAt), reason.slice(0, 500), id])
        ),
      listSubscriptions: ({ feed, limit, startingAfter, status }) =>
        read((db) =>
          db.all(listQuery(feed !== undefined, status !== undefined), [
            startingAfter ?? 0,
            ...(feed === undefined ? [] : [feed]),
            ...(status === undefined ? [] : [status]),
            limit
          ]).map(subscriptionOf)
        ),
      purgePending: (before, limit) => transaction((db) => db.run(purgePending, [millis(before), limit])),
      prepareConfirmations: (batch, now) =>
        batch.length === 0
          ? Effect.succeed([])
          : transaction((db) => batch.map(({ entry, tokens }) => prepare(db, entry, tokens, millis(now)))),
      markSentAll: (ids, now) =>
        ids.length === 0 ? Effect.void : transaction((db) => {
          const at = millis(now)
          for (const id of ids) db.run(sent, [at, id])
        })
    })
  })
)
