import { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { Dialect } from "./Dialect.ts"

// A client's transfers in one status, newest first, as the console's status filter lists them (with or without
// a date range, a range of created_at within the status); the date range alone is served by
// transfers_client_created.
export const m0013_transfer_filters = Effect.gen(function*() {
  const sql = yield* SqlClient
  const { mysql } = yield* Dialect
  // MariaDB indexes a TEXT column by a prefix of it only.
  const status = sql.literal(mysql ? "status(64)" : "status")
  yield* sql`CREATE INDEX transfers_client_status_created ON transfers (client_id, ${status}, created_at, id)`
})
