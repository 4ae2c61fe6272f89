import { Layer, Redacted } from "effect"
import { layer as MariaDbClient } from "../../../adapters/mariadb/MariaDbClient.ts"
import { layer as MariaDbRateLimiterStore } from "../../../adapters/mariadb/MariaDbRateLimiterStore.ts"
import { layer as MariaDbSubscriptionStore } from "../../../adapters/mariadb/MariaDbSubscriptionStore.ts"
import { layer as MariaDbTransferStore } from "../../../adapters/mariadb/MariaDbTransferStore.ts"
import { layer as MariaDbWebhookStore } from "../../../adapters/mariadb/MariaDbWebhookStore.ts"
import { storesOver } from "../../../core/shared/Stores.ts"
import type { StorageAdapter } from "../Storage.ts"
import { sqlStorage } from "./Sql.ts"

export const MariaDb: StorageAdapter = {
  forms: ["mysql://...", "mariadb://..."],
  accepts: (url) => /^(mysql|mariadb):\/\//.test(url),
  shared: true,
  durable: true,
  layer: (url) =>
    sqlStorage(
      Layer.mergeAll(
        storesOver(Layer.merge(MariaDbSubscriptionStore, MariaDbTransferStore)),
        MariaDbWebhookStore,
        MariaDbRateLimiterStore
      ),
      MariaDbClient(Redacted.make(url))
    )
}
