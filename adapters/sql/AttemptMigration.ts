import { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { Dialect } from "./Dialect.ts"

// The latest attempts of each webhook delivery (core/webhooks/Webhooks.ts, AttemptState): its number, when its
// outcome came, and the receiver's HTTP status or why there was none. A delivery has KeptAttempts slots: attempt
// n goes to slot (n - 1) mod KeptAttempts, over the attempt KeptAttempts before it, so a delivery keeps a bounded
// number of rows however often it is tried. Written with the delivery's mark, in its transaction; read by
// delivery through the key. Deleting a delivery (its endpoint's deletion does) deletes its attempts. Deliveries
// made before this migration have no attempts on record.
export const m0017_webhook_attempts = Effect.gen(function*() {
  const sql = yield* SqlClient
  const { types: T } = yield* Dialect
  yield* sql`CREATE TABLE webhook_attempts (
    delivery_id ${T.reference} NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    slot INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    attempted_at ${T.time} NOT NULL,
    status INTEGER,
    failure TEXT,
    PRIMARY KEY (delivery_id, slot)
  )${T.table}`
})
