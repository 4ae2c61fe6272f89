import { Layer } from "effect"
import * as TransferStore from "../payments/TransferStore.ts"
import * as SubscriptionStore from "../subscriptions/SubscriptionStore.ts"

// The stores the use cases see, made over a database's storage ports (TransferStorage, SubscriptionStorage):
// the one line of wiring between a storage adapter and the core's rules.
export const storesOver = <E, R>(
  storage: Layer.Layer<TransferStore.TransferStorage | SubscriptionStore.SubscriptionStorage, E, R>
) => Layer.provide(Layer.merge(TransferStore.layer, SubscriptionStore.layer), storage)
