import { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"
import type { UnsettledRule } from "../../core/payments/Transfer.ts"

// What differs between SQLite, PostgreSQL and MySQL/MariaDB, in one place, so the migrations and the stores keep
// one text of SQL. Times: INTEGER milliseconds in SQLite, timestamptz in PostgreSQL, BIGINT milliseconds in
// MariaDB (no time zone to get wrong between a server and its clients). Row locks: PostgreSQL and MariaDB need
// FOR UPDATE where a transaction reads then writes; SQLite's BEGIN IMMEDIATE already holds the write lock for
// the whole transaction, and has no FOR UPDATE. MariaDB indexes no TEXT column whole and has no partial index:
// a text column in a key, an index or a reference is a VARCHAR there, and an index covers every row; its tables
// are InnoDB, utf8mb4, with binary collation (a key or reference compares byte for byte, as elsewhere).
export const Dialect = Effect.map(SqlClient, (sql) => {
  const pg = sql.onDialectOrElse({ pg: () => true, orElse: () => false })
  const mysql = sql.onDialectOrElse({ mysql: () => true, orElse: () => false })
  const server = pg || mysql
  return {
    pg,
    mysql,
    time: (ms: number): number | Date => (pg ? new Date(ms) : ms),
    forUpdate: sql.literal(server ? "FOR UPDATE" : ""),
    forUpdateSkipLocked: sql.literal(server ? "FOR UPDATE SKIP LOCKED" : ""),
    // A partial index's condition, where the database has them.
    where: (condition: string) => sql.literal(mysql ? "" : `WHERE ${condition}`),
    types: {
      serial: sql.literal(
        pg
          ? "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"
          : mysql
          ? "BIGINT AUTO_INCREMENT PRIMARY KEY"
          : "INTEGER PRIMARY KEY AUTOINCREMENT"
      ),
      reference: sql.literal(server ? "BIGINT" : "INTEGER"),
      money: sql.literal(server ? "BIGINT" : "INTEGER"),
      time: sql.literal(pg ? "TIMESTAMPTZ" : mysql ? "BIGINT" : "INTEGER"),
      key: sql.literal(mysql ? "VARCHAR(255)" : "TEXT"),
      table: sql.literal(mysql ? " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin" : "")
    }
  } as const
})

// The rows after a cursor (created_at, id) in a newest-first list, as a condition an index on (..., created_at, id)
// serves whole: a row comparison on PostgreSQL, which takes it as one index range; elsewhere the range on
// created_at, then the ties of that millisecond by id.
export const olderThan = (sql: SqlClient, createdAt: unknown, id: string) =>
  sql.onDialectOrElse({
    pg: () => sql`(created_at, id) < (${createdAt}, ${id})`,
    orElse: () => sql`created_at <= ${createdAt} AND (created_at < ${createdAt} OR id < ${id})`
  })

// A time as the dialect's parameter, where a statement is built on the client (Dialect's `time`, without it).
export const timeOf = (sql: SqlClient, ms: number): number | Date =>
  sql.onDialectOrElse({ pg: () => new Date(ms), orElse: () => ms })

// A time column or aggregate as read back: a Date from PostgreSQL, a number from SQLite and MariaDB.
export const millisOf = (value: unknown): number => (value instanceof Date ? value.getTime() : Number(value))

// Values core decides (statuses) as SQL string literals, for statements written once at load: a literal, not a
// parameter, so that the partial indexes whose condition names the same values still serve the statement.
export const sqlStrings = (values: ReadonlyArray<string>): string =>
  values.map((v) => `'${v.replaceAll("'", "''")}'`).join(", ")

// Core's unsettled rule (UnsettledTransfers, UnsettledRefunds) as a condition on a table's status and created_at,
// `createdBefore` the placeholder of the pending lease's end. It starts with `status IN (all)`, the condition of
// the table's partial index.
export const unsettledCondition = (rule: UnsettledRule<string>, createdBefore: string): string =>
  `status IN (${sqlStrings(rule.all)}) AND (status IN (${sqlStrings(rule.anyAge)}) OR (status IN (${
    sqlStrings(rule.afterLease)
  }) AND created_at <= ${createdBefore}))`
