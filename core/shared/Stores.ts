import { Layer } from "effect"
import * as RefundStore from "../payments/RefundStore.ts"
import * as TransferStore from "../payments/TransferStore.ts"
import * as SubscriptionStore from "../subscriptions/SubscriptionStore.ts"

// The stores the use cases see (transfers, refunds, subscriptions), made over a database's storage ports
// (TransferStorage, SubscriptionStorage): the one line of wiring between a storage adapter and the core's rules.
export const storesOver = <E, R>(
  storage: Layer.Layer<TransferStore.TransferStorage | SubscriptionStore.SubscriptionStorage, E, R>
) => Layer.provide(Layer.mergeAll(TransferStore.layer, RefundStore.layer, SubscriptionStore.layer), storage)
