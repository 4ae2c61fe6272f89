// The transfer store PostgreSQL runs is adapters/postgres/PgTransferStore.ts (SQLite's is
// adapters/sqlite/SqliteTransferStore.ts); this name stays for the modules that import it from here.
export { layer, make } from "../postgres/PgTransferStore.ts"
