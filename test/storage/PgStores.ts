// The PostgreSQL storage adapters on a new database each, for the storage tests (test/storage/PgStore.test.ts,
// IndexedStatements.postgres.test.ts): every one gets a database of its own, made from the `test` database and
// dropped afterwards. Not a test file itself.
import type { SqlClient } from "@effect/sql/SqlClient"
import { Effect, Layer, Redacted } from "effect"
import { layer as PgClientLayer } from "../../adapters/postgres/PgClient.ts"
import { layer as PgSubscriptionStore } from "../../adapters/postgres/PgSubscriptionStore.ts"
import { layer as PgTransferStore } from "../../adapters/postgres/PgTransferStore.ts"
import { layer as PgWebhookStore } from "../../adapters/postgres/PgWebhookStore.ts"
import { runMigrations } from "../../adapters/sql/Migrations.ts"
import { EventViewsLive } from "../../apps/http/webhooks/EventViewsLive.ts"
import type { RefundStore } from "../../core/payments/RefundStore.ts"
import type { TransferStore } from "../../core/payments/TransferStore.ts"
import { storesOver } from "../../core/shared/Stores.ts"
import type { SubscriptionStore } from "../../core/subscriptions/SubscriptionStore.ts"
import type { WebhookStore } from "../../core/webhooks/Webhooks.ts"
import { createTestDatabase, dropDatabaseSync, type TestDatabase } from "../support/Postgres.ts"

// The app's migrations run once per test process, into a database each new one is copied from (a copy costs a
// quarter of running them again); dropped when the process exits.
let migrated: Promise<TestDatabase> | undefined
const migratedTemplate = () =>
  migrated ??= createTestDatabase().then(async (template) => {
    process.once("exit", () => dropDatabaseSync(template.url))
    await Effect.runPromise(Effect.scoped(Effect.provide(runMigrations, pgClient(template.url))))
    return template
  })

// A new, migrated database that lives as long as the scope (dropped with FORCE, so a pool still open cannot keep
// it).
export const tempDatabase = Effect.acquireRelease(
  Effect.promise(async () => createTestDatabase((await migratedTemplate()).name)),
  (database) => Effect.promise(() => database.drop())
)

// A pool on `url` as the app makes it (adapters/postgres/PgClient.ts: one pg Pool behind @effect/sql-pg and
// PgDirect).
export const pgClient = (url: string) => PgClientLayer(Redacted.make(url))

// The storage adapters over their own pool on `url`, migrations run first (a second pool finds them done).
export const pgStoresOn = (
  url: string
): Layer.Layer<SubscriptionStore | TransferStore | RefundStore | SqlClient, unknown> =>
  storesOver(Layer.merge(PgSubscriptionStore, PgTransferStore)).pipe(
    Layer.provide(EventViewsLive),
    Layer.provide(Layer.effectDiscard(runMigrations)),
    Layer.provideMerge(pgClient(url))
  )

// The storage adapters on a new database.
export const tempPgStores = (): Layer.Layer<SubscriptionStore | TransferStore | RefundStore | SqlClient, unknown> =>
  Layer.unwrapScoped(Effect.map(tempDatabase, (database) => pgStoresOn(database.url)))

// The stores and the webhook store on a new database.
export const tempPgWebhookStores = (): Layer.Layer<TransferStore | WebhookStore, unknown> =>
  Layer.unwrapScoped(
    Effect.map(tempDatabase, (database) =>
      Layer.merge(storesOver(Layer.merge(PgSubscriptionStore, PgTransferStore)), PgWebhookStore).pipe(
        Layer.provide(EventViewsLive),
        Layer.provide(Layer.effectDiscard(runMigrations)),
        Layer.provide(pgClient(database.url))
      ))
  )
