import { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { Dialect } from "./Dialect.ts"

// The list owner's outbox page: the mails sent since a time (a range of sent_at), and the failing ones (unsent,
// with attempts), counted and listed most attempts first. Where there are partial indexes, two of them, which the
// worker's claim of due mails (sent_at IS NULL, by next_attempt_at) cannot mistake for its own; MariaDB has none,
// and one index serves both there (its claim names its index).
export const m0014_outbox_sent = Effect.gen(function*() {
  const sql = yield* SqlClient
  const { mysql } = yield* Dialect
  if (mysql) {
    yield* sql`CREATE INDEX mail_outbox_sent ON mail_outbox (sent_at, attempts, id)`
    return
  }
  yield* sql`CREATE INDEX mail_outbox_sent ON mail_outbox (sent_at) WHERE sent_at IS NOT NULL`
  yield* sql`CREATE INDEX mail_outbox_failing ON mail_outbox (attempts, id) WHERE sent_at IS NULL`
})
