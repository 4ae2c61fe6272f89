import { SqlClient } from "@effect/sql/SqlClient"
import { DateTime, Effect, Layer, Option } from "effect"
import { SubscriptionStorage, type SubscriptionTx } from "../../core/subscriptions/SubscriptionStorage.ts"
import { eventDays, signupDays, SignupSlots } from "../sql/DayRows.ts"
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
import { errnoOf, MariaDbDirect, rollBack } from "./MariaDbDirect.ts"
import {
  claim,
  eventStatements,
  first,
  ms,
  type Statements,
  unitOfWork,
  unlessDuplicate,
  wrote
} from "./MariaDbUnitOfWork.ts"

// The hot statements, prepared on MariaDbDirect; the rest stays on @effect/sql.
const feedByName = `SELECT ${FeedColumns} FROM feeds WHERE name = ? AND deleted_at IS NULL`
const insertSubscription = `INSERT INTO subscriptions (email, email_key, name, feed, status, created_at, updated_at)
  VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING ${SubscriptionColumns}`
const lockSubscription = `SELECT id, status FROM subscriptions WHERE email_key = ? AND feed = ? FOR UPDATE`
const mailsSince = `SELECT count(*) AS n FROM mail_outbox WHERE subscription_id = ? AND created_at > ?`
const updateSubscription = `UPDATE subscriptions SET status = ?, updated_at = ?, name = coalesce(?, name) WHERE id = ?`
const subscriptionById = `SELECT ${SubscriptionColumns} FROM subscriptions WHERE id = ?`
const queueConfirmation = `INSERT INTO mail_outbox (kind, subscription_id, created_at, next_attempt_at)
  VALUES ('confirmation', ?, ?, ?)`
// In the row of the subscription's slot (adapters/sql/DayRows.ts).
const countSignup = `INSERT INTO signup_days (day, feed, slot, signups) VALUES (?, ?, ?, 1)
  ON DUPLICATE KEY UPDATE signups = signups + 1`

// The combined insertSubscriptionAndQueue, one script (MariaDbDirect.ts): the outbox row and the signup's count
// follow a subscription the first statement inserted (one already there stops the script: 1062).
const insertSubscriptionAndQueue = `${insertSubscription}; SET @subscription = LAST_INSERT_ID();
  INSERT INTO mail_outbox (kind, subscription_id, created_at, next_attempt_at) VALUES ('confirmation', @subscription, ?, ?);
  INSERT INTO signup_days (day, feed, slot, signups) VALUES (?, ?, @subscription % ${SignupSlots}, 1)
  ON DUPLICATE KEY UPDATE signups = signups + 1`

// The subscription storage on MariaDB. The unique (email_key, feed) constraint decides between
// concurrent first signups (the second insert waits for the first's row lock, then loses with 1062); rows are
// read FOR UPDATE while core decides on them. An UPDATE whose row core reads back is followed by a SELECT in
// the same transaction (no UPDATE ... RETURNING on MariaDB); an INSERT answers with INSERT ... RETURNING.

export const make = Effect.gen(function*() {
  const sql = yield* SqlClient
  const direct = yield* MariaDbDirect
  const transaction = direct.transaction
  const subscriptionColumns = sql.literal(SubscriptionColumns)
  const feedColumns = sql.literal(FeedColumns)
  const feedNamed = (name: string) =>
    Effect.map(sql`SELECT ${feedColumns} FROM feeds WHERE name = ${name}`, (rows) => feedOf(rows[0]))
  const byId = (id: number) => direct.query(subscriptionById, [id])
  const selectToken = (hash: string, purpose: string, lock = sql.literal("")) =>
    first(
      sql`SELECT subscription_id, expires_at, used_at FROM subscription_tokens
        WHERE hash = ${hash} AND purpose = ${purpose} ${lock}`,
      tokenOf
    )

  const statements: Statements<SubscriptionTx> = {
    ...eventStatements(sql, direct),
    insertSubscription: (s) =>
      unlessDuplicate(
        first(
          direct.query(insertSubscription, [s.email, s.emailKey, s.name, s.feed, s.status, ms(s.now), ms(s.now)]),
          subscriptionOf
        ),
        Option.none()
      ),
    lockSubscription: (emailKey, feed) => first(direct.query(lockSubscription, [emailKey, feed]), lockedOf),
    mailsSince: (id, since) =>
      Effect.map(direct.query<{ n: unknown }>(mailsSince, [id, ms(since)]), (rows) => Number(rows[0]!.n)),
    updateSubscription: (id, status, now, name) =>
      transaction(Effect.zipRight(
        direct.query(updateSubscription, [status, ms(now), name ?? null, id]),
        Effect.map(byId(id), (rows) => subscriptionOf(rows[0]))
      )),
    queueConfirmation: (id, now) => Effect.asVoid(direct.query(queueConfirmation, [id, ms(now), ms(now)])),
    countSignup: ({ day, feed, id }) => Effect.asVoid(direct.query(countSignup, [day, feed, id % SignupSlots])),
    lockToken: (hash, purpose) => selectToken(hash, purpose, sql.literal("FOR UPDATE")),
    useToken: (hash, now) =>
      Effect.asVoid(sql`UPDATE subscription_tokens SET used_at = ${ms(now)} WHERE hash = ${hash}`),
    voidConfirmations: (id, now) =>
      Effect.asVoid(sql`UPDATE subscription_tokens SET used_at = ${ms(now)}
        WHERE subscription_id = ${id} AND purpose = 'confirm' AND used_at IS NULL`),
    get: (id) => first(byId(id), subscriptionOf),
    lockFeed: (name) =>
      first(
        sql<{ deleted_at: unknown }>`SELECT deleted_at FROM feeds WHERE name = ${name} FOR UPDATE`,
        (r) => ({ deleted: r.deleted_at !== null })
      ),
    insertFeed: (name, title, now) =>
      Effect.map(
        sql`INSERT INTO feeds (name, title, created_at, updated_at) VALUES (${name}, ${title}, ${ms(now)}, ${ms(now)})
          RETURNING ${feedColumns}`,
        (rows) => feedOf(rows[0])
      ),
    replaceFeed: (name, title, now, recreated) =>
      transaction(Effect.zipRight(
        sql`UPDATE feeds SET title = ${title}, updated_at = ${ms(now)}, deleted_at = NULL,
          created_at = ${recreated ? ms(now) : sql.literal("created_at")} WHERE name = ${name}`,
        feedNamed(name)
      )),
    deleteFeed: (name, now) =>
      wrote(sql`UPDATE feeds SET deleted_at = ${ms(now)} WHERE name = ${name} AND deleted_at IS NULL`),
    setFeedStatus: (feed, status, now) =>
      Effect.asVoid(sql`UPDATE subscriptions SET status = ${status}, updated_at = ${ms(now)}
        WHERE feed = ${feed} AND status <> ${status}`),
    voidFeedConfirmations: (feed, now) =>
      Effect.asVoid(sql`UPDATE subscription_tokens SET used_at = ${ms(now)} WHERE purpose = 'confirm'
        AND used_at IS NULL AND subscription_id IN (SELECT id FROM subscriptions WHERE feed = ${feed})`),
    subscriptions: (ids) =>
      ids.length === 0 ? Effect.succeed([]) : Effect.map(
        sql`SELECT ${subscriptionColumns} FROM subscriptions WHERE ${sql.in("id", ids)}`,
        (rows) => rows.map(subscriptionOf)
      ),
    // Both tokens of every mail in one INSERT.
    insertTokens: (mails, now) => {
      const token = (id: number, hash: string, purpose: string, expires: DateTime.Utc | undefined) => ({
        hash,
        subscription_id: id,
        purpose,
        created_at: ms(now),
        expires_at: expires === undefined ? null : ms(expires)
      })
      const rows = mails.flatMap(({ subscriptionId: id, tokens: { confirm, unsubscribe } }) => [
        token(id, confirm.hash, "confirm", confirm.expiresAt),
        token(id, unsubscribe.hash, "unsubscribe", undefined)
      ])
      return rows.length === 0 ? Effect.void : Effect.asVoid(sql`INSERT INTO subscription_tokens ${sql.insert(rows)}`)
    }
  }

  return SubscriptionStorage.of({
    ...unitOfWork<SubscriptionTx>(direct, statements),
    combined: {
      insertSubscriptionAndQueue: (s, day) =>
        direct.script(
          insertSubscriptionAndQueue,
          [s.email, s.emailKey, s.name, s.feed, s.status, ms(s.now), ms(s.now), ms(s.now), ms(s.now), day, s.feed],
          (results) => Option.map(Option.fromNullable((results[0] as Array<unknown>)[0]), subscriptionOf),
          (error, send) => errnoOf(error) === 1062 ? Effect.as(send("ROLLBACK"), Option.none()) : rollBack(error, send)
        ).pipe(Effect.orDie)
    },
    findFeed: (name) => Effect.orDie(first(direct.query(feedByName, [name]), feedOf)),
    listFeeds: listFeeds(sql),
    token: (hash, purpose) => Effect.orDie(selectToken(hash, purpose)),
    claimDue: (now, leaseUntil, limit) =>
      claim(sql, direct, "mail_outbox", sql`next_attempt_at = ${ms(leaseUntil)}`)(
        sql<{ id: number }>`SELECT id, subscription_id, attempts
          FROM mail_outbox FORCE INDEX (mail_outbox_due) WHERE sent_at IS NULL AND next_attempt_at <= ${ms(now)}
          ORDER BY next_attempt_at LIMIT ${limit} FOR UPDATE SKIP LOCKED`
      ).pipe(Effect.map((rows) => rows.map(outboxEntryOf)), Effect.orDie),
    markFailed: (id, nextAttemptAt, reason) =>
      Effect.orDie(sql`UPDATE mail_outbox SET attempts = attempts + 1, last_error = ${reason.slice(0, 500)},
        next_attempt_at = ${nextAttemptAt === undefined ? null : ms(nextAttemptAt)} WHERE id = ${id}`),
    markSentAll: (ids, now) =>
      ids.length === 0 ? Effect.void : Effect.orDie(sql`UPDATE mail_outbox SET sent_at = ${ms(now)},
        next_attempt_at = NULL, last_error = NULL WHERE ${sql.in("id", ids)} AND sent_at IS NULL`),
    listSubscriptions: listSubscriptions(sql),
    signupDays: signupDays(sql),
    eventDays: eventDays(sql),
    // Oldest first, rows another purge holds skipped, in the index's order as a claim's (MariaDbUnitOfWork.ts):
    // (status, updated_at), so a batch reads only the rows it deletes (PurgeMigration.ts); their tokens and outbox
    // rows go with them (ON DELETE CASCADE).
    purge: (status, before, limit) =>
      transaction(Effect.gen(function*() {
        const rows = yield* sql<{ id: number }>`SELECT id FROM subscriptions FORCE INDEX (subscriptions_status_updated)
          WHERE status = ${status} AND updated_at < ${ms(before)} ORDER BY updated_at LIMIT ${limit}
          FOR UPDATE SKIP LOCKED`
        if (rows.length > 0) yield* sql`DELETE FROM subscriptions WHERE ${sql.in("id", rows.map((r) => r.id))}`
        return rows.length
      })).pipe(Effect.orDie),
    ...consoleReads(sql)
  })
})

export const layer = Layer.effect(SubscriptionStorage, make)
