import { SqlClient } from "@effect/sql/SqlClient"
import { DateTime, Effect, Layer, Option } from "effect"
import { WebhookStore } from "../../core/webhooks/Webhooks.ts"
import { deliveryOf, make as makeSqlWebhookStore, targetOf } from "../sql/SqlWebhookStore.ts"
import { transactionOn } from "./MariaDbClient.ts"

// The webhook store on MariaDB: adapters/sql/SqlWebhookStore.ts, with the statements MariaDB words otherwise
// (no UPDATE ... RETURNING). A claim locks the due deliveries, skipping rows another instance holds, and
// leases them, so several instances deliver each delivery once.
const at = DateTime.toEpochMillis

export const layer = Layer.effect(
  WebhookStore,
  Effect.gen(function*() {
    const base = yield* makeSqlWebhookStore
    const sql = yield* SqlClient
    const transaction = transactionOn(sql)
    return WebhookStore.of({
      ...base,
      setSecret: (owner, id, secret) =>
        transaction(Effect.gen(function*() {
          const found = yield* sql`SELECT id FROM webhook_endpoints WHERE owner = ${owner} AND id = ${id} FOR UPDATE`
          if (found.length > 0) yield* sql`UPDATE webhook_endpoints SET secret = ${secret} WHERE id = ${id}`
          return found.length > 0
        })).pipe(Effect.orDie),
      target: (id) =>
        sql`SELECT url, secret, failing_since, retry_at, disabled_at FROM webhook_endpoints WHERE id = ${id}`.pipe(
          Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), targetOf)),
          Effect.orDie
        ),
      claim: (endpoint, now, leaseUntil, limit) =>
        transaction(Effect.gen(function*() {
          const due = yield* sql<{ id: number }>`SELECT id FROM webhook_deliveries FORCE INDEX (webhook_deliveries_due)
            WHERE endpoint_id = ${endpoint} AND delivered_at IS NULL AND next_attempt_at <= ${at(now)}
            ORDER BY next_attempt_at, id LIMIT ${limit} FOR UPDATE SKIP LOCKED`
          if (due.length === 0) return []
          const ids = due.map((d) => d.id)
          yield* sql`UPDATE webhook_deliveries SET next_attempt_at = ${at(leaseUntil)} WHERE ${sql.in("id", ids)}`
          const rows = yield* sql`SELECT d.id, d.event_id, d.attempts, e.body FROM webhook_deliveries d
            JOIN events e ON e.id = d.event_id WHERE ${sql.in("d.id", ids)} ORDER BY d.id`
          return rows.map(deliveryOf)
        })).pipe(Effect.orDie),
      delivered: (ids, now) =>
        ids.length === 0 ? Effect.void : Effect.orDie(sql`UPDATE webhook_deliveries
          SET delivered_at = ${at(now)}, attempts = attempts + 1, last_error = NULL
          WHERE ${sql.in("id", ids)} AND delivered_at IS NULL`)
    })
  })
)
