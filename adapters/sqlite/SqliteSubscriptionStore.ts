import { DateTime, Effect, Layer, Option } from "effect"
import { AwaitsConfirmation, SubscriptionStatus } from "../../core/subscriptions/Subscription.ts"
import { SubscriptionStorage, type SubscriptionTx } from "../../core/subscriptions/SubscriptionStorage.ts"
import { type DayCountRow, SqliteEventDays, SqliteSignupDays, toDayCount } from "../sql/DayRows.ts"
import { sqlStrings } from "../sql/Dialect.ts"
import { sqliteEventStatements } from "../sql/EventRows.ts"
import {
  ConsoleStatements as Console,
  countsOf,
  failingMailOf,
  FeedColumns,
  feedOf,
  historyOf,
  lockedOf,
  outboxEntryOf,
  outboxSummaryOf,
  SubscriptionColumns,
  subscriptionOf,
  tokenOf
} from "../sql/SubscriptionRows.ts"
import { SqliteDirect } from "./SqliteClient.ts"
import { read, type Statements, unitOfWork, write } from "./SqliteUnitOfWork.ts"

// The subscription storage on SQLite: statements over SqliteDirect, in the client's group commit. Statement
// texts are made once: each is also the key of its prepared statement, hashed on every lookup.

const millis = DateTime.toEpochMillis
const feedByName = `SELECT ${FeedColumns} FROM feeds WHERE name = ? AND deleted_at IS NULL`
const liveFeeds = `SELECT ${FeedColumns} FROM feeds WHERE deleted_at IS NULL ORDER BY name`
const feedsChanged = `SELECT max(CASE WHEN deleted_at IS NULL THEN updated_at ELSE deleted_at END) AS at FROM feeds`
const feedState = `SELECT deleted_at FROM feeds WHERE name = ?`
const insertFeed = `INSERT INTO feeds (name, title, created_at, updated_at) VALUES (?, ?, ?, ?)
  RETURNING ${FeedColumns}`
const replaceFeed = `UPDATE feeds SET title = ?, updated_at = ?, deleted_at = NULL,
  created_at = CASE WHEN ? = 1 THEN ? ELSE created_at END WHERE name = ? RETURNING ${FeedColumns}`
const deleteFeed = `UPDATE feeds SET deleted_at = ? WHERE name = ? AND deleted_at IS NULL`
const setFeedStatus = `UPDATE subscriptions SET status = ?, updated_at = ? WHERE feed = ? AND status <> ?`
const voidFeedConfirmations = `UPDATE subscription_tokens SET used_at = ?
  WHERE purpose = 'confirm' AND used_at IS NULL AND subscription_id IN (SELECT id FROM subscriptions WHERE feed = ?)`
const insertSubscription = `INSERT INTO subscriptions (email, email_key, name, feed, status, created_at, updated_at)
  VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (email_key, feed) DO NOTHING RETURNING ${SubscriptionColumns}`
const existing = `SELECT id, status FROM subscriptions WHERE email_key = ? AND feed = ?`
const mailsSince = `SELECT count(*) AS n FROM mail_outbox WHERE subscription_id = ? AND created_at > ?`
const update = `UPDATE subscriptions SET status = ?, updated_at = ?, name = coalesce(?, name)
  WHERE id = ? RETURNING ${SubscriptionColumns}`
const queue = `INSERT INTO mail_outbox (kind, subscription_id, created_at, next_attempt_at)
  VALUES ('confirmation', ?, ?, ?)`
// One row a day and feed (slot 0): SQLite writes one transaction at a time (adapters/sql/DayRows.ts).
const countSignup = `INSERT INTO signup_days (day, feed, slot, signups) VALUES (?, ?, 0, 1)
  ON CONFLICT (day, feed, slot) DO UPDATE SET signups = signups + 1`
const byId = `SELECT ${SubscriptionColumns} FROM subscriptions WHERE id = ?`
const tokenByHash =
  `SELECT subscription_id, expires_at, used_at FROM subscription_tokens WHERE hash = ? AND purpose = ?`
const useToken = `UPDATE subscription_tokens SET used_at = ? WHERE hash = ?`
const voidConfirmations = `UPDATE subscription_tokens SET used_at = ?
  WHERE subscription_id = ? AND purpose = 'confirm' AND used_at IS NULL`
const insertTokens = `INSERT INTO subscription_tokens (hash, subscription_id, purpose, created_at, expires_at)
  VALUES (?, ?, 'confirm', ?, ?), (?, ?, 'unsubscribe', ?, NULL)`
const dueMails = `SELECT id, subscription_id, attempts FROM mail_outbox
  WHERE sent_at IS NULL AND next_attempt_at <= ? ORDER BY next_attempt_at LIMIT ?`
const lease = `UPDATE mail_outbox SET next_attempt_at = ? WHERE id = ?`
const sent = `UPDATE mail_outbox SET sent_at = ?, next_attempt_at = NULL, last_error = NULL
  WHERE id = ? AND sent_at IS NULL`
const failed = `UPDATE mail_outbox SET attempts = attempts + 1, next_attempt_at = ?, last_error = ? WHERE id = ?`
// Oldest first; their tokens and outbox rows go with them (ON DELETE CASCADE). The pending ones are read through
// their partial index, named, its status written in: without statistics SQLite takes (status, id) for an equality
// on the status, and sorts every pending subscriber to delete a batch of them (a bound status cannot name the
// partial index: SQLite must see at prepare time that its condition holds).
const purges = Object.fromEntries(
  SubscriptionStatus.literals.map((status) => [
    status,
    `DELETE FROM subscriptions WHERE id IN (SELECT id FROM subscriptions${
      status === AwaitsConfirmation ? " INDEXED BY subscriptions_pending" : ""
    } WHERE status = ${sqlStrings([status])} AND updated_at < ? ORDER BY updated_at LIMIT ?)`
  ])
) as Record<SubscriptionStatus, string>
// One statement text per combination of filters (four), each kept prepared.
const listQuery = (feed: boolean, status: boolean) =>
  `SELECT ${SubscriptionColumns} FROM subscriptions WHERE id > ?${feed ? " AND feed = ?" : ""}${
    status ? " AND status = ?" : ""
  } ORDER BY id LIMIT ?`

const statements: Statements<SubscriptionTx> = {
  ...sqliteEventStatements,
  insertSubscription: (db, s) => {
    const at = millis(s.now)
    const row = db.get(insertSubscription, [s.email, s.emailKey, s.name, s.feed, s.status, at, at])
    return Option.map(Option.fromNullable(row), subscriptionOf)
  },
  lockSubscription: (db, emailKey, feed) =>
    Option.map(Option.fromNullable(db.get(existing, [emailKey, feed])), lockedOf),
  mailsSince: (db, id, since) => Number(db.get<{ n: number }>(mailsSince, [id, millis(since)])!.n),
  updateSubscription: (db, id, status, now, name) =>
    subscriptionOf(db.get(update, [status, millis(now), name ?? null, id])),
  queueConfirmation: (db, id, now) => void db.run(queue, [id, millis(now), millis(now)]),
  countSignup: (db, { day, feed }) => void db.run(countSignup, [day, feed]),
  lockToken: (db, hash, purpose) => Option.map(Option.fromNullable(db.get(tokenByHash, [hash, purpose])), tokenOf),
  useToken: (db, hash, now) => void db.run(useToken, [millis(now), hash]),
  voidConfirmations: (db, id, now) => void db.run(voidConfirmations, [millis(now), id]),
  get: (db, id) => Option.map(Option.fromNullable(db.get(byId, [id])), subscriptionOf),
  lockFeed: (db, name) =>
    Option.map(Option.fromNullable(db.get<{ deleted_at: number | null }>(feedState, [name])), (r) => ({
      deleted: r.deleted_at !== null
    })),
  insertFeed: (db, name, title, now) => feedOf(db.get(insertFeed, [name, title, millis(now), millis(now)])),
  replaceFeed: (db, name, title, now, recreated) =>
    feedOf(db.get(replaceFeed, [title, millis(now), recreated ? 1 : 0, millis(now), name])),
  deleteFeed: (db, name, now) => db.run(deleteFeed, [millis(now), name]) > 0,
  setFeedStatus: (db, feed, status, now) => void db.run(setFeedStatus, [status, millis(now), feed, status]),
  voidFeedConfirmations: (db, feed, now) => void db.run(voidFeedConfirmations, [millis(now), feed]),
  subscriptions: (db, ids) => ids.flatMap((id) => db.all(byId, [id]).map(subscriptionOf)),
  insertTokens: (db, mails, now) => {
    const at = millis(now)
    for (const { subscriptionId: id, tokens } of mails) {
      db.run(insertTokens, [
        tokens.confirm.hash,
        id,
        at,
        millis(tokens.confirm.expiresAt),
        tokens.unsubscribe.hash,
        id,
        at
      ])
    }
  }
}

export const layer = Layer.effect(
  SubscriptionStorage,
  Effect.gen(function*() {
    const direct = yield* SqliteDirect
    const reading = read(direct)
    const writing = write(direct)
    return SubscriptionStorage.of({
      ...unitOfWork<SubscriptionTx>(direct, statements, [
        "lockSubscription",
        "mailsSince",
        "lockToken",
        "get",
        "lockFeed",
        "subscriptions",
        "liveEndpoints"
      ]),
      findFeed: (name) => reading((db) => Option.map(Option.fromNullable(db.get(feedByName, [name])), feedOf)),
      listFeeds: reading((db) => ({
        feeds: db.all(liveFeeds, []).map(feedOf),
        lastModified: DateTime.unsafeMake(Number(db.get<{ at: number | null }>(feedsChanged, [])?.at ?? 0))
      })),
      token: (hash, purpose) =>
        reading((db) => Option.map(Option.fromNullable(db.get(tokenByHash, [hash, purpose])), tokenOf)),
      // The rows taken are leased until leaseUntil: no other claim, here or in another process, sees them due
      // before then.
      claimDue: (now, leaseUntil, limit) =>
        writing((db) =>
          db.all<{ id: number }>(dueMails, [millis(now), limit]).map((row) => {
            db.run(lease, [millis(leaseUntil), row.id])
            return outboxEntryOf(row)
          })
        ),
      markFailed: (id, nextAttemptAt, reason) =>
        writing((db) =>
          void db.run(failed, [nextAttemptAt === undefined ? null : millis(nextAttemptAt), reason.slice(0, 500), id])
        ),
      markSentAll: (ids, now) =>
        writing((db) => {
          for (const id of ids) db.run(sent, [millis(now), id])
        }),
      listSubscriptions: ({ feed, limit, startingAfter, status }) =>
        reading((db) =>
          db.all(listQuery(feed !== undefined, status !== undefined), [
            startingAfter ?? 0,
            ...(feed === undefined ? [] : [feed]),
            ...(status === undefined ? [] : [status]),
            limit
          ]).map(subscriptionOf)
        ),
      signupDays: (from, before) =>
        reading((db) => db.all<DayCountRow>(SqliteSignupDays, [from, before]).map(toDayCount<"signup">)),
      eventDays: (owner, from, before) =>
        reading((db) => db.all<DayCountRow>(SqliteEventDays, [owner, millis(from), millis(before)]).map(toDayCount)),
      purge: (status, before, limit) => writing((db) => db.run(purges[status], [millis(before), limit])),
      countByStatus: (feed) => reading((db) => countsOf(db.all(Console.countByStatus, [feed]))),
      subscriptionByEmailKey: (emailKey, feed) =>
        reading((db) => Option.map(Option.fromNullable(db.get(Console.byEmailKey, [emailKey, feed])), subscriptionOf)),
      history: (id) => reading((db) => historyOf(db.all(Console.mails, [id]), db.all(Console.links, [id]))),
      outboxSummary: (since) => reading((db) => outboxSummaryOf(db.get(Console.outbox, [millis(since)]))),
      failingMails: (limit) => reading((db) => db.all(Console.failing, [limit]).map(failingMailOf))
    })
  })
)
