import { SqlClient } from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { DateTime, Effect, Layer, Option } from "effect"
import { normalizeEmail } from "../../core/Email.ts"
import { InvalidToken } from "../../core/Errors.ts"
import { EventViews } from "../../core/EventViews.ts"
import type { FeedName } from "../../core/Feed.ts"
import {
  decideSubscribe,
  MailThrottle,
  type Subscription,
  SubscriptionId,
  type SubscriptionStatus,
  transition
} from "../../core/Subscription.ts"
import { SubscriptionStore, type SubscriptionStoreShape } from "../../core/SubscriptionStore.ts"
import { isUsable } from "../../core/Token.ts"
import { AdminOwner } from "../../core/Webhooks.ts"
import { millisOf } from "../sql/Dialect.ts"
import { newEvent, pgEventStatement, pgEventValues } from "../sql/EventRows.ts"
import { FeedColumns, feedOf, SubscriptionColumns, subscriptionOf } from "../sql/SubscriptionRows.ts"
import { PgDirect, type PgQuery, statement } from "./PgClient.ts"

// The subscription store on PostgreSQL. Every method is one transaction; the unique (email_key, feed)
// constraint decides between concurrent first subscriptions, and a subscription that exists is locked
// (FOR UPDATE) while the rules decide what to do with it. What every loaded request and every mail runs goes
// through PgDirect as named (prepared) statements: a feed by name, a new subscription with its confirmation
// mail in one statement (data-modifying CTEs: one statement is one transaction), and the outbox's claim, tokens
// and marks. The rest stays on @effect/sql.

const millis = DateTime.toEpochMillis
// A time as a query parameter.
const ms = (t: DateTime.Utc) => new Date(millis(t))

// Storage faults are not something a caller can act on: they become defects here and a 500 at the edge.
const orDie = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.orDie(effect)

const fresh = decideSubscribe(undefined, 0)
const feedByName = statement("feed_by_name", `SELECT ${FeedColumns} FROM feeds WHERE name = $1 AND deleted_at IS NULL`)
// A new subscription and, as the rules say of a new one, its confirmation mail: one statement.
const subscribeNew = statement(
  "subscribe_new",
  `WITH s AS (
     INSERT INTO subscriptions (email, email_key, name, feed, status, created_at, updated_at)
     VALUES ($1::text, $2::text, $3::text, $4::text, $5::text, $6::timestamptz, $6::timestamptz)
     ON CONFLICT (email_key, feed) DO NOTHING RETURNING ${SubscriptionColumns}
   )${
    fresh.queueConfirmation
      ? `, o AS (
     INSERT INTO mail_outbox (kind, subscription_id, created_at, next_attempt_at)
     SELECT 'confirmation', id, $6::timestamptz, $6::timestamptz FROM s
   )`
      : ""
  }
   SELECT * FROM s`
)
const lockSubscription = statement(
  "lock_subscription",
  `SELECT id, status FROM subscriptions WHERE email_key = $1 AND feed = $2 FOR UPDATE`
)
const recentMails = statement(
  "recent_mails",
  `SELECT count(*) AS n FROM mail_outbox WHERE subscription_id = $1 AND created_at > $2`
)
const updateSubscription = statement(
  "update_subscription",
  `UPDATE subscriptions SET status = $2, updated_at = $3, name = CASE WHEN $4 THEN $5 ELSE name END
   WHERE id = $1 RETURNING ${SubscriptionColumns}`
)
const queueMail = statement(
  "queue_mail",
  `INSERT INTO mail_outbox (kind, subscription_id, created_at, next_attempt_at) VALUES ('confirmation', $1, $2, $2)`
)

// The outbox's statements, each one round trip (one statement is one transaction): a batch of due rows claimed
// and leased (rows another instance holds are skipped, not waited for); the subscriptions of a batch that still
// await their mail, with the token hashes of those stored (arrays unnested); the sent rows marked.
const claimDueRows = statement(
  "claim_due_mail",
  `WITH due AS (
     SELECT id FROM mail_outbox WHERE sent_at IS NULL AND next_attempt_at <= $1::timestamptz
     ORDER BY next_attempt_at LIMIT $3 FOR UPDATE SKIP LOCKED
   )
   UPDATE mail_outbox m SET next_attempt_at = $2::timestamptz FROM due WHERE m.id = due.id
   RETURNING m.id, m.subscription_id, m.attempts`
)
const preparePending = statement(
  "prepare_confirmations",
  `WITH p AS (
     SELECT ${SubscriptionColumns} FROM subscriptions WHERE id = ANY($1::bigint[]) AND status = 'pending'
   ), t AS (
     INSERT INTO subscription_tokens (hash, subscription_id, purpose, created_at, expires_at)
     SELECT * FROM unnest($2::text[], $3::bigint[], $4::text[], $5::timestamptz[], $6::timestamptz[])
       AS t (hash, subscription_id, purpose, created_at, expires_at)
     WHERE t.subscription_id IN (SELECT id FROM p)
   )
   SELECT * FROM p`
)
const markSentRows = statement(
  "mark_sent_rows",
  `UPDATE mail_outbox SET sent_at = $2, next_attempt_at = NULL, last_error = NULL WHERE id = ANY($1::bigint[])`
)

export const make = Effect.gen(function*() {
  const sql = yield* SqlClient
  const direct = yield* PgDirect
  const views = yield* EventViews
  const forUpdate = sql.literal("FOR UPDATE")
  const subscriptionColumns = sql.literal(SubscriptionColumns)

  const findFeed = (name: FeedName) =>
    direct.query(feedByName, [name]).pipe(
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

  // Insert first: the unique (email_key, feed) constraint decides between concurrent first requests. A
  // subscription that exists is then locked while the rules decide what to do with it.
  const subscribeExisting = (query: PgQuery, request: Parameters<SubscriptionStoreShape["subscribe"]>[0]) => {
    const { email, feed, name, now } = request
    const key = normalizeEmail(email)
    const attempt: Effect.Effect<{ readonly subscription: Subscription; readonly queued: boolean }, SqlError> = Effect
      .gen(function*() {
        const inserted = yield* query(subscribeNew, [email, key, name, feed, fresh.status, ms(now)])
        if (inserted.length > 0) return { subscription: subscriptionOf(inserted[0]), queued: fresh.queueConfirmation }
        const existing = (yield* query<{ id: unknown; status: SubscriptionStatus }>(lockSubscription, [key, feed]))[0]
        // Deleted in between: the address is new again.
        if (existing === undefined) return yield* attempt
        const since = DateTime.subtractDuration(now, MailThrottle.window)
        const mails = (yield* query<{ n: unknown }>(recentMails, [existing.id, ms(since)]))[0]!.n
        const decision = decideSubscribe(existing.status, Number(mails))
        const rows = yield* query(updateSubscription, [
          existing.id,
          decision.status,
          ms(now),
          decision.updateName,
          name
        ])
        const subscription = subscriptionOf(rows[0])
        if (decision.queueConfirmation) yield* query(queueMail, [subscription.id, ms(now)])
        return { subscription, queued: decision.queueConfirmation }
      })
    return attempt
  }

  // A new address costs one statement; an address already subscribed, a transaction of its own.
  const subscribe: SubscriptionStoreShape["subscribe"] = (request) =>
    Effect.gen(function*() {
      const inserted = yield* direct.query(subscribeNew, [
        request.email,
        normalizeEmail(request.email),
        request.name,
        request.feed,
        fresh.status,
        ms(request.now)
      ])
      if (inserted.length > 0) return { subscription: subscriptionOf(inserted[0]), queued: fresh.queueConfirmation }
      return yield* direct.transaction((query) => subscribeExisting(query, request))
    }).pipe(orDie)

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
      const subscription = subscriptionOf(rows[0])
      // The one place this store records a subscription's event: in the transaction that changed it.
      if (next !== current.status) {
        const type = next === "active" ? "subscription.confirmed" : "subscription.unsubscribed"
        const event = newEvent(type, AdminOwner, views.subscription(subscription), millis(now))
        yield* sql.unsafe(pgEventStatement, pgEventValues(event))
      }
      return subscription
    }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die))

  const claimDue: SubscriptionStoreShape["claimDue"] = (now, leaseUntil, limit) =>
    direct.query<{ id: unknown; subscription_id: unknown; attempts: unknown }>(claimDueRows, [
      ms(now),
      ms(leaseUntil),
      limit
    ]).pipe(
      Effect.map((rows) =>
        rows.map((r) => ({
          id: Number(r.id),
          subscriptionId: SubscriptionId.make(Number(r.subscription_id)),
          attempts: Number(r.attempts)
        }))
      ),
      orDie
    )

  const markFailed: SubscriptionStoreShape["markFailed"] = (id, nextAttemptAt, reason) =>
    orDie(sql`UPDATE mail_outbox SET attempts = attempts + 1,
      next_attempt_at = ${nextAttemptAt === undefined ? null : ms(nextAttemptAt)}, last_error = ${reason.slice(0, 500)}
      WHERE id = ${id}`)

  const listSubscriptions: SubscriptionStoreShape["listSubscriptions"] = ({ feed, limit, startingAfter, status }) =>
    sql`SELECT ${subscriptionColumns} FROM subscriptions WHERE id > ${startingAfter ?? 0}
      ${feed === undefined ? sql.literal("") : sql`AND feed = ${feed}`}
      ${status === undefined ? sql.literal("") : sql`AND status = ${status}`}
      ORDER BY id LIMIT ${limit}`.pipe(Effect.map((rows) => rows.map(subscriptionOf)), orDie)

  // Signups never confirmed, oldest first; their tokens and outbox rows go with them (ON DELETE CASCADE). Rows
  // another instance is purging at the same time are skipped, not waited for.
  const purgePending: SubscriptionStoreShape["purgePending"] = (before, limit) =>
    sql`DELETE FROM subscriptions WHERE id IN (
        SELECT id FROM subscriptions WHERE status = 'pending' AND updated_at < ${ms(before)}
        ORDER BY updated_at LIMIT ${limit} FOR UPDATE SKIP LOCKED)
      RETURNING id`.pipe(Effect.map((rows) => rows.length), orDie)

  // Tokens are stored only for the subscriptions that still await their mail (the statement filters them).
  const prepareConfirmations: SubscriptionStoreShape["prepareConfirmations"] = (batch, now) => {
    if (batch.length === 0) return Effect.succeed([])
    const columns: [Array<string>, Array<number>, Array<string>, Array<Date>, Array<Date | null>] = [[], [], [], [], []]
    const createdAt = ms(now)
    const add = (hash: string, id: number, purpose: string, expiresAt: Date | null) => {
      columns[0].push(hash)
      columns[1].push(id)
      columns[2].push(purpose)
      columns[3].push(createdAt)
      columns[4].push(expiresAt)
    }
    for (const { entry, tokens } of batch) {
      add(tokens.confirm.hash, entry.subscriptionId, "confirm", ms(tokens.confirm.expiresAt))
      add(tokens.unsubscribe.hash, entry.subscriptionId, "unsubscribe", null)
    }
    const ids = batch.map(({ entry }) => entry.subscriptionId)
    return direct.query(preparePending, [ids, ...columns]).pipe(
      Effect.map((rows) => {
        const pending = new Map(rows.map((row) => {
          const subscription = subscriptionOf(row)
          return [Number(subscription.id), subscription] as const
        }))
        return batch.map(({ entry }) => Option.fromNullable(pending.get(Number(entry.subscriptionId))))
      }),
      orDie
    )
  }

  const markSentAll: SubscriptionStoreShape["markSentAll"] = (ids, now) =>
    ids.length === 0 ? Effect.void : direct.query(markSentRows, [ids, ms(now)]).pipe(Effect.asVoid, orDie)

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
    markFailed,
    listSubscriptions,
    purgePending,
    prepareConfirmations,
    markSentAll
  })
})

export const layer = Layer.effect(SubscriptionStore, make)
