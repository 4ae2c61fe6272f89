import { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"

// What differs between SQLite and PostgreSQL, in one place, so the migrations and the stores keep one text
// of SQL. Times: INTEGER milliseconds in SQLite, timestamptz in PostgreSQL. Row locks: PostgreSQL runs
// READ COMMITTED and needs FOR UPDATE where a transaction reads then writes; SQLite's BEGIN IMMEDIATE already
// holds the write lock for the whole transaction, and has no FOR UPDATE.
export const Dialect = Effect.map(SqlClient, (sql) => {
  const pg = sql.onDialectOrElse({ pg: () => true, orElse: () => false })
  return {
    pg,
    time: (ms: number): number | Date => (pg ? new Date(ms) : ms),
    forUpdate: sql.literal(pg ? "FOR UPDATE" : ""),
    forUpdateSkipLocked: sql.literal(pg ? "FOR UPDATE SKIP LOCKED" : ""),
    types: {
      serial: sql.literal(pg ? "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY" : "INTEGER PRIMARY KEY AUTOINCREMENT"),
      reference: sql.literal(pg ? "BIGINT" : "INTEGER"),
      money: sql.literal(pg ? "BIGINT" : "INTEGER"),
      time: sql.literal(pg ? "TIMESTAMPTZ" : "INTEGER")
    }
  } as const
})

// A time column or aggregate as read back: a Date from PostgreSQL, a number from SQLite.
export const millisOf = (value: unknown): number => (value instanceof Date ? value.getTime() : Number(value))
