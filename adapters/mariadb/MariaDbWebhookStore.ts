import { SqlClient } from "@effect/sql/SqlClient"
import { DateTime, Effect, Layer } from "effect"
import { WebhookStore } from "../../core/webhooks/Webhooks.ts"
import { deliveryOf, make as makeSqlWebhookStore, targetOf } from "../sql/SqlWebhookStore.ts"
import { transactionOn } from "./MariaDbClient.ts"
import { claim, first, wrote } from "./MariaDbUnitOfWork.ts"

// The webhook store on MariaDB: adapters/sql/SqlWebhookStore.ts, with the statements MariaDB words otherwise
// (no UPDATE ... RETURNING). A claim leases the due deliveries (MariaDbUnitOfWork.ts's claim), so several
// instances deliver each delivery once.
const at = DateTime.toEpochMillis

export const layer = Layer.effect(
  WebhookStore,
  Effect.gen(function*() {
    const base = yield* makeSqlWebhookStore
    const sql = yield* SqlClient
    return WebhookStore.of({
      ...base,
      setSecret: (owner, id, secret) =>
        Effect.orDie(wrote(sql`UPDATE webhook_endpoints SET secret = ${secret} WHERE owner = ${owner} AND id = ${id}`)),
      setDisabled: (owner, id, disabled) =>
        Effect.orDie(wrote(
          disabled === undefined
            ? sql`UPDATE webhook_endpoints SET disabled_at = NULL, disabled_reason = NULL, failing_since = NULL,
              retry_at = NULL, last_error = NULL WHERE owner = ${owner} AND id = ${id}`
            : sql`UPDATE webhook_endpoints SET disabled_at = ${at(disabled.at)},
              disabled_reason = ${disabled.reason.slice(0, 600)} WHERE owner = ${owner} AND id = ${id}`
        )),
      target: (id) =>
        Effect.orDie(first(
          sql`SELECT url, secret, failing_since, retry_at, disabled_at FROM webhook_endpoints WHERE id = ${id}`,
          targetOf
        )),
      claim: (endpoint, now, leaseUntil, limit) =>
        transactionOn(sql)(Effect.flatMap(
          claim(sql, "webhook_deliveries", sql`next_attempt_at = ${at(leaseUntil)}`)(
            sql<{ id: number }>`SELECT id FROM webhook_deliveries FORCE INDEX (webhook_deliveries_due)
              WHERE endpoint_id = ${endpoint} AND delivered_at IS NULL AND next_attempt_at <= ${at(now)}
              ORDER BY next_attempt_at, id LIMIT ${limit} FOR UPDATE SKIP LOCKED`
          ),
          (due) =>
            due.length === 0 ? Effect.succeed([]) : sql`SELECT d.id, d.event_id, d.attempts, e.body
              FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
              WHERE ${sql.in("d.id", due.map((d) => d.id))} ORDER BY d.id`
        )).pipe(Effect.map((rows) => rows.map(deliveryOf)), Effect.orDie),
      delivered: (ids, now) =>
        ids.length === 0 ? Effect.void : Effect.orDie(sql`UPDATE webhook_deliveries
          SET delivered_at = ${at(now)}, attempts = attempts + 1, last_error = NULL
          WHERE ${sql.in("id", ids)} AND delivered_at IS NULL`)
    })
  })
)
