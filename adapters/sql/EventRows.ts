import type { EventType } from "../../core/Webhooks.ts"
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
  const id = `evt_${Array.from(crypto.getRandomValues(new Uint8Array(24)), (b) => alphabet[b % 62]).join("")}`
  const body = JSON.stringify({ id, type, created: new Date(now).toISOString(), data: { object } })
  return { id, type, owner, createdAt: now, body, pattern: `%"${type}"%` }
}

const wanted = `disabled_at IS NULL AND (enabled_events LIKE ? OR enabled_events LIKE '%"*"%')`
const insertEvent = `INSERT INTO events (id, type, owner, created_at, body) VALUES (?, ?, ?, ?, ?)`
const fanOut = `INSERT INTO webhook_deliveries (event_id, endpoint_id, created_at, next_attempt_at)
  SELECT ?, id, ?, ? FROM webhook_endpoints WHERE owner = ? AND ${wanted}`

// SQLite: inside the store's transaction.
export const writeEvent = (db: DirectSql, e: NewEvent) => {
  db.run(insertEvent, [e.id, e.type, e.owner, e.createdAt, e.body])
  db.run(fanOut, [e.id, e.createdAt, e.createdAt, e.owner, e.pattern])
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
