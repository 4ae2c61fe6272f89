import { Layer } from "effect"
import * as SubscriptionStore from "./SubscriptionStore.ts"
import * as TransferStore from "./TransferStore.ts"

// The stores the use cases see, made over a database's storage ports (TransferStorage, SubscriptionStorage):
// the one line of wiring between a storage adapter and the core's rules.
export const storesOver = <E, R>(
  storage: Layer.Layer<TransferStore.TransferStorage | SubscriptionStore.SubscriptionStorage, E, R>
) => Layer.provide(Layer.merge(TransferStore.layer, SubscriptionStore.layer), storage)
