import { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { Dialect } from "./Dialect.ts"

// A transfer's page lists its events (its refunds' included) with their deliveries: an event names what it is
// about (core's NewEvent.subject), read by owner and subject, newest first; an event's deliveries are read by
// the event. Events written before this migration have no subject, and no transfer's page lists them.
export const m0016_event_subjects = Effect.gen(function*() {
  const sql = yield* SqlClient
  const { types: T } = yield* Dialect
  yield* sql`ALTER TABLE events ADD COLUMN subject ${T.key}`
  yield* sql`CREATE INDEX events_owner_subject_created ON events (owner, subject, created_at, id)`
  yield* sql`CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id)`
})
