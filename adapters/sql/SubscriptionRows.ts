import type { SqlClient } from "@effect/sql/SqlClient"
import { DateTime, Effect } from "effect"
import { Feed } from "../../core/subscriptions/Feed.ts"
import { Subscription, SubscriptionId, type SubscriptionStatus } from "../../core/subscriptions/Subscription.ts"
import type { StoredToken, SubscriptionStorageShape } from "../../core/subscriptions/SubscriptionStorage.ts"
import type { OutboxEntry } from "../../core/subscriptions/SubscriptionStore.ts"
import { millisOf } from "./Dialect.ts"

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
