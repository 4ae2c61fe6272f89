import { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { Dialect } from "./Dialect.ts"

// Every list and filter the service issues is served by an index (issue #44; test/storage/IndexedStatements.*):
// a client's events of one type, newest first; a feed's subscriptions, and the subscriptions in one status, in id
// order (the listing and the CSV export page by id); a transfer's refunds as its client lists them; the refund a
// key made, newest first; an endpoint's deliveries, which deleting the endpoint deletes (its foreign key); a
// subscription's unused tokens of one purpose, which a confirmation uses up.
export const m0011_indexes = Effect.gen(function*() {
  const sql = yield* SqlClient
  const { mysql, where } = yield* Dialect
  // MariaDB indexes a TEXT column (a status, an event's type, a token's purpose) by a prefix of it only.
  const text = (column: string) => sql.literal(mysql ? `${column}(64)` : column)
  const drop = (index: string, table: string) =>
    sql`DROP INDEX ${sql.literal(index)}${sql.literal(mysql ? ` ON ${table}` : "")}`
  yield* sql`CREATE INDEX events_owner_type_created ON events (owner, ${text("type")}, created_at, id)`
  yield* sql`CREATE INDEX subscriptions_feed_id ON subscriptions (feed, id)`
  yield* sql`CREATE INDEX subscriptions_status_id ON subscriptions (status, id)`
  yield* sql`CREATE INDEX refunds_client_transfer_created ON refunds (client_id, transfer_id, created_at, id)`
  yield* drop("refunds_transfer_created", "refunds")
  yield* sql`CREATE INDEX refunds_key_created ON refunds (client_id, idempotency_key, created_at, id)
    ${where("idempotency_key IS NOT NULL")}`
  yield* drop("refunds_key", "refunds")
  yield* sql`CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id)`
  yield* sql`CREATE INDEX subscription_tokens_unused ON subscription_tokens (subscription_id, ${text("purpose")}${
    sql.literal(mysql ? ", used_at" : "")
  }) ${where("used_at IS NULL")}`
})
