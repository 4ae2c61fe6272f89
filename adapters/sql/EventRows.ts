import { DateTime } from "effect"
import type { LiveEndpoint, NewEvent } from "../../core/webhooks/Events.ts"
import type { EndpointId } from "../../core/webhooks/Webhooks.ts"
import type { DirectSql } from "../sqlite/SqliteClient.ts"

// Events as the stores write them, in the transaction of the change they tell of, with one delivery due at
// once for each endpoint core chose. The endpoints' enabled events are a JSON array of strings.
export const liveEndpointOf = (row: { id: string; enabled_events: string }): LiveEndpoint => ({
  id: row.id as EndpointId,
  enabledEvents: JSON.parse(row.enabled_events)
})

const liveEndpoints = `SELECT id, enabled_events FROM webhook_endpoints WHERE owner = ? AND disabled_at IS NULL`
const insertEvent = `INSERT INTO events (id, type, owner, created_at, body) VALUES (?, ?, ?, ?, ?)`
const insertDelivery = `INSERT INTO webhook_deliveries (event_id, endpoint_id, created_at, next_attempt_at)
  VALUES (?, ?, ?, ?)`

// SQLite, inside the store's transaction.
export const sqliteEventStatements = {
  liveEndpoints: (db: DirectSql, owner: string) =>
    db.all<{ id: string; enabled_events: string }>(liveEndpoints, [owner]).map(liveEndpointOf),
  insertEvent: (db: DirectSql, e: NewEvent, endpoints: ReadonlyArray<EndpointId>) => {
    const at = DateTime.toEpochMillis(e.createdAt)
    db.run(insertEvent, [e.id, e.type, e.owner, at, e.body])
    for (const endpoint of endpoints) db.run(insertDelivery, [e.id, endpoint, at, at])
  }
}

// PostgreSQL, one statement: the event and its deliveries (endpoint ids as an array).
export const pgLiveEndpoints =
  `SELECT id, enabled_events FROM webhook_endpoints WHERE owner = $1 AND disabled_at IS NULL`
export const pgInsertEvent = `WITH ev AS (
  INSERT INTO events (id, type, owner, created_at, body)
  VALUES ($1::text, $2::text, $3::text, $4::timestamptz, $5::text) RETURNING id, created_at
) INSERT INTO webhook_deliveries (event_id, endpoint_id, created_at, next_attempt_at)
  SELECT ev.id, e, ev.created_at, ev.created_at FROM ev, unnest($6::text[]) AS e`
export const pgEventValues = (e: NewEvent, endpoints: ReadonlyArray<EndpointId>) => [
  e.id,
  e.type,
  e.owner,
  new Date(DateTime.toEpochMillis(e.createdAt)),
  e.body,
  endpoints
]
