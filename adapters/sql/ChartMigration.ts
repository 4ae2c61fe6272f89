import { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"

// The console's charts read 30 days of one client's refunds, and of every feed's signups, by created time
// (adapters/sql/DayRows.ts); transfers and events have such an index already (client_id or owner, created_at, id).
export const m0015_chart_indexes = Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`CREATE INDEX refunds_client_created ON refunds (client_id, created_at)`
  yield* sql`CREATE INDEX subscriptions_created ON subscriptions (created_at)`
})
