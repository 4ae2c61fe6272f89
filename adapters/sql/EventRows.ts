import type { EventType } from "../../core/Webhooks.ts"
import { randomBytes } from "../crypto/RandomBytes.ts"
import type { DirectSql } from "../sqlite/SqliteClient.ts"

// Events as the stores write them, in the transaction of the change they tell of, with one delivery for each
// endpoint of the owner that is enabled and asked for the type (or for `*`). The body is made once, here:
// every delivery sends (and signs) these bytes.
const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

export interface NewEvent {
  readonly id: string
  readonly type: EventType
  readonly owner: string
  readonly createdAt: number
  readonly body: string
  // enabled_events is a JSON array of strings: an endpoint asked for the type when it holds it quoted.
  readonly pattern: string
}

export const newEvent = (type: EventType, owner: string, object: unknown, now: number): NewEvent => {
  let id = "evt_"
  for (const b of randomBytes(24)) id += alphabet[b % 62]
  const body = JSON.stringify({ id, type, created: new Date(now).toISOString(), data: { object } })
  return { id, type, owner, createdAt: now, body, pattern: `%"${type}"%` }
}

const wanted = `disabled_at IS NULL AND (enabled_events LIKE ? OR enabled_events LIKE '%"*"%')`
const insertEvent = `INSERT INTO events (id, type, owner, created_at, body) VALUES (?, ?, ?, ?, ?)`
const endpointsFor = `SELECT id FROM webhook_endpoints WHERE owner = ? AND ${wanted}`
const insertDelivery = `INSERT INTO webhook_deliveries (event_id, endpoint_id, created_at, next_attempt_at)
  VALUES (?, ?, ?, ?)`

// SQLite: inside the store's transaction. The endpoints are read first, and a delivery inserted for each: most
// owners have none, and a read that finds nothing costs a fraction of an INSERT ... SELECT that inserts nothing.
export const writeEvent = (db: DirectSql, e: NewEvent) => {
  db.run(insertEvent, [e.id, e.type, e.owner, e.createdAt, e.body])
  for (const endpoint of db.all<{ id: string }>(endpointsFor, [e.owner, e.pattern])) {
    db.run(insertDelivery, [e.id, endpoint.id, e.createdAt, e.createdAt])
  }
}

const deliveries = (pattern: string) =>
  `INSERT INTO webhook_deliveries (event_id, endpoint_id, created_at, next_attempt_at)
   SELECT ev.id, e.id, ev.created_at, ev.created_at FROM ev JOIN webhook_endpoints e ON e.owner = ev.owner
   AND e.disabled_at IS NULL AND (e.enabled_events LIKE ${pattern} OR e.enabled_events LIKE '%"*"%')`

// PostgreSQL, one statement: the event and its deliveries. Parameters: id, type, owner, created_at, body, pattern.
export const pgEventStatement = `WITH ev AS (
  INSERT INTO events (id, type, owner, created_at, body)
  VALUES ($1::text, $2::text, $3::text, $4::timestamptz, $5::text) RETURNING id, owner, created_at
) ${deliveries("$6::text")}`
export const pgEventValues = (e: NewEvent) => [e.id, e.type, e.owner, new Date(e.createdAt), e.body, e.pattern]

// PostgreSQL, as CTEs after one named `s` that returns the owner as `owner` (only when it changed a row):
// parameters from $first: id, type, created_at, body, pattern.
export const pgEventCtes = (first: number) =>
  `ev AS (
    INSERT INTO events (id, type, owner, created_at, body)
    SELECT $${first}::text, $${first + 1}::text, s.owner, $${first + 2}::timestamptz, $${first + 3}::text FROM s
    RETURNING id, owner, created_at
  ), dl AS (${deliveries(`$${first + 4}::text`)})`
export const pgCteValues = (e: NewEvent) => [e.id, e.type, new Date(e.createdAt), e.body, e.pattern]
