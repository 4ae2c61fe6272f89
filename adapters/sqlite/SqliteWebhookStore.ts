import { DateTime, Effect, Layer, Option } from "effect"
import type { EndpointId } from "../../core/webhooks/Webhooks.ts"
import { KeptAttempts, WebhookStore } from "../../core/webhooks/Webhooks.ts"
import { deliveryOf, make as makeSqlWebhookStore, targetOf } from "../sql/SqlWebhookStore.ts"
import { type DirectSql, SqliteDirect } from "./SqliteClient.ts"

// The webhook store on SQLite: the delivery worker's statements (what runs once per event) on SqliteDirect, in
// the client's group commit, like the other SQLite stores; the rest as adapters/sql/SqlWebhookStore.ts has it.
// An @effect/sql transaction holds the client's lock between its statements and sends every write of that
// moment the slow way; a direct one does not.

const millis = DateTime.toEpochMillis
const dueEndpoints = `SELECT e.id FROM webhook_endpoints e
  WHERE e.disabled_at IS NULL AND (e.retry_at IS NULL OR e.retry_at <= ?)
  AND EXISTS (SELECT 1 FROM webhook_deliveries d
    WHERE d.endpoint_id = e.id AND d.delivered_at IS NULL AND d.next_attempt_at <= ?)
  LIMIT ?`
const target = `SELECT url, secret, failing_since, retry_at, disabled_at FROM webhook_endpoints WHERE id = ?`
const due = `SELECT d.id, d.event_id, d.attempts, e.body FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
  WHERE d.endpoint_id = ? AND d.delivered_at IS NULL AND d.next_attempt_at <= ?
  ORDER BY d.next_attempt_at, d.id LIMIT ?`
const lease = `UPDATE webhook_deliveries SET next_attempt_at = ? WHERE id = ?`
const delivered = `UPDATE webhook_deliveries SET delivered_at = ?, attempts = attempts + 1, last_error = NULL
  WHERE id = ? AND delivered_at IS NULL RETURNING attempts`
const failed = `UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt_at = ?, last_error = ?
  WHERE id = ? AND delivered_at IS NULL RETURNING attempts`
// The attempt a mark above made, numbered by the count it returned, in its slot (adapters/sql/AttemptMigration.ts)
// over the attempt KeptAttempts before it.
const attempt = `INSERT INTO webhook_attempts (delivery_id, slot, attempt, attempted_at, status, failure)
  VALUES (?, (? - 1) % ${KeptAttempts}, ?, ?, ?, ?) ON CONFLICT (delivery_id, slot) DO UPDATE SET attempt = excluded.attempt,
  attempted_at = excluded.attempted_at, status = excluded.status, failure = excluded.failure`

export const layer = Layer.effect(
  WebhookStore,
  Effect.gen(function*() {
    const base = yield* makeSqlWebhookStore
    const direct = yield* SqliteDirect
    const read = <A>(work: (db: DirectSql) => A) => Effect.orDie(direct.read(work))
    const transaction = <A>(work: (db: DirectSql) => A) => Effect.orDie(direct.transaction(work))
    return WebhookStore.of({
      ...base,
      dueEndpoints: (now, limit) =>
        read((db) => db.all<{ id: EndpointId }>(dueEndpoints, [millis(now), millis(now), limit]).map((r) => r.id)),
      target: (id) => read((db) => Option.map(Option.fromNullable(db.get(target, [id])), targetOf)),
      claim: (endpoint, now, leaseUntil, limit) =>
        transaction((db) =>
          db.all(due, [endpoint, millis(now), limit]).map((row) => {
            const delivery = deliveryOf(row)
            db.run(lease, [millis(leaseUntil), delivery.id])
            return delivery
          })
        ),
      delivered: (answers, now) =>
        answers.length === 0 ? Effect.void : transaction((db) => {
          for (const { id, status } of answers) {
            const marked = db.get<{ attempts: number }>(delivered, [millis(now), id])
            if (marked !== undefined) {
              db.run(attempt, [id, marked.attempts, marked.attempts, millis(now), status, null])
            }
          }
        }),
      failed: (id, next, reason, a) =>
        transaction((db) => {
          const marked = db.get<{ attempts: number }>(failed, [millis(next), reason.slice(0, 500), id])
          if (marked === undefined) return
          db.run(attempt, [
            id,
            marked.attempts,
            marked.attempts,
            millis(a.at),
            a.status ?? null,
            a.failure ?? null
          ])
        })
    })
  })
)
