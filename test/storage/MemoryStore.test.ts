// The storage contracts on the in-memory adapter (adapters/memory): the same suites as the databases, every
// check included (its RawRows reads its tables).
import { Layer } from "effect"
import * as MemoryDatabase from "../../adapters/memory/MemoryDatabase.ts"
import * as MemorySubscriptionStore from "../../adapters/memory/MemorySubscriptionStore.ts"
import * as MemoryTransferStore from "../../adapters/memory/MemoryTransferStore.ts"
import * as MemoryWebhookStore from "../../adapters/memory/MemoryWebhookStore.ts"
import { EventViewsLive } from "../../apps/http/webhooks/EventViewsLive.ts"
import { storesOver } from "../../core/shared/Stores.ts"
import { memoryRawRows } from "./RawRows.ts"
import { refundStoreContract } from "./RefundStore.contract.ts"
import { subscriptionStoreContract } from "./SubscriptionStore.contract.ts"
import { transferStoreContract } from "./TransferStore.contract.ts"
import { webhookStoreContract } from "./WebhookStore.contract.ts"

const memoryStores = () =>
  Layer.mergeAll(
    storesOver(Layer.merge(MemoryTransferStore.layer, MemorySubscriptionStore.layer)),
    MemoryWebhookStore.layer,
    memoryRawRows
  ).pipe(
    Layer.provide(EventViewsLive),
    Layer.provide(MemoryDatabase.layer)
  )

subscriptionStoreContract("in-memory", memoryStores)
transferStoreContract("in-memory", memoryStores)
refundStoreContract("in-memory", memoryStores)

webhookStoreContract("in-memory", memoryStores)
