import { DateTime, Effect, Layer, Option } from "effect"
import { Feed } from "../../core/subscriptions/Feed.ts"
import { Subscription, SubscriptionId } from "../../core/subscriptions/Subscription.ts"
import {
  type StoredToken,
  SubscriptionStorage,
  type SubscriptionTx
} from "../../core/subscriptions/SubscriptionStorage.ts"
import { atomically, MemoryDatabase, millis, type Statements, type Tables, unitOfWork } from "./MemoryDatabase.ts"
import { dayCounts } from "./MemoryDays.ts"
import { memoryEventStatements } from "./MemoryEvents.ts"

// The subscription storage in memory: the same port as the databases', over MemoryDatabase's tables, with
// the same uniqueness (an email key per feed, a token hash) checked where the databases have constraints.

const subscriptionId = (n: number) => SubscriptionId.make(n, { disableValidation: true })
const tokenOf = (row: NonNullable<ReturnType<Tables["tokens"]["get"]>>): StoredToken => ({
  subscriptionId: subscriptionId(row.subscriptionId),
  expiresAt: row.expiresAt,
  usedAt: row.usedAt
})
type OutboxRow = NonNullable<ReturnType<Tables["outbox"]["get"]>>
const mailOf = (id: number, m: OutboxRow) => ({
  id,
  queuedAt: m.createdAt,
  attempts: m.attempts,
  nextAttemptAt: m.nextAttemptAt,
  sentAt: m.sentAt,
  lastError: m.lastError
})
const failing = (m: OutboxRow) => m.sentAt === undefined && m.attempts > 0
const withStatus = (s: Subscription, fields: Partial<Subscription>) => new Subscription({ ...s, ...fields }, true)
const voidConfirmations = (t: Tables, now: DateTime.Utc, of: (subscriptionId: number) => boolean) => {
  for (const [hash, token] of t.tokens) {
    if (token.purpose === "confirm" && token.usedAt === undefined && of(token.subscriptionId)) {
      t.tokens.set(hash, { ...token, usedAt: now })
    }
  }
}
const insertToken = (t: Tables, hash: string, row: Parameters<Tables["tokens"]["set"]>[1]) => {
  if (t.tokens.has(hash)) throw new Error("token hash exists")
  t.tokens.set(hash, row)
}

const statements: Statements<SubscriptionTx> = {
  ...memoryEventStatements,
  insertSubscription: (t, s) => {
    for (const row of t.subscriptions.values()) {
      if (row.emailKey === s.emailKey && row.subscription.feed === s.feed) return Option.none()
    }
    const id = subscriptionId(++t.serials.subscription)
    const subscription = new Subscription({
      id,
      name: s.name,
      email: s.email,
      feed: s.feed,
      status: s.status,
      createdAt: s.now,
      updatedAt: s.now
    }, true)
    t.subscriptions.set(id, { subscription, emailKey: s.emailKey })
    return Option.some(subscription)
  },
  lockSubscription: (t, emailKey, feed) => {
    for (const row of t.subscriptions.values()) {
      if (row.emailKey === emailKey && row.subscription.feed === feed) {
        return Option.some({ id: row.subscription.id, status: row.subscription.status })
      }
    }
    return Option.none()
  },
  mailsSince: (t, id, since) =>
    [...t.outbox.values()].filter((m) => m.subscriptionId === id && millis(m.createdAt) > millis(since)).length,
  updateSubscription: (t, id, status, now, name) => {
    const row = t.subscriptions.get(id)!
    const subscription = withStatus(row.subscription, {
      status,
      updatedAt: now,
      ...(name === undefined ? {} : { name })
    })
    t.subscriptions.set(id, { ...row, subscription })
    return subscription
  },
  queueConfirmation: (t, id, now) => {
    const outboxId = ++t.serials.outbox
    t.outbox.set(outboxId, { subscriptionId: id, createdAt: now, nextAttemptAt: now, attempts: 0 })
  },
  countSignup: (t, { day, feed }) => {
    const key = `${day} ${feed}`
    t.signupDays.set(key, { day, feed, signups: (t.signupDays.get(key)?.signups ?? 0) + 1 })
  },
  lockToken: (t, hash, purpose) => {
    const row = t.tokens.get(hash)
    return row === undefined || row.purpose !== purpose ? Option.none() : Option.some(tokenOf(row))
  },
  useToken: (t, hash, now) => {
    const row = t.tokens.get(hash)
    if (row !== undefined) t.tokens.set(hash, { ...row, usedAt: now })
  },
  voidConfirmations: (t, id, now) => voidConfirmations(t, now, (s) => s === id),
  get: (t, id) => Option.map(Option.fromNullable(t.subscriptions.get(id)), (r) => r.subscription),
  lockFeed: (t, name) =>
    Option.map(Option.fromNullable(t.feeds.get(name)), (r) => ({ deleted: r.deletedAt !== undefined })),
  insertFeed: (t, name, title, now) => {
    if (t.feeds.has(name)) throw new Error("feed exists")
    const feed = new Feed({ name, title, createdAt: now, updatedAt: now }, true)
    t.feeds.set(name, { feed })
    return feed
  },
  replaceFeed: (t, name, title, now, recreated) => {
    const old = t.feeds.get(name)!.feed
    const feed = new Feed({ name, title, createdAt: recreated ? now : old.createdAt, updatedAt: now }, true)
    t.feeds.set(name, { feed })
    return feed
  },
  deleteFeed: (t, name, now) => {
    const row = t.feeds.get(name)
    if (row === undefined || row.deletedAt !== undefined) return false
    t.feeds.set(name, { ...row, deletedAt: now })
    return true
  },
  setFeedStatus: (t, feed, status, now) => {
    for (const [id, row] of t.subscriptions) {
      if (row.subscription.feed === feed && row.subscription.status !== status) {
        t.subscriptions.set(id, { ...row, subscription: withStatus(row.subscription, { status, updatedAt: now }) })
      }
    }
  },
  voidFeedConfirmations: (t, feed, now) =>
    voidConfirmations(t, now, (id) => t.subscriptions.get(id)?.subscription.feed === feed),
  subscriptions: (t, ids) => ids.flatMap((id) => Option.toArray(statements.get(t, id))),
  insertTokens: (t, mails, now) => {
    for (const { subscriptionId: id, tokens } of mails) {
      insertToken(t, tokens.confirm.hash, {
        subscriptionId: id,
        purpose: "confirm",
        createdAt: now,
        expiresAt: tokens.confirm.expiresAt
      })
      insertToken(t, tokens.unsubscribe.hash, { subscriptionId: id, purpose: "unsubscribe", createdAt: now })
    }
  }
}

export const layer = Layer.effect(
  SubscriptionStorage,
  Effect.gen(function*() {
    const db = yield* MemoryDatabase
    const t = db.tables
    const read = <A>(f: () => A) => atomically(db, Effect.sync(f))
    const live = () => [...t.feeds.values()].filter((r) => r.deletedAt === undefined).map((r) => r.feed)
    return SubscriptionStorage.of({
      ...unitOfWork<SubscriptionTx>(db, statements),
      findFeed: (name) => read(() => Option.fromNullable(live().find((f) => f.name === name))),
      listFeeds: read(() => ({
        feeds: live().sort((a, b) => (a.name < b.name ? -1 : 1)),
        lastModified: DateTime.unsafeMake(
          Math.max(0, ...[...t.feeds.values()].map((r) => millis(r.deletedAt ?? r.feed.updatedAt)))
        )
      })),
      token: (hash, purpose) => read(() => statements.lockToken(t, hash, purpose)),
      claimDue: (now, leaseUntil, limit) =>
        read(() => {
          const due = [...t.outbox].filter(([, m]) =>
            m.sentAt === undefined && m.nextAttemptAt !== undefined && millis(m.nextAttemptAt) <= millis(now)
          ).sort(([i, a], [j, b]) => millis(a.nextAttemptAt!) - millis(b.nextAttemptAt!) || i - j).slice(0, limit)
          for (const [id, m] of due) t.outbox.set(id, { ...m, nextAttemptAt: leaseUntil })
          return due.map(([id, m]) => ({ id, subscriptionId: subscriptionId(m.subscriptionId), attempts: m.attempts }))
        }),
      markFailed: (id, nextAttemptAt, reason) =>
        read(() => {
          const m = t.outbox.get(id)
          if (m === undefined) return
          const { nextAttemptAt: _, ...rest } = m
          t.outbox.set(id, {
            ...rest,
            attempts: m.attempts + 1,
            lastError: reason.slice(0, 500),
            ...(nextAttemptAt === undefined ? {} : { nextAttemptAt })
          })
        }),
      markSentAll: (ids, now) =>
        read(() => {
          for (const id of ids) {
            const m = t.outbox.get(id)
            if (m === undefined || m.sentAt !== undefined) continue
            const { lastError: _e, nextAttemptAt: _n, ...rest } = m
            t.outbox.set(id, { ...rest, sentAt: now })
          }
        }),
      signupDays: (from, before) =>
        read(() => {
          const perDay = new Map<number, number>()
          for (const { day, signups } of t.signupDays.values()) {
            if (day >= from && day < before) perDay.set(day, (perDay.get(day) ?? 0) + signups)
          }
          return [...perDay].map(([day, count]) => ({ day, kind: "signup" as const, count }))
        }),
      eventDays: (owner, from, before) =>
        read(() =>
          dayCounts(
            [...t.events.values()].filter((e) => e.owner === owner).map((e) => ({
              createdAt: e.createdAt,
              kind: e.type
            })),
            from,
            before
          )
        ),
      listSubscriptions: ({ feed, limit, startingAfter, status }) =>
        read(() =>
          [...t.subscriptions.values()].map((r) => r.subscription).filter((s) =>
            s.id > (startingAfter ?? 0) && (feed === undefined || s.feed === feed) &&
            (status === undefined || s.status === status)
          ).sort((a, b) => a.id - b.id).slice(0, limit)
        ),
      // With their tokens and outbox rows, as ON DELETE CASCADE takes them.
      purge: (status, before, limit) =>
        read(() => {
          const old = [...t.subscriptions.values()].map((r) => r.subscription)
            .filter((s) => s.status === status && millis(s.updatedAt) < millis(before))
            .sort((a, b) => millis(a.updatedAt) - millis(b.updatedAt)).slice(0, limit)
          const gone = new Set<number>(old.map((s) => s.id))
          for (const id of gone) t.subscriptions.delete(id)
          for (const [hash, token] of t.tokens) if (gone.has(token.subscriptionId)) t.tokens.delete(hash)
          for (const [id, m] of t.outbox) if (gone.has(m.subscriptionId)) t.outbox.delete(id)
          return old.length
        }),
      countByStatus: (feed) =>
        read(() => {
          const counts = { pending: 0, active: 0, unsubscribed: 0 }
          for (const { subscription: s } of t.subscriptions.values()) if (s.feed === feed) counts[s.status]++
          return counts
        }),
      subscriptionByEmailKey: (emailKey, feed) =>
        read(() => Option.flatMap(statements.lockSubscription(t, emailKey, feed), ({ id }) => statements.get(t, id))),
      history: (id) =>
        read(() => ({
          mails: [...t.outbox].filter(([, m]) => m.subscriptionId === id)
            .sort(([i, a], [j, b]) => millis(b.createdAt) - millis(a.createdAt) || j - i).slice(0, 100)
            .map(([mailId, m]) => mailOf(mailId, m)),
          links: [...t.tokens.values()].filter((k) => k.subscriptionId === id && k.purpose === "confirm")
            .sort((a, b) => millis(b.createdAt) - millis(a.createdAt))
            .map((k) => ({ createdAt: k.createdAt, expiresAt: k.expiresAt, usedAt: k.usedAt }))
        })),
      outboxSummary: (since) =>
        read(() => {
          const rows = [...t.outbox.values()]
          return {
            queued: rows.filter((m) => m.sentAt === undefined && m.nextAttemptAt !== undefined).length,
            sentSince: rows.filter((m) => m.sentAt !== undefined && millis(m.sentAt) >= millis(since)).length,
            failing: rows.filter(failing).length
          }
        }),
      failingMails: (limit) =>
        read(() =>
          [...t.outbox].filter(([, m]) => failing(m)).sort(([i, a], [j, b]) => b.attempts - a.attempts || j - i)
            .slice(0, limit).map(([id, m]) => {
              const { email, feed } = t.subscriptions.get(m.subscriptionId)!.subscription
              return { ...mailOf(id, m), subscriptionId: subscriptionId(m.subscriptionId), email, feed }
            })
        )
    })
  })
)
