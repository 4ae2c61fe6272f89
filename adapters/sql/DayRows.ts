import type { SqlClient } from "@effect/sql/SqlClient"
import { DateTime, Effect } from "effect"
import type { CurrencyCode } from "../../core/payments/Currency.ts"
import type { ClientId } from "../../core/payments/Transfer.ts"
import type { DayTotal } from "../../core/payments/TransferStorage.ts"
import type { DayCount } from "../../core/subscriptions/SubscriptionStorage.ts"
import type { Owner } from "../../core/webhooks/Webhooks.ts"
import { timeOf } from "./Dialect.ts"

// The charts' per-day groups (TransferStorage's transferDays and refundDays, SubscriptionStorage's eventDays): a
// range of created_at read through an index led by the owner's column, grouped by the UTC day.
// A day is whole days since 1970-01-01: milliseconds divided and rounded down in SQLite and MariaDB, the UTC date
// less 1970-01-01 in PostgreSQL. Sums are read back as text: exact for any total.

// The day of created_at, as SQLite's statements (adapters/sqlite) write it.
export const SqliteDay = "created_at / 86400000"

const dayOf = (sql: SqlClient) =>
  sql.literal(
    sql.onDialectOrElse({
      pg: () => "((created_at AT TIME ZONE 'UTC')::date - DATE '1970-01-01')",
      mysql: () => "created_at DIV 86400000",
      orElse: () => SqliteDay
    })
  )
const text = (sql: SqlClient) => sql.literal(sql.onDialectOrElse({ mysql: () => "CHAR", orElse: () => "TEXT" }))

export interface DayTotalRow {
  readonly day: number | string
  readonly currency: string
  readonly status: string
  readonly count: number | bigint | string
  readonly amount: string
}
export const toDayTotal = <S extends string>(row: DayTotalRow): DayTotal<S> => ({
  day: Number(row.day),
  currency: row.currency as CurrencyCode,
  status: row.status as S,
  count: Number(row.count),
  amount: BigInt(row.amount)
})
export interface DayCountRow {
  readonly day: number | string
  readonly kind: string
  readonly count: number | bigint | string
}
export const toDayCount = <K extends string>(row: DayCountRow): DayCount<K> => ({
  day: Number(row.day),
  kind: row.kind as K,
  count: Number(row.count)
})

const millis = DateTime.toEpochMillis

export const dayTotals = <S extends string>(sql: SqlClient, table: "transfers" | "refunds") =>
(
  client: ClientId,
  from: DateTime.Utc,
  before: DateTime.Utc
): Effect.Effect<ReadonlyArray<DayTotal<S>>> =>
  sql<DayTotalRow>`SELECT ${dayOf(sql)} AS day, currency, status, COUNT(*) AS count,
    CAST(SUM(amount) AS ${text(sql)}) AS amount FROM ${sql.literal(table)}
    WHERE client_id = ${client} AND created_at >= ${timeOf(sql, millis(from))} AND created_at < ${
    timeOf(sql, millis(before))
  } GROUP BY ${dayOf(sql)}, currency, status`.pipe(Effect.map((rows) => rows.map(toDayTotal<S>)), Effect.orDie)

// Signups are counted per day and feed in signup_days (migration 0018), not read from the subscriptions, which
// the pending purge deletes. A server database adds a signup to one of SignupSlots rows of its day and feed, by
// the subscription's id, so that concurrent signups of one feed do not queue on one row lock until their
// commits; SQLite, one writer at a time, keeps one row (slot 0). A read sums them: a range of the primary key
// (day, feed, slot).
export const SignupSlots = 8
// SQLite's text of the read (`?` parameters: from, before).
export const SqliteSignupDays = `SELECT day, 'signup' AS kind, SUM(signups) AS count FROM signup_days
  WHERE day >= ? AND day < ? GROUP BY day`
export const signupDays =
  (sql: SqlClient) => (from: number, before: number): Effect.Effect<ReadonlyArray<DayCount<"signup">>> =>
    sql<DayCountRow>`SELECT day, 'signup' AS kind, SUM(signups) AS count FROM signup_days
    WHERE day >= ${from} AND day < ${before} GROUP BY day`.pipe(
      Effect.map((rows) => rows.map(toDayCount<"signup">)),
      Effect.orDie
    )

export const eventDays =
  (sql: SqlClient) =>
  (owner: Owner, from: DateTime.Utc, before: DateTime.Utc): Effect.Effect<ReadonlyArray<DayCount>> =>
    sql<DayCountRow>`SELECT ${dayOf(sql)} AS day, type AS kind, COUNT(*) AS count FROM events
    WHERE owner = ${owner} AND created_at >= ${timeOf(sql, millis(from))} AND created_at < ${
      timeOf(sql, millis(before))
    } GROUP BY ${dayOf(sql)}, type`.pipe(Effect.map((rows) => rows.map(toDayCount)), Effect.orDie)

// SQLite's texts of the same statements (`?` parameters: client or owner, from, before).
export const sqliteDayTotals = (table: "transfers" | "refunds") =>
  `SELECT ${SqliteDay} AS day, currency, status, COUNT(*) AS count, CAST(SUM(amount) AS TEXT) AS amount
  FROM ${table} WHERE client_id = ? AND created_at >= ? AND created_at < ? GROUP BY ${SqliteDay}, currency, status`
export const SqliteEventDays = `SELECT ${SqliteDay} AS day, type AS kind, COUNT(*) AS count FROM events
  WHERE owner = ? AND created_at >= ? AND created_at < ? GROUP BY ${SqliteDay}, type`
