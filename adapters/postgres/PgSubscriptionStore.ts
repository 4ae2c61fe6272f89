import { SqlClient } from "@effect/sql/SqlClient"
import { type DateTime, Effect, Layer } from "effect"
import { AwaitsConfirmation } from "../../core/subscriptions/Subscription.ts"
import { SubscriptionStorage, type SubscriptionTx } from "../../core/subscriptions/SubscriptionStorage.ts"
import { eventDays, signupDays, SignupSlots } from "../sql/DayRows.ts"
import { liveEndpointOf, pgEventValues, pgInsertEvent, pgLiveEndpoints } from "../sql/EventRows.ts"
import {
  consoleReads,
  FeedColumns,
  feedOf,
  listFeeds,
  listSubscriptions,
  lockedOf,
  outboxEntryOf,
  SubscriptionColumns,
  subscriptionOf,
  tokenOf
} from "../sql/SubscriptionRows.ts"
import { PgDirect, statement } from "./PgClient.ts"
import { first, ms, type Statements, unitOfWork } from "./PgUnitOfWork.ts"

// The subscription storage on PostgreSQL: named (prepared) statements on PgDirect; the unique (email_key, feed)
// constraint decides between concurrent first signups, subscriptions, tokens and feeds are locked FOR UPDATE
// while core decides on them, and the outbox is claimed with SKIP LOCKED. Feed listing stays on @effect/sql.

const feedByName = statement("feed_by_name", `SELECT ${FeedColumns} FROM feeds WHERE name = $1 AND deleted_at IS NULL`)
const lockFeed = statement("lock_feed", `SELECT deleted_at FROM feeds WHERE name = $1 FOR UPDATE`)
const insertFeed = statement(
  "insert_feed",
  `INSERT INTO feeds (name, title, created_at, updated_at) VALUES ($1, $2, $3, $3) RETURNING ${FeedColumns}`
)
const replaceFeed = statement(
  "replace_feed",
  `UPDATE feeds SET title = $2, updated_at = $3, deleted_at = NULL,
   created_at = CASE WHEN $4::boolean THEN $3 ELSE created_at END WHERE name = $1 RETURNING ${FeedColumns}`
)
const deleteFeed = statement(
  "delete_feed",
  `UPDATE feeds SET deleted_at = $2 WHERE name = $1 AND deleted_at IS NULL RETURNING 1`
)
const setFeedStatus = statement(
  "set_feed_status",
  `UPDATE subscriptions SET status = $2, updated_at = $3 WHERE feed = $1 AND status <> $2`
)
const voidFeedConfirmations = statement(
  "void_feed_confirmations",
  `UPDATE subscription_tokens SET used_at = $2 WHERE purpose = 'confirm' AND used_at IS NULL
   AND subscription_id IN (SELECT id FROM subscriptions WHERE feed = $1)`
)
const insertSubscription = statement(
  "insert_subscription",
  `INSERT INTO subscriptions (email, email_key, name, feed, status, created_at, updated_at)
   VALUES ($1, $2, $3, $4, $5, $6, $6) ON CONFLICT (email_key, feed) DO NOTHING RETURNING ${SubscriptionColumns}`
)
// A signup added to its day's and feed's row of the subscription's slot (adapters/sql/DayRows.ts).
const countSignupRow = `INSERT INTO signup_days AS d (day, feed, slot, signups)`
const countSignupConflict = `ON CONFLICT (day, feed, slot) DO UPDATE SET signups = d.signups + 1`
const countSignup = statement(
  "count_signup",
  `${countSignupRow} VALUES ($1, $2, $3, 1) ${countSignupConflict}`
)
// The combined insertSubscriptionAndQueue: the outbox row and the signup's count only for a subscription the
// statement inserted.
const insertSubscriptionAndQueue = statement(
  "insert_subscription_and_queue",
  `WITH s AS (
     INSERT INTO subscriptions (email, email_key, name, feed, status, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6::timestamptz, $6::timestamptz) ON CONFLICT (email_key, feed) DO NOTHING
     RETURNING ${SubscriptionColumns}
   ), q AS (
     INSERT INTO mail_outbox (kind, subscription_id, created_at, next_attempt_at)
     SELECT 'confirmation', id, $6::timestamptz, $6::timestamptz FROM s
   ), c AS (
     ${countSignupRow} SELECT $7::integer, feed, id % ${SignupSlots}, 1 FROM s ${countSignupConflict}
   )
   SELECT ${SubscriptionColumns} FROM s`
)
const lockSubscription = statement(
  "lock_subscription",
  `SELECT id, status FROM subscriptions WHERE email_key = $1 AND feed = $2 FOR UPDATE`
)
const mailsSince = statement(
  "mails_since",
  `SELECT count(*) AS n FROM mail_outbox WHERE subscription_id = $1 AND created_at > $2`
)
const updateSubscription = statement(
  "update_subscription",
  `UPDATE subscriptions SET status = $2, updated_at = $3, name = coalesce($4, name)
   WHERE id = $1 RETURNING ${SubscriptionColumns}`
)
const queueMail = statement(
  "queue_mail",
  `INSERT INTO mail_outbox (kind, subscription_id, created_at, next_attempt_at) VALUES ('confirmation', $1, $2, $2)`
)
const selectToken =
  `SELECT subscription_id, expires_at, used_at FROM subscription_tokens WHERE hash = $1 AND purpose = $2`
const tokenByHash = statement("token_by_hash", selectToken)
const lockToken = statement("lock_token", `${selectToken} FOR UPDATE`)
const useToken = statement("use_token", `UPDATE subscription_tokens SET used_at = $2 WHERE hash = $1`)
const voidConfirmations = statement(
  "void_confirmations",
  `UPDATE subscription_tokens SET used_at = $2 WHERE subscription_id = $1 AND purpose = 'confirm' AND used_at IS NULL`
)
const subscriptionById = statement(
  "subscription_by_id",
  `SELECT ${SubscriptionColumns} FROM subscriptions WHERE id = $1`
)
const subscriptionsById = statement(
  "subscriptions_by_id",
  `SELECT ${SubscriptionColumns} FROM subscriptions WHERE id = ANY($1::bigint[])`
)
const insertTokens = statement(
  "insert_tokens",
  `INSERT INTO subscription_tokens (hash, subscription_id, purpose, created_at, expires_at)
   SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::timestamptz[], $5::timestamptz[])`
)
// The combined insertPendingTokens: the mails' subscriptions, and the tokens of those still awaiting confirmation
// (core's AwaitsConfirmation, $7).
const insertPendingTokens = statement(
  "insert_pending_tokens",
  `WITH found AS (SELECT ${SubscriptionColumns} FROM subscriptions WHERE id = ANY($6::bigint[])),
   t AS (
     INSERT INTO subscription_tokens (hash, subscription_id, purpose, created_at, expires_at)
     SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::timestamptz[], $5::timestamptz[])
       AS t (hash, subscription_id, purpose, created_at, expires_at)
     WHERE t.subscription_id IN (SELECT id FROM found WHERE status = $7)
   )
   SELECT ${SubscriptionColumns} FROM found`
)
const liveEndpoints = statement("live_endpoints", pgLiveEndpoints)
const insertEvent = statement("insert_event", pgInsertEvent)
// A batch of due rows claimed and leased in one statement: rows another instance holds are skipped.
const claimDue = statement(
  "claim_due_mail",
  `WITH due AS (
     SELECT id FROM mail_outbox WHERE sent_at IS NULL AND next_attempt_at <= $1::timestamptz
     ORDER BY next_attempt_at LIMIT $3 FOR UPDATE SKIP LOCKED
   )
   UPDATE mail_outbox m SET next_attempt_at = $2::timestamptz FROM due WHERE m.id = due.id
   RETURNING m.id, m.subscription_id, m.attempts`
)
const markSent = statement(
  "mark_sent_rows",
  `UPDATE mail_outbox SET sent_at = $2, next_attempt_at = NULL, last_error = NULL
    WHERE id = ANY($1::bigint[]) AND sent_at IS NULL`
)
const markFailed = statement(
  "mark_failed",
  `UPDATE mail_outbox SET attempts = attempts + 1, next_attempt_at = $2, last_error = $3 WHERE id = $1`
)
// Oldest first, with their tokens and outbox rows (ON DELETE CASCADE); rows another purge holds are skipped.
const purge = statement(
  "purge_subscriptions",
  `DELETE FROM subscriptions WHERE id IN (
     SELECT id FROM subscriptions WHERE status = $1 AND updated_at < $2 ORDER BY updated_at LIMIT $3
     FOR UPDATE SKIP LOCKED) RETURNING id`
)

// Both tokens of every mail as the columns of insert_tokens.
const tokenColumns = (mails: Parameters<SubscriptionTx["insertTokens"]>[0], now: DateTime.Utc) => {
  const columns: [Array<string>, Array<number>, Array<string>, Array<Date>, Array<Date | null>] = [[], [], [], [], []]
  const add = (hash: string, id: number, purpose: string, expiresAt: Date | null) => {
    columns[0].push(hash)
    columns[1].push(id)
    columns[2].push(purpose)
    columns[3].push(ms(now))
    columns[4].push(expiresAt)
  }
  for (const { subscriptionId: id, tokens } of mails) {
    add(tokens.confirm.hash, id, "confirm", ms(tokens.confirm.expiresAt))
    add(tokens.unsubscribe.hash, id, "unsubscribe", null)
  }
  return columns
}

const statements: Statements<SubscriptionTx> = {
  liveEndpoints: (query, owner) => Effect.map(query(liveEndpoints, [owner]), (rows) => rows.map(liveEndpointOf)),
  insertEvent: (query, event, endpoints) => Effect.asVoid(query(insertEvent, pgEventValues(event, endpoints))),
  insertSubscription: (query, s) =>
    Effect.map(
      query(insertSubscription, [s.email, s.emailKey, s.name, s.feed, s.status, ms(s.now)]),
      (rows) => first(rows, subscriptionOf)
    ),
  lockSubscription: (query, emailKey, feed) =>
    Effect.map(query(lockSubscription, [emailKey, feed]), (rows) => first(rows, lockedOf)),
  mailsSince: (query, id, since) =>
    Effect.map(query<{ n: unknown }>(mailsSince, [id, ms(since)]), (rows) => Number(rows[0]!.n)),
  updateSubscription: (query, id, status, now, name) =>
    Effect.map(query(updateSubscription, [id, status, ms(now), name ?? null]), (rows) => subscriptionOf(rows[0])),
  queueConfirmation: (query, id, now) => Effect.asVoid(query(queueMail, [id, ms(now)])),
  countSignup: (query, { day, feed, id }) => Effect.asVoid(query(countSignup, [day, feed, id % SignupSlots])),
  lockToken: (query, hash, purpose) => Effect.map(query(lockToken, [hash, purpose]), (rows) => first(rows, tokenOf)),
  useToken: (query, hash, now) => Effect.asVoid(query(useToken, [hash, ms(now)])),
  voidConfirmations: (query, id, now) => Effect.asVoid(query(voidConfirmations, [id, ms(now)])),
  get: (query, id) => Effect.map(query(subscriptionById, [id]), (rows) => first(rows, subscriptionOf)),
  lockFeed: (query, name) =>
    Effect.map(
      query<{ deleted_at: unknown }>(lockFeed, [name]),
      (rows) => first(rows, (r) => ({ deleted: r.deleted_at !== null }))
    ),
  insertFeed: (query, name, title, now) =>
    Effect.map(query(insertFeed, [name, title, ms(now)]), (rows) => feedOf(rows[0])),
  replaceFeed: (query, name, title, now, recreated) =>
    Effect.map(query(replaceFeed, [name, title, ms(now), recreated]), (rows) => feedOf(rows[0])),
  deleteFeed: (query, name, now) => Effect.map(query(deleteFeed, [name, ms(now)]), (rows) => rows.length > 0),
  setFeedStatus: (query, feed, status, now) => Effect.asVoid(query(setFeedStatus, [feed, status, ms(now)])),
  voidFeedConfirmations: (query, feed, now) => Effect.asVoid(query(voidFeedConfirmations, [feed, ms(now)])),
  subscriptions: (query, ids) => Effect.map(query(subscriptionsById, [ids]), (rows) => rows.map(subscriptionOf)),
  // Both tokens of every mail as columns, unnested: one statement for a batch.
  insertTokens: (query, mails, now) => Effect.asVoid(query(insertTokens, tokenColumns(mails, now)))
}

export const make = Effect.gen(function*() {
  const sql = yield* SqlClient
  const direct = yield* PgDirect
  return SubscriptionStorage.of({
    ...unitOfWork<SubscriptionTx>(direct, statements),
    combined: {
      insertSubscriptionAndQueue: (s, day) =>
        direct.query(insertSubscriptionAndQueue, [s.email, s.emailKey, s.name, s.feed, s.status, ms(s.now), day]).pipe(
          Effect.map((rows) => first(rows, subscriptionOf)),
          Effect.orDie
        ),
      insertPendingTokens: (mails, now) =>
        direct.query(insertPendingTokens, [
          ...tokenColumns(mails, now),
          mails.map((m) => m.subscriptionId),
          AwaitsConfirmation
        ]).pipe(
          Effect.map((rows) => rows.map(subscriptionOf)),
          Effect.orDie
        )
    },
    findFeed: (name) => direct.query(feedByName, [name]).pipe(Effect.map((rows) => first(rows, feedOf)), Effect.orDie),
    listFeeds: listFeeds(sql),
    token: (hash, purpose) =>
      direct.query(tokenByHash, [hash, purpose]).pipe(Effect.map((rows) => first(rows, tokenOf)), Effect.orDie),
    claimDue: (now, leaseUntil, limit) =>
      direct.query(claimDue, [ms(now), ms(leaseUntil), limit]).pipe(
        Effect.map((rows) => rows.map(outboxEntryOf)),
        Effect.orDie
      ),
    markFailed: (id, nextAttemptAt, reason) =>
      Effect.orDie(
        direct.query(markFailed, [id, nextAttemptAt === undefined ? null : ms(nextAttemptAt), reason.slice(0, 500)])
      ),
    markSentAll: (ids, now) => Effect.orDie(Effect.asVoid(direct.query(markSent, [ids, ms(now)]))),
    listSubscriptions: listSubscriptions(sql),
    signupDays: signupDays(sql),
    eventDays: eventDays(sql),
    purge: (status, before, limit) =>
      direct.query(purge, [status, ms(before), limit]).pipe(Effect.map((rows) => rows.length), Effect.orDie),
    ...consoleReads(sql)
  })
})

export const layer = Layer.effect(SubscriptionStorage, make)
