import { DateTime, Effect, Layer, Option } from "effect"
import { WebhookStore } from "../../core/webhooks/Webhooks.ts"
import { deliveryOf, make as makeSqlWebhookStore, targetOf } from "../sql/SqlWebhookStore.ts"
import { PgDirect, statement } from "./PgClient.ts"

// The webhook store on PostgreSQL: what the delivery worker runs for each batch (its endpoint, the claim, the
// mark) as named statements on PgDirect, each one round trip; the rest as adapters/sql/SqlWebhookStore.ts has
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
const delivered = statement(
  "deliveries_delivered",
  `UPDATE webhook_deliveries SET delivered_at = $2::timestamptz, attempts = attempts + 1, last_error = NULL
   WHERE id = ANY($1::bigint[]) AND delivered_at IS NULL`
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
      delivered: (ids, now) =>
        ids.length === 0 ? Effect.void : Effect.orDie(Effect.asVoid(direct.query(delivered, [ids, at(now)])))
    })
  })
)
