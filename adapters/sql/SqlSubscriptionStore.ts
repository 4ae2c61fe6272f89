import { SqlClient } from "@effect/sql/SqlClient"
import { DateTime, Effect, Layer, Option } from "effect"
import { normalizeEmail } from "../../core/Email.ts"
import { InvalidToken } from "../../core/Errors.ts"
import { Feed, FeedName } from "../../core/Feed.ts"
import {
  decideSubscribe,
  MailThrottle,
  Subscription,
  SubscriptionId,
  SubscriptionStatus,
  transition
} from "../../core/Subscription.ts"
import { SubscriptionStore, type SubscriptionStoreShape } from "../../core/SubscriptionStore.ts"
import { isUsable } from "../../core/Token.ts"
import { Dialect, millisOf } from "./Dialect.ts"

// A time column as read back, as a DateTime.
const utcOf = (value: unknown) => DateTime.unsafeMake(millisOf(value))

export const SubscriptionColumns = "id, name, email, feed, status, created_at, updated_at"
// A row this store wrote, through the constraints of its table: mapped, not validated again.
export const subscriptionOf = (row: any) =>
  new Subscription({
    id: SubscriptionId.make(Number(row.id), { disableValidation: true }),
    name: row.name,
    email: row.email,
    feed: row.feed,
    status: row.status,
    createdAt: utcOf(row.created_at),
    updatedAt: utcOf(row.updated_at)
  }, { disableValidation: true })

export const FeedColumns = "name, title, created_at, updated_at"
export const feedOf = (row: any) =>
  new Feed({ name: row.name, title: row.title, createdAt: utcOf(row.created_at), updatedAt: utcOf(row.updated_at) }, {
    disableValidation: true
  })

const millis = DateTime.toEpochMillis

// Storage faults are not something a caller can act on: they become defects here and a 500 at the edge.
const orDie = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.orDie(effect)

export const make = Effect.gen(function*() {
  const sql = yield* SqlClient
  const { forUpdate, forUpdateSkipLocked, time } = yield* Dialect
  // A time as a query parameter.
  const ms = (t: DateTime.Utc) => time(millis(t))
  const subscriptionColumns = sql.literal(SubscriptionColumns)

  const findFeed = (name: FeedName) =>
    sql`SELECT ${sql.literal(FeedColumns)} FROM feeds WHERE name = ${name} AND deleted_at IS NULL`.pipe(
      Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), feedOf)),
      orDie
    )

  const listFeeds: SubscriptionStoreShape["listFeeds"] = Effect.gen(function*() {
    const rows = yield* sql`SELECT ${sql.literal(FeedColumns)} FROM feeds WHERE deleted_at IS NULL ORDER BY name`
    const changed = yield* sql<{ at: unknown }>`
      SELECT max(CASE WHEN deleted_at IS NULL THEN updated_at ELSE deleted_at END) AS at FROM feeds`
    return { feeds: rows.map(feedOf), lastModified: DateTime.unsafeMake(millisOf(changed[0]?.at ?? 0)) }
  }).pipe(orDie)

  const putFeed: SubscriptionStoreShape["putFeed"] = (name, title, now) =>
    Effect.gen(function*() {
      const existing = yield* sql<
        { deleted_at: unknown }
      >`SELECT deleted_at FROM feeds WHERE name = ${name} ${forUpdate}`
      const created = existing.length === 0 || existing[0]!.deleted_at !== null
      const rows = existing.length === 0
        ? yield* sql`INSERT INTO feeds (name, title, created_at, updated_at) VALUES (${name}, ${title}, ${ms(now)}, ${
          ms(now)
        })
            RETURNING ${sql.literal(FeedColumns)}`
        : yield* sql`UPDATE feeds SET title = ${title}, updated_at = ${ms(now)}, deleted_at = NULL,
            created_at = CASE WHEN deleted_at IS NULL THEN created_at ELSE ${ms(now)} END
            WHERE name = ${name} RETURNING ${sql.literal(FeedColumns)}`
      return { feed: feedOf(rows[0]), created }
    }).pipe(sql.withTransaction, orDie)

  const deleteFeed: SubscriptionStoreShape["deleteFeed"] = (name, now) =>
    Effect.gen(function*() {
      const deleted = yield* sql`UPDATE feeds SET deleted_at = ${
        ms(now)
      } WHERE name = ${name} AND deleted_at IS NULL RETURNING name`
      if (deleted.length === 0) return false
      yield* sql`UPDATE subscriptions SET status = 'unsubscribed', updated_at = ${ms(now)}
        WHERE feed = ${name} AND status <> 'unsubscribed'`
      yield* sql`UPDATE subscription_tokens SET used_at = ${ms(now)}
        WHERE purpose = 'confirm' AND used_at IS NULL
          AND subscription_id IN (SELECT id FROM subscriptions WHERE feed = ${name})`
      return true
    }).pipe(sql.withTransaction, orDie)

  // Insert first: the unique (email_key, feed) constraint decides between concurrent first requests, on
  // any database. A subscription that exists is then locked while the rules decide what to do with it.
  const subscribe: SubscriptionStoreShape["subscribe"] = ({ email, feed, name, now }) =>
    Effect.gen(function*() {
      const key = normalizeEmail(email)
      const fresh = decideSubscribe(undefined, 0)
      const inserted =
        yield* sql`INSERT INTO subscriptions (email, email_key, name, feed, status, created_at, updated_at)
        VALUES (${email}, ${key}, ${name}, ${feed}, ${fresh.status}, ${ms(now)}, ${ms(now)})
        ON CONFLICT (email_key, feed) DO NOTHING RETURNING ${subscriptionColumns}`
      let subscription: Subscription
      let decision = fresh
      if (inserted.length > 0) {
        subscription = subscriptionOf(inserted[0])
      } else {
        const existing = (yield* sql<{ id: unknown; status: SubscriptionStatus }>`
          SELECT id, status FROM subscriptions WHERE email_key = ${key} AND feed = ${feed} ${forUpdate}`)[0]!
        const since = DateTime.subtractDuration(now, MailThrottle.window)
        const mails = (yield* sql<{ n: unknown }>`SELECT count(*) AS n FROM mail_outbox
          WHERE subscription_id = ${existing.id} AND created_at > ${ms(since)}`)[0]!.n
        decision = decideSubscribe(existing.status, Number(mails))
        const rows = yield* sql`UPDATE subscriptions
          SET status = ${decision.status}, updated_at = ${ms(now)},
              name = CASE WHEN ${decision.updateName ? 1 : 0} = 1 THEN ${name} ELSE name END
          WHERE id = ${existing.id} RETURNING ${subscriptionColumns}`
        subscription = subscriptionOf(rows[0])
      }
      if (decision.queueConfirmation) {
        yield* sql`INSERT INTO mail_outbox (kind, subscription_id, created_at, next_attempt_at)
          VALUES ('confirmation', ${subscription.id}, ${ms(now)}, ${ms(now)})`
      }
      return { subscription, queued: decision.queueConfirmation }
    }).pipe(sql.withTransaction, orDie)

  const get = (id: SubscriptionId) =>
    sql`SELECT ${subscriptionColumns} FROM subscriptions WHERE id = ${id}`.pipe(
      Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), subscriptionOf)),
      orDie
    )

  const tokenRow = (hash: string, purpose: string, lock: boolean) =>
    sql<{ subscription_id: number; expires_at: unknown; used_at: unknown }>`
      SELECT subscription_id, expires_at, used_at FROM subscription_tokens
      WHERE hash = ${hash} AND purpose = ${purpose} ${lock ? forUpdate : sql.literal("")}`
      .pipe(
        Effect.map((rows) => rows[0])
      )

  const usableToken = (hash: string, purpose: string, now: DateTime.Utc, lock = false) =>
    Effect.map(
      tokenRow(hash, purpose, lock),
      (row) =>
        row !== undefined &&
          isUsable({
            usedAt: row.used_at === null ? null : millisOf(row.used_at),
            expiresAt: row.expires_at === null ? null : millisOf(row.expires_at)
          }, millis(now))
          ? row
          : undefined
    )

  const findByToken: SubscriptionStoreShape["findByToken"] = (hash, purpose, now) =>
    Effect.gen(function*() {
      const token = yield* usableToken(hash, purpose, now)
      return token ? yield* get(SubscriptionId.make(Number(token.subscription_id))) : Option.none()
    }).pipe(orDie)

  const redeemToken: SubscriptionStoreShape["redeemToken"] = (hash, purpose, event, now) =>
    Effect.gen(function*() {
      // Locked, so two concurrent redemptions of a single-use link cannot both see it unused.
      const token = yield* usableToken(hash, purpose, now, true)
      if (token === undefined) return yield* new InvalidToken()
      const current = (yield* sql<{ status: SubscriptionStatus }>`
        SELECT status FROM subscriptions WHERE id = ${token.subscription_id}`)[0]!
      const next = transition(current.status, event)
      if (next === undefined) return yield* new InvalidToken()
      // Confirmation links are single use; unsubscribe links stay valid so a second click still says "done".
      if (purpose === "confirm") yield* sql`UPDATE subscription_tokens SET used_at = ${ms(now)} WHERE hash = ${hash}`
      // Leaving voids every confirmation link still out, so an old mail cannot revive a later signup.
      if (next === "unsubscribed") {
        yield* sql`UPDATE subscription_tokens SET used_at = ${ms(now)}
          WHERE subscription_id = ${token.subscription_id} AND purpose = 'confirm' AND used_at IS NULL`
      }
      const rows = yield* sql`UPDATE subscriptions SET status = ${next}, updated_at = ${ms(now)}
        WHERE id = ${token.subscription_id} RETURNING ${subscriptionColumns}`
      return subscriptionOf(rows[0])
    }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die))

  const claimDue: SubscriptionStoreShape["claimDue"] = (now, leaseUntil, limit) =>
    Effect.gen(function*() {
      const due = yield* sql<{ id: number; subscription_id: number; attempts: number }>`
        SELECT id, subscription_id, attempts FROM mail_outbox
        WHERE sent_at IS NULL AND next_attempt_at <= ${ms(now)} ORDER BY next_attempt_at LIMIT ${limit}
        ${forUpdateSkipLocked}`
      if (due.length > 0) {
        yield* sql`UPDATE mail_outbox SET next_attempt_at = ${ms(leaseUntil)} WHERE ${
          sql.in("id", due.map((r) => r.id))
        }`
      }
      return due.map((r) => ({
        id: Number(r.id),
        subscriptionId: SubscriptionId.make(Number(r.subscription_id)),
        attempts: Number(r.attempts)
      }))
    }).pipe(sql.withTransaction, orDie)

  const prepareConfirmation: SubscriptionStoreShape["prepareConfirmation"] = (entry, tokens, now) =>
    Effect.gen(function*() {
      const subscription = yield* get(entry.subscriptionId)
      if (Option.isNone(subscription) || subscription.value.status !== "pending") return Option.none()
      yield* sql`INSERT INTO subscription_tokens (hash, subscription_id, purpose, created_at, expires_at)
        VALUES (${tokens.confirm.hash}, ${entry.subscriptionId}, 'confirm', ${ms(now)}, ${
        ms(tokens.confirm.expiresAt)
      }),
               (${tokens.unsubscribe.hash}, ${entry.subscriptionId}, 'unsubscribe', ${ms(now)}, NULL)`
      return subscription
    }).pipe(sql.withTransaction, orDie)

  const markSent: SubscriptionStoreShape["markSent"] = (id, now) =>
    orDie(sql`UPDATE mail_outbox SET sent_at = ${ms(now)}, next_attempt_at = NULL, last_error = NULL WHERE id = ${id}`)

  const markFailed: SubscriptionStoreShape["markFailed"] = (id, nextAttemptAt, reason) =>
    orDie(sql`UPDATE mail_outbox SET attempts = attempts + 1,
      next_attempt_at = ${nextAttemptAt === undefined ? null : ms(nextAttemptAt)}, last_error = ${reason.slice(0, 500)}
      WHERE id = ${id}`)

  return SubscriptionStore.of({
    findFeed,
    listFeeds,
    putFeed,
    deleteFeed,
    subscribe,
    get,
    findByToken,
    redeemToken,
    claimDue,
    prepareConfirmation,
    markSent,
    markFailed
  })
})

export const layer = Layer.effect(SubscriptionStore, make)
