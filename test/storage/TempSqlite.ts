// SQLite storage in a fresh temporary directory: a real file, migrated with the service's own migration
// list, removed again when the layer is released. Shared by the storage and outbox tests.
import type { SqlClient } from "@effect/sql/SqlClient"
import { Effect, Layer } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { runMigrations } from "../../adapters/sql/Migrations.ts"
import { openBetterSqlite3 } from "../../adapters/sqlite/BetterSqlite3.ts"
import { layer as SqliteClient } from "../../adapters/sqlite/SqliteClient.ts"
import { subscriptionStorage, transferStorage } from "../../adapters/sqlite/SqliteStores.ts"
import { layer as SqliteWebhookStore } from "../../adapters/sqlite/SqliteWebhookStore.ts"
import { EventViewsLive } from "../../apps/http/webhooks/EventViewsLive.ts"
import { layer as refundStoreOver, type RefundStore } from "../../core/payments/RefundStore.ts"
import { layer as transferStoreOver, type TransferStore } from "../../core/payments/TransferStore.ts"
import { layer as subscriptionStoreOver, type SubscriptionStore } from "../../core/subscriptions/SubscriptionStore.ts"
import type { WebhookStore } from "../../core/webhooks/Webhooks.ts"

// A temporary directory that lives as long as the scope.
export const tempDir = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "paysub-storage-"))),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

// A client on `filename` as the app makes it.
export const sqliteClient = (filename: string) => SqliteClient({ filename, open: openBetterSqlite3 })

// The storage adapter as the app makes it (the SQLite subscription store) over one connection to `filename`, migrations run first.
export const sqliteStoreOn = (filename: string): Layer.Layer<SubscriptionStore | SqlClient, unknown> => {
  const sql = sqliteClient(filename)
  return subscriptionStoreOver.pipe(
    Layer.provide(subscriptionStorage),
    Layer.provide(EventViewsLive),
    Layer.provide(Layer.effectDiscard(runMigrations)),
    Layer.provideMerge(sql)
  )
}

// The storage adapter on a new database file in a new temporary directory.
export const tempSqliteStore = (): Layer.Layer<SubscriptionStore | SqlClient, unknown> =>
  Layer.unwrapScoped(Effect.map(tempDir, (dir) => sqliteStoreOn(join(dir, "paysub.db"))))

// The transfer storage adapter, with the transfer and refund stores over it, on one connection to `filename`,
// migrations run first.
export const sqliteTransferStoreOn = (
  filename: string
): Layer.Layer<TransferStore | RefundStore | SqlClient, unknown> => {
  const sql = sqliteClient(filename)
  return Layer.merge(transferStoreOver, refundStoreOver).pipe(
    Layer.provide(transferStorage),
    Layer.provide(EventViewsLive),
    Layer.provide(Layer.effectDiscard(runMigrations)),
    Layer.provideMerge(sql)
  )
}

// The transfer storage adapter on a new database file in a new temporary directory.
export const tempSqliteTransferStore = (): Layer.Layer<TransferStore | RefundStore | SqlClient, unknown> =>
  Layer.unwrapScoped(Effect.map(tempDir, (dir) => sqliteTransferStoreOn(join(dir, "paysub.db"))))

// The transfer and webhook stores on a new database file, for the webhook store's contract.
export const tempSqliteWebhookStores = (): Layer.Layer<TransferStore | WebhookStore, unknown> =>
  Layer.unwrapScoped(Effect.map(tempDir, (dir) => {
    const sql = sqliteClient(join(dir, "paysub.db"))
    return Layer.merge(transferStoreOver.pipe(Layer.provide(transferStorage)), SqliteWebhookStore).pipe(
      Layer.provide(EventViewsLive),
      Layer.provide(Layer.effectDiscard(runMigrations)),
      Layer.provide(sql)
    )
  }))
