// The storage contracts on Deno's built-in SQLite (`node:sqlite`), the driver the Deno app stores through.
// `npm test` runs this file under Deno; under Node 20 there is no `node:sqlite`, so it is skipped there.
import type { SqlClient } from "@effect/sql/SqlClient"
import { describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { join } from "node:path"
import { runMigrations } from "../../adapters/sql/Migrations.ts"
import { layer as SqliteClient, type SqliteDirect } from "../../adapters/sqlite/SqliteClient.ts"
import { subscriptionStorage, transferStorage } from "../../adapters/sqlite/SqliteStores.ts"
import { layer as SqliteWebhookStore } from "../../adapters/sqlite/SqliteWebhookStore.ts"
import { EventViewsLive } from "../../apps/http/webhooks/EventViewsLive.ts"
import * as RefundStore from "../../core/payments/RefundStore.ts"
import * as TransferStore from "../../core/payments/TransferStore.ts"
import * as SubscriptionStore from "../../core/subscriptions/SubscriptionStore.ts"
import type { EventViews } from "../../core/webhooks/EventViews.ts"
import { withSqlRawRows } from "./RawRows.ts"
import { refundStoreContract } from "./RefundStore.contract.ts"
import { subscriptionStoreContract } from "./SubscriptionStore.contract.ts"
import { tempDir } from "./TempSqlite.ts"
import { transferStoreContract } from "./TransferStore.contract.ts"
import { webhookStoreContract } from "./WebhookStore.contract.ts"

const onDeno = "Deno" in globalThis

const nodeSqliteStore =
  <A>(store: Layer.Layer<A, never, SqlClient | SqliteDirect | EventViews>) => (): Layer.Layer<A | SqlClient, unknown> =>
    Layer.unwrapScoped(Effect.gen(function*() {
      const dir = yield* tempDir
      const { openNodeSqlite } = yield* Effect.promise(() => import("../../adapters/sqlite/NodeSqlite.ts"))
      const sql = SqliteClient({ filename: join(dir, "paysub.db"), open: openNodeSqlite })
      return store.pipe(
        Layer.provide(EventViewsLive),
        Layer.provide(Layer.effectDiscard(runMigrations)),
        Layer.provideMerge(sql)
      )
    }))

if (onDeno) {
  subscriptionStoreContract(
    "node:sqlite on Deno",
    withSqlRawRows(nodeSqliteStore(Layer.provide(SubscriptionStore.layer, subscriptionStorage)))
  )
  transferStoreContract(
    "node:sqlite on Deno",
    withSqlRawRows(nodeSqliteStore(Layer.provide(TransferStore.layer, transferStorage)))
  )
  refundStoreContract(
    "node:sqlite on Deno",
    withSqlRawRows(
      nodeSqliteStore(Layer.provide(Layer.merge(TransferStore.layer, RefundStore.layer), transferStorage))
    )
  )
  webhookStoreContract(
    "node:sqlite on Deno",
    nodeSqliteStore(Layer.merge(Layer.provide(TransferStore.layer, transferStorage), SqliteWebhookStore))
  )
} else {
  describe("storage contracts on node:sqlite", () => {
    it.skip("run under Deno only (npm test does): Node 20 has no node:sqlite", () => {})
  })
}
