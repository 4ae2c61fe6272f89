import { RateLimiter } from "@effect/experimental"
import { Effect, Layer } from "effect"
import * as MemoryDatabase from "../../../adapters/memory/MemoryDatabase.ts"
import { layer as MemorySessionStore } from "../../../adapters/memory/MemorySessionStore.ts"
import { layer as MemoryStorageHealth } from "../../../adapters/memory/MemoryStorageHealth.ts"
import * as MemorySubscriptionStore from "../../../adapters/memory/MemorySubscriptionStore.ts"
import * as MemoryTransferStore from "../../../adapters/memory/MemoryTransferStore.ts"
import * as MemoryWebhookStore from "../../../adapters/memory/MemoryWebhookStore.ts"
import { storesOver } from "../../../core/shared/Stores.ts"
import { EventViewsLive } from "../../http/webhooks/EventViewsLive.ts"
import type { StorageAdapter } from "../Storage.ts"

// `memory:`: this process's memory, for trying the API, demos and fast tests. Nothing survives the process, and
// no other process (another instance, the CLI) sees it; the service says so, loudly, when it starts.
export const MemoryWarning =
  "DATABASE_URL=memory: every transfer, refund, subscription, key and event lives in this process's memory only. " +
  "Nothing survives a restart or a crash, and no other process (another instance, the CLI) sees it. " +
  "For trying the API, demos and tests; never for real money or real subscribers."

export const Memory: StorageAdapter = {
  forms: ["memory: (this process's memory; nothing kept)"],
  accepts: (url) => url === "memory:",
  shared: false,
  durable: false,
  layer: () =>
    Layer.mergeAll(
      storesOver(Layer.merge(MemoryTransferStore.layer, MemorySubscriptionStore.layer)),
      MemoryWebhookStore.layer,
      MemoryStorageHealth,
      MemorySessionStore,
      RateLimiter.layerStoreMemory,
      Layer.effectDiscard(Effect.logWarning(MemoryWarning))
    ).pipe(
      Layer.provide(EventViewsLive),
      Layer.provide(MemoryDatabase.layer)
    )
}
