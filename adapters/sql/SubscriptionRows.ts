import type { SqlClient } from "@effect/sql/SqlClient"
import { DateTime, Effect, Option } from "effect"
import { Feed } from "../../core/subscriptions/Feed.ts"
import { Subscription, SubscriptionId, type SubscriptionStatus } from "../../core/subscriptions/Subscription.ts"
import type {
  ConfirmationLink,
  FailingMail,
  OutboxSummary,
  StatusCounts,
  StoredToken,
  SubscriberHistory,
  SubscriberMail,
  SubscriptionStorageShape
} from "../../core/subscriptions/SubscriptionStorage.ts"
import type { OutboxEntry } from "../../core/subscriptions/SubscriptionStore.ts"
import { millisOf, timeOf } from "./Dialect.ts"

// Row mapping of the subscription stores (SQLite, PostgreSQL and MariaDB): the columns they read and the domain
// values those rows become.

// A time column as read back, as a DateTime.
const utcOf = (value: unknown) => DateTime.unsafeMake(millisOf(value))
const idOf = (value: unknown) => SubscriptionId.make(Number(value), { disableValidation: true })
export const SubscriptionColumns = "id, name, email, feed, status, created_at, updated_at"
// A row this store wrote, through the constraints of its table: mapped, not validated again.
export const subscriptionOf = (row: any) =>
  new Subscription({
    id: idOf(row.id),
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

const utcOrUndefined = (value: unknown) => (value === null || value === undefined ? undefined : utcOf(value))
export const tokenOf = (row: any): StoredToken => ({
  subscriptionId: idOf(row.subscription_id),
  expiresAt: utcOrUndefined(row.expires_at),
  usedAt: utcOrUndefined(row.used_at)
})

// What lockSubscription answers, and an outbox row a claim took.
export const lockedOf = (row: any) => ({ id: idOf(row.id), status: row.status as SubscriptionStatus })
export const outboxEntryOf = (row: any): OutboxEntry => ({
  id: Number(row.id),
  subscriptionId: idOf(row.subscription_id),
  attempts: Number(row.attempts)
})

// The live feeds and when any feed last changed (a deletion included), and a page of subscriptions, through
// @effect/sql: the PostgreSQL and MariaDB stores' `listFeeds` and `listSubscriptions`.
export const listFeeds = (sql: SqlClient): SubscriptionStorageShape["listFeeds"] =>
  Effect.gen(function*() {
    const rows = yield* sql`SELECT ${sql.literal(FeedColumns)} FROM feeds WHERE deleted_at IS NULL ORDER BY name`
    const changed = yield* sql<{ at: unknown }>`
      SELECT max(CASE WHEN deleted_at IS NULL THEN updated_at ELSE deleted_at END) AS at FROM feeds`
    return { feeds: rows.map(feedOf), lastModified: utcOf(changed[0]?.at ?? 0) }
  }).pipe(Effect.orDie)

export const listSubscriptions =
  (sql: SqlClient): SubscriptionStorageShape["listSubscriptions"] => ({ feed, limit, startingAfter, status }) =>
    sql`SELECT ${sql.literal(SubscriptionColumns)} FROM subscriptions WHERE id > ${startingAfter ?? 0}
      ${feed === undefined ? sql.literal("") : sql`AND feed = ${feed}`}
      ${status === undefined ? sql.literal("") : sql`AND status = ${status}`}
      ORDER BY id LIMIT ${limit}`.pipe(Effect.map((rows) => rows.map(subscriptionOf)), Effect.orDie)

// The list owner's console's reads (SubscriptionStorage's countByStatus to failingMails): one text of SQL for
// every database, as SQLite prepares it (`?`) and as the server stores send it through @effect/sql.
export const ConsoleStatements = {
  countByStatus: "SELECT status, count(*) AS n FROM subscriptions WHERE feed = ? GROUP BY status",
  byEmailKey: `SELECT ${SubscriptionColumns} FROM subscriptions WHERE email_key = ? AND feed = ?`,
  mails: `SELECT id, created_at, attempts, next_attempt_at, sent_at, last_error FROM mail_outbox
    WHERE subscription_id = ? ORDER BY created_at DESC LIMIT 100`,
  links: `SELECT created_at, expires_at, used_at FROM subscription_tokens
    WHERE subscription_id = ? AND purpose = 'confirm'`,
  outbox: `SELECT
    (SELECT count(*) FROM mail_outbox WHERE sent_at IS NULL AND next_attempt_at IS NOT NULL) AS queued,
    (SELECT count(*) FROM mail_outbox WHERE sent_at >= ?) AS sent,
    (SELECT count(*) FROM mail_outbox WHERE sent_at IS NULL AND attempts > 0) AS failing`,
  failing: `SELECT o.id, o.subscription_id, o.created_at, o.attempts, o.next_attempt_at, o.sent_at, o.last_error,
    s.email, s.feed FROM mail_outbox o JOIN subscriptions s ON s.id = o.subscription_id
    WHERE o.sent_at IS NULL AND o.attempts > 0 ORDER BY o.attempts DESC, o.id DESC LIMIT ?`
} as const

export const countsOf = (rows: ReadonlyArray<any>): StatusCounts => {
  const counts = { pending: 0, active: 0, unsubscribed: 0 }
  for (const row of rows) counts[row.status as SubscriptionStatus] = Number(row.n)
  return counts
}
export const mailOf = (row: any): SubscriberMail => ({
  id: Number(row.id),
  queuedAt: utcOf(row.created_at),
  attempts: Number(row.attempts),
  nextAttemptAt: utcOrUndefined(row.next_attempt_at),
  sentAt: utcOrUndefined(row.sent_at),
  lastError: row.last_error ?? undefined
})
export const linkOf = (row: any): ConfirmationLink => ({
  createdAt: utcOf(row.created_at),
  expiresAt: utcOrUndefined(row.expires_at),
  usedAt: utcOrUndefined(row.used_at)
})
export const historyOf = (mails: ReadonlyArray<any>, links: ReadonlyArray<any>): SubscriberHistory => ({
  mails: mails.map(mailOf),
  links: links.map(linkOf).sort((a, b) => DateTime.toEpochMillis(b.createdAt) - DateTime.toEpochMillis(a.createdAt))
})
export const outboxSummaryOf = (row: any): OutboxSummary => ({
  queued: Number(row.queued),
  sentSince: Number(row.sent),
  failing: Number(row.failing)
})
export const failingMailOf = (row: any): FailingMail => ({
  ...mailOf(row),
  subscriptionId: idOf(row.subscription_id),
  email: row.email,
  feed: row.feed
})

// The same reads through @effect/sql: the PostgreSQL and MariaDB stores'.
export const consoleReads = (sql: SqlClient) => {
  const run = (text: string, params: ReadonlyArray<unknown>) =>
    Effect.orDie(sql.unsafe<any>(sql.onDialectOrElse({ pg: () => numbered(text), orElse: () => text }), params))
  const at = (t: DateTime.Utc) => timeOf(sql, DateTime.toEpochMillis(t))
  return {
    countByStatus: (feed) => Effect.map(run(ConsoleStatements.countByStatus, [feed]), countsOf),
    subscriptionByEmailKey: (emailKey, feed) =>
      Effect.map(
        run(ConsoleStatements.byEmailKey, [emailKey, feed]),
        (rows) => rows.length === 0 ? Option.none() : Option.some(subscriptionOf(rows[0]))
      ),
    history: (id) => Effect.zipWith(run(ConsoleStatements.mails, [id]), run(ConsoleStatements.links, [id]), historyOf),
    outboxSummary: (since) =>
      Effect.map(run(ConsoleStatements.outbox, [at(since)]), (rows) => outboxSummaryOf(rows[0])),
    failingMails: (limit) => Effect.map(run(ConsoleStatements.failing, [limit]), (rows) => rows.map(failingMailOf))
  } satisfies Pick<
    SubscriptionStorageShape,
    "countByStatus" | "subscriptionByEmailKey" | "history" | "outboxSummary" | "failingMails"
  >
}

// `?` placeholders as PostgreSQL's $1, $2, ...
const numbered = (text: string) => {
  let n = 0
  return text.replace(/\?/g, () => `$${++n}`)
}
