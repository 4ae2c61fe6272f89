import { SqlClient } from "@effect/sql/SqlClient"
import { DateTime, Effect, Option } from "effect"
import {
  type AttemptState,
  type Delivery,
  type EndpointId,
  type StoredEvent,
  type WebhookEndpoint,
  type WebhookStoreShape
} from "../../core/webhooks/Webhooks.ts"
import { Dialect, millisOf, olderThan } from "./Dialect.ts"

// Endpoints, events and deliveries, on @effect/sql for both databases: nothing here is on a request's hot
// path (events are written by the transfer and subscription stores, on theirs). What the delivery worker runs
// for every batch (the endpoint's target, the claim, the mark) each database has as direct statements of its
// own: adapters/sqlite/SqliteWebhookStore.ts and adapters/postgres/PgWebhookStore.ts. Each mark of an attempt
// (delivered, failed) writes the attempt's row in the same transaction (one statement on PostgreSQL).
interface PerDatabaseMethods {
  readonly target: unknown
  readonly claim: unknown
  readonly delivered: unknown
  readonly failed: unknown
}
export type PerDatabase = keyof PerDatabaseMethods

const utc = (value: unknown) => DateTime.unsafeMake(millisOf(value))
const utcOrUndefined = (value: unknown) => (value === null || value === undefined ? undefined : utc(value))
const EndpointColumns =
  "id, owner, url, enabled_events, created_at, failing_since, last_error, disabled_at, disabled_reason"
const endpointOf = (row: any): WebhookEndpoint => ({
  id: row.id,
  owner: row.owner,
  url: row.url,
  enabledEvents: JSON.parse(row.enabled_events),
  createdAt: utc(row.created_at),
  failingSince: utcOrUndefined(row.failing_since),
  lastError: row.last_error ?? undefined,
  disabledAt: utcOrUndefined(row.disabled_at),
  disabledReason: row.disabled_reason ?? undefined
})
// The rows of the per-database statements, as both databases read them back.
export const targetOf = (row: any) => ({
  url: row.url as string,
  secret: row.secret as string,
  failingSince: utcOrUndefined(row.failing_since),
  retryAt: utcOrUndefined(row.retry_at),
  disabled: row.disabled_at !== null
})
export const deliveryOf = (row: any): Delivery => ({
  id: Number(row.id),
  eventId: row.event_id,
  attempts: Number(row.attempts),
  body: row.body
})
const attemptOf = (row: any): AttemptState => ({
  attempt: Number(row.attempt),
  at: utc(row.attempted_at),
  status: row.status === null ? undefined : Number(row.status),
  failure: row.failure ?? undefined
})
const eventOf = (row: any): StoredEvent => ({
  id: row.id,
  type: row.type,
  createdAt: utc(row.created_at),
  body: row.body
})

export const make = Effect.gen(function*() {
  const sql = yield* SqlClient
  const { time } = yield* Dialect
  const at = (t: DateTime.Utc) => time(DateTime.toEpochMillis(t))
  const endpointColumns = sql.literal(EndpointColumns)

  const listEvents: WebhookStoreShape["listEvents"] = (owner, query) =>
    Effect.gen(function*() {
      const after = query.startingAfter === undefined ? undefined : (yield* sql<{ created_at: unknown; id: string }>`
        SELECT created_at, id FROM events WHERE owner = ${owner} AND id = ${query.startingAfter}`)[0]
      const rows = yield* sql`SELECT id, type, created_at, body FROM events WHERE ${
        sql.and([
          sql`owner = ${owner}`,
          ...(query.type === undefined ? [] : [sql`type = ${query.type}`]),
          ...(after === undefined
            ? []
            : [olderThan(sql, after.created_at, after.id)])
        ])
      } ORDER BY created_at DESC, id DESC LIMIT ${query.limit + 1}`
      return { data: rows.slice(0, query.limit).map(eventOf), hasMore: rows.length > query.limit }
    }).pipe(Effect.orDie)

  const shared: Omit<WebhookStoreShape, PerDatabase> = {
    createEndpoint: (e, secret) =>
      Effect.orDie(sql`INSERT INTO webhook_endpoints (id, owner, url, enabled_events, secret, created_at)
        VALUES (${e.id}, ${e.owner}, ${e.url}, ${JSON.stringify(e.enabledEvents)}, ${secret}, ${at(e.createdAt)})`),
    listEndpoints: (owner) =>
      sql`SELECT ${endpointColumns} FROM webhook_endpoints WHERE owner = ${owner} ORDER BY created_at DESC, id DESC`
        .pipe(Effect.map((rows) => rows.map(endpointOf)), Effect.orDie),
    getEndpoint: (owner, id) =>
      sql`SELECT ${endpointColumns} FROM webhook_endpoints WHERE owner = ${owner} AND id = ${id}`.pipe(
        Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), endpointOf)),
        Effect.orDie
      ),
    deleteEndpoint: (owner, id) =>
      sql`DELETE FROM webhook_endpoints WHERE owner = ${owner} AND id = ${id} RETURNING id`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie
      ),
    setSecret: (owner, id, secret) =>
      sql`UPDATE webhook_endpoints SET secret = ${secret} WHERE owner = ${owner} AND id = ${id} RETURNING id`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie
      ),
    setDisabled: (owner, id, disabled) =>
      (disabled === undefined
        ? sql`UPDATE webhook_endpoints SET disabled_at = NULL, disabled_reason = NULL, failing_since = NULL,
          retry_at = NULL, last_error = NULL WHERE owner = ${owner} AND id = ${id} RETURNING id`
        : sql`UPDATE webhook_endpoints SET disabled_at = ${at(disabled.at)},
          disabled_reason = ${disabled.reason.slice(0, 600)} WHERE owner = ${owner} AND id = ${id} RETURNING id`)
        .pipe(Effect.map((rows) => rows.length > 0), Effect.orDie),
    listEvents,
    getEvent: (owner, id) =>
      sql`SELECT id, type, created_at, body FROM events WHERE owner = ${owner} AND id = ${id}`.pipe(
        Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), eventOf)),
        Effect.orDie
      ),
    eventsAbout: (owner, subject, limit) =>
      Effect.gen(function*() {
        const events = (yield* sql`SELECT id, type, created_at, body FROM events
          WHERE owner = ${owner} AND subject = ${subject} ORDER BY created_at DESC, id DESC LIMIT ${limit}`)
          .map(eventOf)
        if (events.length === 0) return []
        const rows = yield* sql`SELECT d.id, d.event_id, d.endpoint_id, e.url, d.attempts, d.delivered_at,
          d.next_attempt_at, d.last_error FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
          WHERE ${sql.in("d.event_id", events.map((e) => e.id))} ORDER BY d.id`
        const attempts = rows.length === 0 ? [] : yield* sql`SELECT delivery_id, attempt, attempted_at, status, failure
          FROM webhook_attempts WHERE ${sql.in("delivery_id", rows.map((r: any) => r.id))}
          ORDER BY delivery_id, attempt`
        return events.map((event) => ({
          event,
          deliveries: rows.filter((r: any) => r.event_id === event.id).map((r: any) => ({
            endpointId: r.endpoint_id,
            url: r.url,
            attempts: Number(r.attempts),
            history: attempts.filter((a: any) => Number(a.delivery_id) === Number(r.id)).map(attemptOf),
            deliveredAt: utcOrUndefined(r.delivered_at),
            nextAttemptAt: r.delivered_at === null ? utcOrUndefined(r.next_attempt_at) : undefined,
            lastError: r.last_error ?? undefined
          }))
        }))
      }).pipe(Effect.orDie),
    resend: (owner, event, endpoint, now) =>
      sql`INSERT INTO webhook_deliveries (event_id, endpoint_id, created_at, next_attempt_at)
        SELECT ev.id, e.id, ${at(now)}, ${at(now)} FROM events ev, webhook_endpoints e
        WHERE ev.id = ${event} AND ev.owner = ${owner} AND e.id = ${endpoint} AND e.owner = ${owner}
        RETURNING id`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie),
    dueEndpoints: (now, limit) =>
      sql<{ id: EndpointId }>`SELECT e.id FROM webhook_endpoints e
        WHERE e.disabled_at IS NULL AND (e.retry_at IS NULL OR e.retry_at <= ${at(now)})
        AND EXISTS (SELECT 1 FROM webhook_deliveries d
          WHERE d.endpoint_id = e.id AND d.delivered_at IS NULL AND d.next_attempt_at <= ${at(now)})
        LIMIT ${limit}`.pipe(Effect.map((rows) => rows.map((r) => r.id)), Effect.orDie),
    endpointRecovered: (id) =>
      Effect.orDie(sql`UPDATE webhook_endpoints SET failing_since = NULL, retry_at = NULL, last_error = NULL
        WHERE id = ${id}`),
    endpointFailing: (id, state, disabledReason) =>
      Effect.orDie(sql`UPDATE webhook_endpoints SET failing_since = ${at(state.failingSince)},
        retry_at = ${at(state.retryAt)}, last_error = ${state.reason.slice(0, 500)},
        disabled_at = ${disabledReason === undefined ? null : at(state.retryAt)},
        disabled_reason = ${disabledReason?.slice(0, 600) ?? null} WHERE id = ${id} AND disabled_at IS NULL`)
  }
  return shared
})
