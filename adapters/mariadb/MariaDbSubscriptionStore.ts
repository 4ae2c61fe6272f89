import { SqlClient } from "@effect/sql/SqlClient"
import { DateTime, Effect, Layer, Option } from "effect"
import { normalizeEmail } from "../../core/shared/Email.ts"
import { InvalidToken } from "../../core/subscriptions/Errors.ts"
import {
  decideSubscribe,
  MailThrottle,
  SubscriptionId,
  type SubscriptionStatus,
  transition
} from "../../core/subscriptions/Subscription.ts"
import { SubscriptionStore, type SubscriptionStoreShape } from "../../core/subscriptions/SubscriptionStore.ts"
import { isUsable } from "../../core/subscriptions/Token.ts"
import { EventViews } from "../../core/webhooks/EventViews.ts"
import { AdminOwner } from "../../core/webhooks/Webhooks.ts"
import { newEvent } from "../sql/EventRows.ts"
import { FeedColumns, feedOf, SubscriptionColumns, subscriptionOf } from "../sql/SubscriptionRows.ts"
import { transactionOn, writeEvent } from "./MariaDbClient.ts"

// The subscription store on MariaDB, on @effect/sql. Every method is one transaction; a subscription is read
// FOR UPDATE before it is written, so concurrent signups of one address are judged one after the other, and the
// unique (email_key, feed) constraint keeps one row.
const ms = DateTime.toEpochMillis

export const make = Effect.gen(function*() {
  const sql = yield* SqlClient
  const views = yield* EventViews
  const transaction = transactionOn(sql)
  const subscriptionColumns = sql.literal(SubscriptionColumns)
  const feedColumns = sql.literal(FeedColumns)
  const byId = (id: unknown) => sql`SELECT ${subscriptionColumns} FROM subscriptions WHERE id = ${id}`
  const one = <A>(rows: ReadonlyArray<A>) => Option.fromNullable(rows[0])

  const putFeed: SubscriptionStoreShape["putFeed"] = (name, title, now) =>
    transaction(Effect.gen(function*() {
      const existing = yield* sql<{ deleted_at: unknown }>`SELECT deleted_at FROM feeds WHERE name = ${name} FOR UPDATE`
      const created = existing.length === 0 || existing[0]!.deleted_at !== null
      if (existing.length === 0) {
        yield* sql`INSERT INTO feeds (name, title, created_at, updated_at) VALUES (${name}, ${title}, ${ms(now)}, ${
          ms(now)
        })`
      } else {
        yield* sql`UPDATE feeds SET created_at = CASE WHEN deleted_at IS NULL THEN created_at ELSE ${ms(now)} END,
          title = ${title}, updated_at = ${ms(now)}, deleted_at = NULL WHERE name = ${name}`
      }
      return { feed: feedOf((yield* sql`SELECT ${feedColumns} FROM feeds WHERE name = ${name}`)[0]), created }
    })).pipe(Effect.orDie)

  const deleteFeed: SubscriptionStoreShape["deleteFeed"] = (name, now) =>
    transaction(Effect.gen(function*() {
      const found = yield* sql`SELECT name FROM feeds WHERE name = ${name} AND deleted_at IS NULL FOR UPDATE`
      if (found.length === 0) return false
      yield* sql`UPDATE feeds SET deleted_at = ${ms(now)} WHERE name = ${name}`
      yield* sql`UPDATE subscriptions SET status = 'unsubscribed', updated_at = ${ms(now)}
        WHERE feed = ${name} AND status <> 'unsubscribed'`
      yield* sql`UPDATE subscription_tokens SET used_at = ${ms(now)} WHERE purpose = 'confirm' AND used_at IS NULL
        AND subscription_id IN (SELECT id FROM subscriptions WHERE feed = ${name})`
      return true
    })).pipe(Effect.orDie)

  const queueMail = (id: unknown, now: DateTime.Utc) =>
    sql`INSERT INTO mail_outbox (kind, subscription_id, created_at, next_attempt_at)
      VALUES ('confirmation', ${id}, ${ms(now)}, ${ms(now)})`

  const subscribe: SubscriptionStoreShape["subscribe"] = ({ email, feed, name, now }) =>
    transaction(Effect.gen(function*() {
      const key = normalizeEmail(email)
      const [existing] = yield* sql<{ id: number; status: SubscriptionStatus }>`
        SELECT id, status FROM subscriptions WHERE email_key = ${key} AND feed = ${feed} FOR UPDATE`
      const since = DateTime.subtractDuration(now, MailThrottle.window)
      const mails = existing === undefined ? 0 : Number(
        (yield* sql<{ n: unknown }>`SELECT count(*) AS n FROM mail_outbox
          WHERE subscription_id = ${existing.id} AND created_at > ${ms(since)}`)[0]!.n
      )
      const decision = decideSubscribe(existing?.status, mails)
      const id = existing?.id ?? (yield* sql<{ id: number }>`
        INSERT INTO subscriptions (email, email_key, name, feed, status, created_at, updated_at)
        VALUES (${email}, ${key}, ${name}, ${feed}, ${decision.status}, ${ms(now)}, ${ms(now)}) RETURNING id`)[0]!.id
      if (existing !== undefined) {
        yield* sql`UPDATE subscriptions SET status = ${decision.status}, updated_at = ${ms(now)},
          name = CASE WHEN ${decision.updateName} THEN ${name} ELSE name END WHERE id = ${id}`
      }
      if (decision.queueConfirmation) yield* queueMail(id, now)
      return { subscription: subscriptionOf((yield* byId(id))[0]), queued: decision.queueConfirmation }
    })).pipe(Effect.orDie)

  const get = (id: SubscriptionId) => byId(id).pipe(Effect.map((rows) => Option.map(one(rows), subscriptionOf)))

  const usableToken = (hash: string, purpose: string, now: DateTime.Utc, lock: boolean) =>
    sql<{ subscription_id: number; expires_at: unknown; used_at: unknown }>`
      SELECT subscription_id, expires_at, used_at FROM subscription_tokens
      WHERE hash = ${hash} AND purpose = ${purpose} ${sql.literal(lock ? "FOR UPDATE" : "")}`.pipe(
      Effect.map(([row]) =>
        row !== undefined && isUsable({
            usedAt: row.used_at === null ? null : Number(row.used_at),
            expiresAt: row.expires_at === null ? null : Number(row.expires_at)
          }, ms(now))
          ? row
          : undefined
      )
    )

  const redeemToken: SubscriptionStoreShape["redeemToken"] = (hash, purpose, event, now) =>
    transaction(Effect.gen(function*() {
      // Locked, so two concurrent redemptions of a single-use link cannot both see it unused.
      const token = yield* usableToken(hash, purpose, now, true)
      if (token === undefined) return yield* new InvalidToken()
      const [current] = yield* sql<{ status: SubscriptionStatus }>`
        SELECT status FROM subscriptions WHERE id = ${token.subscription_id} FOR UPDATE`
      const next = transition(current!.status, event)
      if (next === undefined) return yield* new InvalidToken()
      // Confirmation links are single use; unsubscribe links stay valid so a second click still says "done".
      if (purpose === "confirm") yield* sql`UPDATE subscription_tokens SET used_at = ${ms(now)} WHERE hash = ${hash}`
      // Leaving voids every confirmation link still out, so an old mail cannot revive a later signup.
      if (next === "unsubscribed") {
        yield* sql`UPDATE subscription_tokens SET used_at = ${ms(now)}
          WHERE subscription_id = ${token.subscription_id} AND purpose = 'confirm' AND used_at IS NULL`
      }
      yield* sql`UPDATE subscriptions SET status = ${next}, updated_at = ${ms(now)} WHERE id = ${token.subscription_id}`
      const subscription = subscriptionOf((yield* byId(token.subscription_id))[0])
      if (next !== current!.status) {
        const type = next === "active" ? "subscription.confirmed" : "subscription.unsubscribed"
        yield* writeEvent(sql, newEvent(type, AdminOwner, views.subscription(subscription), ms(now)))
      }
      return subscription
    })).pipe(Effect.catchTag("SqlError", Effect.die))

  // A batch of due rows, locked (rows another instance holds are skipped, not waited for) and leased; read in the
  // index's order, so that a claim locks only the rows it takes.
  const claimDue: SubscriptionStoreShape["claimDue"] = (now, leaseUntil, limit) =>
    transaction(Effect.gen(function*() {
      const rows = yield* sql<{ id: number; subscription_id: number; attempts: number }>`
        SELECT id, subscription_id, attempts FROM mail_outbox FORCE INDEX (mail_outbox_due) WHERE sent_at IS NULL
        AND next_attempt_at <= ${ms(now)} ORDER BY next_attempt_at LIMIT ${limit} FOR UPDATE SKIP LOCKED`
      if (rows.length > 0) {
        yield* sql`UPDATE mail_outbox SET next_attempt_at = ${ms(leaseUntil)} WHERE ${
          sql.in("id", rows.map((r) => r.id))
        }`
      }
      return rows.map((r) => ({
        id: Number(r.id),
        subscriptionId: SubscriptionId.make(Number(r.subscription_id)),
        attempts: Number(r.attempts)
      }))
    })).pipe(Effect.orDie)

  // Signups never confirmed, oldest first; their tokens and outbox rows go with them (ON DELETE CASCADE).
  const purgePending: SubscriptionStoreShape["purgePending"] = (before, limit) =>
    transaction(Effect.gen(function*() {
      const rows = yield* sql<{ id: number }>`SELECT id FROM subscriptions FORCE INDEX (subscriptions_pending)
        WHERE status = 'pending' AND updated_at < ${
        ms(before)
      } ORDER BY updated_at LIMIT ${limit} FOR UPDATE SKIP LOCKED`
      if (rows.length > 0) yield* sql`DELETE FROM subscriptions WHERE ${sql.in("id", rows.map((r) => r.id))}`
      return rows.length
    })).pipe(Effect.orDie)

  // Tokens are stored only for the subscriptions that still await their mail.
  const prepareConfirmations: SubscriptionStoreShape["prepareConfirmations"] = (batch, now) =>
    batch.length === 0 ? Effect.succeed([]) : transaction(Effect.gen(function*() {
      const ids = batch.map(({ entry }) => entry.subscriptionId)
      const rows = yield* sql`SELECT ${subscriptionColumns} FROM subscriptions
        WHERE ${sql.in("id", ids)} AND status = 'pending' FOR UPDATE`
      const pending = new Map(rows.map((row) => [Number(row.id), subscriptionOf(row)] as const))
      const tokens = batch.filter(({ entry }) => pending.has(Number(entry.subscriptionId))).flatMap((
        { entry, tokens }
      ) =>
        [
          { hash: tokens.confirm.hash, purpose: "confirm", expires_at: ms(tokens.confirm.expiresAt) },
          { hash: tokens.unsubscribe.hash, purpose: "unsubscribe", expires_at: null }
        ].map((t) => ({ ...t, subscription_id: entry.subscriptionId, created_at: ms(now) }))
      )
      if (tokens.length > 0) yield* sql`INSERT INTO subscription_tokens ${sql.insert(tokens)}`
      return batch.map(({ entry }) => Option.fromNullable(pending.get(Number(entry.subscriptionId))))
    })).pipe(Effect.orDie)

  return SubscriptionStore.of({
    findFeed: (name) =>
      sql`SELECT ${feedColumns} FROM feeds WHERE name = ${name} AND deleted_at IS NULL`.pipe(
        Effect.map((rows) => Option.map(one(rows), feedOf)),
        Effect.orDie
      ),
    listFeeds: Effect.gen(function*() {
      const rows = yield* sql`SELECT ${feedColumns} FROM feeds WHERE deleted_at IS NULL ORDER BY name`
      const [changed] = yield* sql<{ at: unknown }>`
        SELECT max(CASE WHEN deleted_at IS NULL THEN updated_at ELSE deleted_at END) AS at FROM feeds`
      return { feeds: rows.map(feedOf), lastModified: DateTime.unsafeMake(Number(changed?.at ?? 0)) }
    }).pipe(Effect.orDie),
    putFeed,
    deleteFeed,
    subscribe,
    get: (id) => Effect.orDie(get(id)),
    findByToken: (hash, purpose, now) =>
      usableToken(hash, purpose, now, false).pipe(
        Effect.flatMap((token) =>
          token ? get(SubscriptionId.make(Number(token.subscription_id))) : Effect.succeed(Option.none())
        ),
        Effect.orDie
      ),
    redeemToken,
    claimDue,
    markFailed: (id, next, reason) =>
      Effect.orDie(sql`UPDATE mail_outbox SET attempts = attempts + 1,
        next_attempt_at = ${next === undefined ? null : ms(next)}, last_error = ${
        reason.slice(0, 500)
      } WHERE id = ${id}`),
    listSubscriptions: ({ feed, limit, startingAfter, status }) =>
      sql`SELECT ${subscriptionColumns} FROM subscriptions WHERE id > ${startingAfter ?? 0}
        ${feed === undefined ? sql.literal("") : sql`AND feed = ${feed}`}
        ${status === undefined ? sql.literal("") : sql`AND status = ${status}`}
        ORDER BY id LIMIT ${limit}`.pipe(Effect.map((rows) => rows.map(subscriptionOf)), Effect.orDie),
    purgePending,
    prepareConfirmations,
    markSentAll: (ids, now) =>
      ids.length === 0 ? Effect.void : Effect.orDie(sql`UPDATE mail_outbox SET sent_at = ${ms(now)},
        next_attempt_at = NULL, last_error = NULL WHERE ${sql.in("id", ids)}`)
  })
})

export const layer = Layer.effect(SubscriptionStore, make)
