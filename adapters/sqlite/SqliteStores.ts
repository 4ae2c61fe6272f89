// The two SQLite stores, each in a file of its own and each on SqliteDirect alone (no @effect/sql statement
// in their methods): one store implementation per database.
export { layer as subscriptionStore } from "./SqliteSubscriptionStore.ts"
export { layer as transferStore } from "./SqliteTransferStore.ts"
