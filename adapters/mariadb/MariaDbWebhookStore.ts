import { SqlClient } from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { DateTime, Effect, Layer } from "effect"
import { KeptAttempts, WebhookStore } from "../../core/webhooks/Webhooks.ts"
import { deliveryOf, make as makeSqlWebhookStore, targetOf } from "../sql/SqlWebhookStore.ts"
import { MariaDbDirect } from "./MariaDbDirect.ts"
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
    const direct = yield* MariaDbDirect
    // An attempt's slot (adapters/sql/AttemptMigration.ts), written over by the attempt KeptAttempts after it.
    const slot = sql.literal(`(attempts - 1) % ${KeptAttempts}`)
    const overwrite = sql.literal(`ON DUPLICATE KEY UPDATE attempt = VALUES(attempt),
      attempted_at = VALUES(attempted_at), status = VALUES(status), failure = VALUES(failure)`)
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
        direct.transaction(Effect.flatMap(
          claim(sql, direct, "webhook_deliveries", sql`next_attempt_at = ${at(leaseUntil)}`)(
            sql<{ id: number }>`SELECT id FROM webhook_deliveries FORCE INDEX (webhook_deliveries_due)
              WHERE endpoint_id = ${endpoint} AND delivered_at IS NULL AND next_attempt_at <= ${at(now)}
              ORDER BY next_attempt_at, id LIMIT ${limit} FOR UPDATE SKIP LOCKED`
          ),
          (due) =>
            due.length === 0 ? Effect.succeed([]) : sql`SELECT d.id, d.event_id, d.attempts, e.body
              FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
              WHERE ${sql.in("d.id", due.map((d) => d.id))} ORDER BY d.id`
        )).pipe(Effect.map((rows) => rows.map(deliveryOf)), Effect.orDie),
      // The mark, then its attempts' rows, each numbered by the count the mark left: the rows it marked are those
      // delivered at this very time (the mark holds their locks until the commit).
      delivered: (answers, now) => {
        if (answers.length === 0) return Effect.void
        const ids = answers.map((a) => a.id)
        const status = sql.literal(
          `CASE id ${answers.map((a) => `WHEN ${Number(a.id)} THEN ${Number(a.status)}`).join(" ")} END`
        )
        return Effect.orDie(
          direct.transaction(Effect.zipRight(
            sql`UPDATE webhook_deliveries SET delivered_at = ${at(now)}, attempts = attempts + 1, last_error = NULL
            WHERE ${sql.in("id", ids)} AND delivered_at IS NULL`,
            sql`INSERT INTO webhook_attempts (delivery_id, slot, attempt, attempted_at, status)
            SELECT id, ${slot}, attempts, ${at(now)}, ${status} FROM webhook_deliveries
            WHERE ${sql.in("id", ids)} AND delivered_at = ${at(now)} ${overwrite}`
          ))
        )
      },
      failed: (id, next, reason, attempt) =>
        Effect.orDie(
          direct.transaction(Effect.flatMap(
            wrote(sql`UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt_at = ${at(next)},
            last_error = ${reason.slice(0, 500)} WHERE id = ${id} AND delivered_at IS NULL`),
            (marked): Effect.Effect<unknown, SqlError> =>
              marked
                ? sql`INSERT INTO webhook_attempts (delivery_id, slot, attempt, attempted_at, status, failure)
                SELECT id, ${slot}, attempts, ${at(attempt.at)}, ${attempt.status ?? null}, ${attempt.failure ?? null}
                FROM webhook_deliveries WHERE id = ${id} ${overwrite}`
                : Effect.void
          ))
        )
    })
  })
)
