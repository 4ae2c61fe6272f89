import { DateTime } from "effect"
import { Feed } from "../../core/subscriptions/Feed.ts"
import { Subscription, SubscriptionId } from "../../core/subscriptions/Subscription.ts"
import type { StoredToken } from "../../core/subscriptions/SubscriptionStorage.ts"
import { millisOf } from "./Dialect.ts"

// Row mapping of the subscription stores (SQLite and PostgreSQL): the columns they read and the domain values
// those rows become.

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

const utcOrUndefined = (value: unknown) => (value === null || value === undefined ? undefined : utcOf(value))
export const tokenOf = (row: any): StoredToken => ({
  subscriptionId: SubscriptionId.make(Number(row.subscription_id), { disableValidation: true }),
  expiresAt: utcOrUndefined(row.expires_at),
  usedAt: utcOrUndefined(row.used_at)
})
