// The two SQLite storage ports, each in a file of its own and each on SqliteDirect alone (no @effect/sql
// statement in their methods): one storage implementation per database.
export { layer as subscriptionStorage } from "./SqliteSubscriptionStore.ts"
export { layer as transferStorage } from "./SqliteTransferStore.ts"
