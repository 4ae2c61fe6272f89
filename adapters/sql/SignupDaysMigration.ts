import { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { Dialect } from "./Dialect.ts"

// The list owner's chart counts signups per feed and UTC day (whole days since 1970-01-01) in a table of their
// own, written with each signup, because the pending purge deletes the subscriptions never confirmed. A server
// database spreads a day's signups over a few rows (`slot`) so that concurrent signups do not wait on one row;
// a read sums them. The counts start from the subscriptions there are, each on the day of its first signup (the
// signups already purged, and the returns of addresses that had left, were not kept). The chart no longer reads
// subscriptions by created time: their index goes.
export const m0018_signup_days = Effect.gen(function*() {
  const sql = yield* SqlClient
  const { mysql, pg, types: T } = yield* Dialect
  yield* sql`CREATE TABLE signup_days (
    day INTEGER NOT NULL,
    feed ${T.key} NOT NULL,
    slot INTEGER NOT NULL,
    signups ${T.money} NOT NULL,
    PRIMARY KEY (day, feed, slot)
  )${T.table}`
  const day = sql.literal(
    pg
      ? "((created_at AT TIME ZONE 'UTC')::date - DATE '1970-01-01')"
      : mysql
      ? "created_at DIV 86400000"
      : "created_at / 86400000"
  )
  yield* sql`INSERT INTO signup_days (day, feed, slot, signups)
    SELECT ${day}, feed, 0, COUNT(*) FROM subscriptions GROUP BY ${day}, feed`
  yield* sql`DROP INDEX subscriptions_created${sql.literal(mysql ? " ON subscriptions" : "")}`
})
