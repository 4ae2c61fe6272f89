import { Layer, Redacted } from "effect"
import { layer as PgClient } from "../../../adapters/postgres/PgClient.ts"
import { layer as PgRateLimiterStore } from "../../../adapters/postgres/PgRateLimiterStore.ts"
import { layer as PgSubscriptionStore } from "../../../adapters/postgres/PgSubscriptionStore.ts"
import { layer as PgTransferStore } from "../../../adapters/postgres/PgTransferStore.ts"
import { layer as PgWebhookStore } from "../../../adapters/postgres/PgWebhookStore.ts"
import { storesOver } from "../../../core/shared/Stores.ts"
import type { StorageAdapter } from "../Storage.ts"
import { sqlStorage } from "./Sql.ts"

export const Postgres: StorageAdapter = {
  forms: ["postgres://...", "postgresql://..."],
  accepts: (url) => /^postgres(ql)?:\/\//.test(url),
  shared: true,
  durable: true,
  layer: (url) =>
    sqlStorage(
      Layer.mergeAll(
        storesOver(Layer.merge(PgSubscriptionStore, PgTransferStore)),
        PgWebhookStore,
        PgRateLimiterStore
      ),
      PgClient(Redacted.make(url))
    )
}
