import { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { Dialect } from "./Dialect.ts"

// The pending purge reads the pending subscriptions by the time of their last signup, a batch at a time. SQLite and
// PostgreSQL keep them in a partial index (0007's subscriptions_pending, WHERE status = 'pending'); MariaDB has no
// partial indexes, so its subscriptions_pending held every subscription by that time, and each batch read the
// subscriptions of every status older than the cut-off to find its pending ones: all of them, on the pass that finds
// none left. There the pending ones are found by status and time instead, and the index that served no other
// statement goes.
export const m0019_pending_purge = Effect.gen(function*() {
  const sql = yield* SqlClient
  const { mysql } = yield* Dialect
  if (!mysql) return
  yield* sql`CREATE INDEX subscriptions_status_updated ON subscriptions (status, updated_at)`
  yield* sql`DROP INDEX subscriptions_pending ON subscriptions`
})
