import { DateTime, Effect, Layer, Option } from "effect"
import { KeptAttempts, WebhookStore } from "../../core/webhooks/Webhooks.ts"
import { deliveryOf, make as makeSqlWebhookStore, targetOf } from "../sql/SqlWebhookStore.ts"
import { PgDirect, statement } from "./PgClient.ts"

// The webhook store on PostgreSQL: what the delivery worker runs for each batch (its endpoint, the claim, the
// mark, with its attempts) as named statements on PgDirect, each one round trip; the rest as adapters/sql/SqlWebhookStore.ts has
// it. A claim is one statement: the due deliveries locked (rows another instance holds are skipped, not waited
// for), leased, and returned with their events' bodies, so several instances deliver each delivery once.

const target = statement(
  "webhook_target",
  `SELECT url, secret, failing_since, retry_at, disabled_at FROM webhook_endpoints WHERE id = $1`
)
const claim = statement(
  "claim_deliveries",
  `WITH due AS (
     SELECT id FROM webhook_deliveries
     WHERE endpoint_id = $1 AND delivered_at IS NULL AND next_attempt_at <= $2::timestamptz
     ORDER BY next_attempt_at, id LIMIT $4 FOR UPDATE SKIP LOCKED
   ), leased AS (
     UPDATE webhook_deliveries d SET next_attempt_at = $3::timestamptz FROM due WHERE d.id = due.id
     RETURNING d.id, d.event_id, d.attempts
   )
   SELECT l.id, l.event_id, l.attempts, e.body FROM leased l JOIN events e ON e.id = l.event_id ORDER BY l.id`
)
// A mark and its attempts' rows in one statement: each attempt numbered by the count the mark left, in its slot
// (AttemptMigration.ts), over the attempt KeptAttempts before it.
const slot = (attempts: string) => `(${attempts} - 1) % ${KeptAttempts}`
const overwrite = `ON CONFLICT (delivery_id, slot) DO UPDATE SET attempt = excluded.attempt,
   attempted_at = excluded.attempted_at, status = excluded.status, failure = excluded.failure`
const delivered = statement(
  "deliveries_delivered",
  `WITH marked AS (
     UPDATE webhook_deliveries SET delivered_at = $2::timestamptz, attempts = attempts + 1, last_error = NULL
     WHERE id = ANY($1::bigint[]) AND delivered_at IS NULL RETURNING id, attempts
   )
   INSERT INTO webhook_attempts (delivery_id, slot, attempt, attempted_at, status)
   SELECT m.id, ${slot("m.attempts")}, m.attempts, $2::timestamptz, a.status
   FROM marked m JOIN unnest($1::bigint[], $3::int[]) AS a (id, status) ON a.id = m.id
   ${overwrite}`
)
const failed = statement(
  "delivery_failed",
  `WITH marked AS (
     UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt_at = $2::timestamptz, last_error = $3
     WHERE id = $1 AND delivered_at IS NULL RETURNING id, attempts
   )
   INSERT INTO webhook_attempts (delivery_id, slot, attempt, attempted_at, status, failure)
   SELECT id, ${slot("attempts")}, attempts, $4::timestamptz, $5::int, $6 FROM marked
   ${overwrite}`
)

const at = (t: DateTime.Utc) => new Date(DateTime.toEpochMillis(t))

export const layer = Layer.effect(
  WebhookStore,
  Effect.gen(function*() {
    const base = yield* makeSqlWebhookStore
    const direct = yield* PgDirect
    return WebhookStore.of({
      ...base,
      target: (id) =>
        Effect.orDie(
          Effect.map(direct.query(target, [id]), (rows) => Option.map(Option.fromNullable(rows[0]), targetOf))
        ),
      claim: (endpoint, now, leaseUntil, limit) =>
        Effect.orDie(
          Effect.map(direct.query(claim, [endpoint, at(now), at(leaseUntil), limit]), (rows) => rows.map(deliveryOf))
        ),
      delivered: (answers, now) =>
        answers.length === 0 ? Effect.void : Effect.orDie(Effect.asVoid(direct.query(delivered, [
          answers.map((a) => a.id),
          at(now),
          answers.map((a) => a.status)
        ]))),
      failed: (id, next, reason, attempt) =>
        Effect.orDie(Effect.asVoid(direct.query(failed, [
          id,
          at(next),
          reason.slice(0, 500),
          at(attempt.at),
          attempt.status ?? null,
          attempt.failure ?? null
        ])))
    })
  })
)
