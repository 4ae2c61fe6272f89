import { DateTime } from "effect"
import type { Audience, LiveEndpoint, NewEvent } from "../../core/webhooks/Events.ts"
import type { EndpointId } from "../../core/webhooks/Webhooks.ts"
import type { DirectSql } from "../sqlite/SqliteClient.ts"

// Events as the stores write them, in the transaction of the change they tell of, with one delivery due at
// once for each endpoint core chose. The endpoints' enabled events are a JSON array of strings.
export const liveEndpointOf = (row: { id: string; enabled_events: string }): LiveEndpoint => ({
  id: row.id as EndpointId,
  enabledEvents: JSON.parse(row.enabled_events)
})

// SQLite's and MariaDB's texts (`?` parameters).
export const liveEndpoints = `SELECT id, enabled_events FROM webhook_endpoints WHERE owner = ? AND disabled_at IS NULL`
export const insertEvent = `INSERT INTO events (id, type, owner, created_at, body, subject) VALUES (?, ?, ?, ?, ?, ?)`
const insertDelivery = `INSERT INTO webhook_deliveries (event_id, endpoint_id, created_at, next_attempt_at)
  VALUES (?, ?, ?, ?)`

// SQLite, inside the store's transaction: the event's row, then its deliveries, due when it was made.
const sqliteEventRow = (db: DirectSql, e: NewEvent) => {
  const at = DateTime.toEpochMillis(e.createdAt)
  db.run(insertEvent, [e.id, e.type, e.owner, at, e.body, e.subject ?? null])
  return at
}
export const sqliteEventStatements = {
  liveEndpoints: (db: DirectSql, owner: string) =>
    db.all<{ id: string; enabled_events: string }>(liveEndpoints, [owner]).map(liveEndpointOf),
  insertEvent: (db: DirectSql, e: NewEvent, endpoints: ReadonlyArray<EndpointId>) => {
    const at = sqliteEventRow(db, e)
    for (const endpoint of endpoints) db.run(insertDelivery, [e.id, endpoint, at, at])
  }
}
// PostgreSQL: the owner's live endpoints, and the event with its deliveries as the CTEs of one statement.
export const pgLiveEndpoints =
  `SELECT id, enabled_events FROM webhook_endpoints WHERE owner = $1 AND disabled_at IS NULL`
// The event (parameters `first` to `first + 4`, as pgEventValues and pgAudienceValues order them, and its subject
// `subject`, which they put last) as the CTE `ev` of a statement, written only where `when` (SQL) holds.
const pgEventCte = (first: number, when: string, subject: number) =>
  `ev AS (
  INSERT INTO events (id, type, owner, created_at, body, subject)
  SELECT $${first}::text, $${first + 1}::text, $${first + 2}::text, $${first + 3}::timestamptz, $${first + 4}::text,
    $${subject}::text
  WHERE ${when}
  RETURNING id, owner, created_at
)`
// The event and its deliveries as the CTEs `ev` and `d`: one delivery, due at once, for each endpoint id given
// (`first + 5`); the subject is parameter `subject`, after every other of the statement.
export const pgEventCtes = (first: number, subject: number, when = "true") =>
  `${pgEventCte(first, when, subject)}, d AS (
  INSERT INTO webhook_deliveries (event_id, endpoint_id, created_at, next_attempt_at)
  SELECT ev.id, e, ev.created_at, ev.created_at FROM ev, unnest($${first + 5}::text[]) AS e
)`
export const pgInsertEvent = `WITH ${pgEventCtes(1, 7)} SELECT 1`
// The same with the deliveries chosen by the statement itself: one for each live endpoint of the event's owner
// that enabled any of the audience's types (`first + 5`). The read is the statement's, so the event costs no
// round trip of its own (docs/decisions/0043).
export const pgAudienceEventCtes = (first: number, subject: number, when = "true") =>
  `${pgEventCte(first, when, subject)}, d AS (
  INSERT INTO webhook_deliveries (event_id, endpoint_id, created_at, next_attempt_at)
  SELECT ev.id, w.id, ev.created_at, ev.created_at FROM ev JOIN webhook_endpoints w ON w.owner = ev.owner
  WHERE w.disabled_at IS NULL AND w.enabled_events::jsonb ?| $${first + 5}::text[]
)`
const pgEventRow = (e: NewEvent) => [e.id, e.type, e.owner, new Date(DateTime.toEpochMillis(e.createdAt)), e.body]
export const pgEventValues = (e: NewEvent, endpoints: ReadonlyArray<EndpointId>) => [
  ...pgEventRow(e),
  endpoints,
  e.subject ?? null
]
export const pgAudienceValues = (e: NewEvent, audience: Audience) => [...pgEventRow(e), audience.anyOf]
