import { Context, DateTime, Effect, Exit, Layer } from "effect"
import type { KeyRecord } from "../../core/payments/Idempotency.ts"
import type { BalanceChange } from "../../core/payments/Ledger.ts"
import type { Refund } from "../../core/payments/Refund.ts"
import type { Transfer, UnsettledRule } from "../../core/payments/Transfer.ts"
import type { ApiClient } from "../../core/payments/TransferStore.ts"
import { DefaultFeed, Feed } from "../../core/subscriptions/Feed.ts"
import type { Subscription } from "../../core/subscriptions/Subscription.ts"
import type { TokenPurpose } from "../../core/subscriptions/Token.ts"
import type { NewEvent } from "../../core/webhooks/Events.ts"
import type { AttemptState, WebhookEndpoint } from "../../core/webhooks/Webhooks.ts"

// The tables of the in-memory storage adapters: one process's memory, for tests and trials. Rows are
// immutable values (a change sets a new row), so that a snapshot of the maps is a snapshot of the data and a
// failed transaction can be undone by putting the snapshot back. One lock (a semaphore of one) serialises
// transactions and single operations, as SQLite's write lock does.
export interface Tables {
  clients: Map<string, ApiClient & { readonly keyHash: string; readonly createdAt: DateTime.Utc }>
  transfers: Map<
    string,
    { readonly transfer: Transfer; readonly reconcileAt?: DateTime.Utc; readonly attempts: number }
  >
  keys: Map<string, KeyRecord & { readonly client: string }>
  refunds: Map<string, { readonly refund: Refund; readonly reconcileAt?: DateTime.Utc; readonly attempts: number }>
  // Balances, keyed by client, recipient merchant and currency.
  balances: Map<string, BalanceChange>
  feeds: Map<string, { readonly feed: Feed; readonly deletedAt?: DateTime.Utc }>
  subscriptions: Map<number, { readonly subscription: Subscription; readonly emailKey: string }>
  tokens: Map<string, {
    readonly subscriptionId: number
    readonly purpose: TokenPurpose
    readonly createdAt: DateTime.Utc
    readonly expiresAt?: DateTime.Utc
    readonly usedAt?: DateTime.Utc
  }>
  outbox: Map<number, {
    readonly subscriptionId: number
    readonly createdAt: DateTime.Utc
    readonly nextAttemptAt?: DateTime.Utc
    readonly sentAt?: DateTime.Utc
    readonly attempts: number
    readonly lastError?: string
  }>
  // Signups counted per UTC day and feed, keyed by both.
  signupDays: Map<string, { readonly day: number; readonly feed: string; readonly signups: number }>
  endpoints: Map<string, WebhookEndpoint & { readonly secret: string; readonly retryAt?: DateTime.Utc }>
  events: Map<string, NewEvent>
  deliveries: Map<number, {
    readonly id: number
    readonly eventId: string
    readonly endpointId: string
    readonly createdAt: DateTime.Utc
    readonly nextAttemptAt: DateTime.Utc
    readonly deliveredAt?: DateTime.Utc
    readonly attempts: number
    readonly lastError?: string
    // Its attempts, oldest first (the SQL stores' webhook_attempts): they go with the delivery.
    readonly history?: ReadonlyArray<AttemptState>
  }>
  // Secrets the service keeps for itself (ServiceSecrets), by name.
  secrets: Map<string, string>
  // The last id given per serial column.
  serials: { subscription: number; outbox: number; delivery: number }
}

export interface MemoryDatabaseShape {
  readonly tables: Tables
  readonly lock: Effect.Semaphore
}
export class MemoryDatabase extends Context.Tag("MemoryDatabase")<MemoryDatabase, MemoryDatabaseShape>() {}

const copy = (t: Tables): Tables => ({
  clients: new Map(t.clients),
  transfers: new Map(t.transfers),
  keys: new Map(t.keys),
  refunds: new Map(t.refunds),
  balances: new Map(t.balances),
  feeds: new Map(t.feeds),
  subscriptions: new Map(t.subscriptions),
  tokens: new Map(t.tokens),
  outbox: new Map(t.outbox),
  signupDays: new Map(t.signupDays),
  endpoints: new Map(t.endpoints),
  events: new Map(t.events),
  deliveries: new Map(t.deliveries),
  secrets: new Map(t.secrets),
  serials: { ...t.serials }
})

// A new database, migrated: it has the default feed, as the SQL migrations make it.
export const layer = Layer.effect(
  MemoryDatabase,
  Effect.gen(function*() {
    const now = yield* DateTime.now
    const tables = copy({
      clients: new Map(),
      transfers: new Map(),
      keys: new Map(),
      refunds: new Map(),
      balances: new Map(),
      feeds: new Map([[DefaultFeed, {
        feed: new Feed({ name: DefaultFeed, title: "Newsletter", createdAt: now, updatedAt: now })
      }]]),
      subscriptions: new Map(),
      tokens: new Map(),
      outbox: new Map(),
      signupDays: new Map(),
      endpoints: new Map(),
      events: new Map(),
      deliveries: new Map(),
      secrets: new Map(),
      serials: { subscription: 0, outbox: 0, delivery: 0 }
    })
    return { tables, lock: yield* Effect.makeSemaphore(1) }
  })
)

// A port's operations as synchronous functions over the tables.
export type Statements<Tx> = {
  readonly [K in keyof Tx]: Tx[K] extends (...args: infer A) => Effect.Effect<infer R> ? (t: Tables, ...args: A) => R
    : never
}

// Runs `f` under the lock; whatever it changed is put back if it fails, dies or is interrupted.
export const atomically = <A>(db: MemoryDatabaseShape, f: Effect.Effect<A>): Effect.Effect<A> =>
  db.lock.withPermits(1)(Effect.suspend(() => {
    const snapshot = copy(db.tables)
    return Effect.onExit(f, (exit) => Effect.sync(() => Exit.isFailure(exit) && Object.assign(db.tables, snapshot)))
  }))

// The port's unit of work: `transact` under the lock, with the snapshot; each operation alone likewise.
export const unitOfWork = <Tx extends object>(db: MemoryDatabaseShape, statements: Statements<Tx>) => {
  const tx = {} as Record<string, unknown>
  const own = {} as Record<string, unknown>
  for (const name of Object.keys(statements)) {
    const statement = (statements as any)[name] as (t: Tables, ...args: Array<unknown>) => unknown
    tx[name] = (...args: Array<unknown>) => Effect.sync(() => statement(db.tables, ...args))
    own[name] = (...args: Array<unknown>) => atomically(db, Effect.sync(() => statement(db.tables, ...args)))
  }
  const transact = <A>(work: (tx: Tx) => Effect.Effect<A>): Effect.Effect<A> => atomically(db, work(tx as Tx))
  return { ...(own as Tx), transact }
}

export const millis = DateTime.toEpochMillis

// Core's unsettled rule (UnsettledTransfers, UnsettledRefunds) on one row, as the SQL stores' condition reads it.
export const unsettledAt = (
  rule: UnsettledRule<string>,
  row: { readonly status: string; readonly createdAt: DateTime.Utc },
  pendingBefore: DateTime.Utc
): boolean =>
  rule.anyAge.includes(row.status) ||
  (rule.afterLease.includes(row.status) && millis(row.createdAt) <= millis(pendingBefore))
// Newest first by created time, then id, as the SQL stores list.
export const newestFirst = <A extends { readonly id: string }>(createdAt: (a: A) => DateTime.Utc) => (x: A, y: A) =>
  millis(createdAt(y)) - millis(createdAt(x)) || (x.id < y.id ? 1 : x.id > y.id ? -1 : 0)
