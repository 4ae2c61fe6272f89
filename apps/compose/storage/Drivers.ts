import type { OpenSqlite } from "../../../adapters/sqlite/SqliteDriver.ts"

// What a runtime brings to the storage adapters: the SQLite binding (better-sqlite3 on Node, node:sqlite on
// Deno). The apps pass it; only the SQLite storage uses it.
export interface StorageDrivers {
  readonly openSqlite: OpenSqlite
}
