// What the storage contract suites read beside the ports: rows as stored, to count them and to check that no
// card data is in any of them. SQL databases answer with SELECTs; the in-memory adapter with its tables, each
// row flattened to one level of fields (a nested field is named by its path).
import { SqlClient } from "@effect/sql/SqlClient"
import { Context, DateTime, Effect, Layer } from "effect"
import { MemoryDatabase, type Tables } from "../../adapters/memory/MemoryDatabase.ts"

export type Table =
  | "transfers"
  | "idempotency_keys"
  | "api_clients"
  | "subscriptions"
  | "signup_days"
  | "mail_outbox"
  | "subscription_tokens"
  | "refunds"
  | "balances"
  | "events"
  | "webhook_endpoints"
  | "webhook_deliveries"

export interface RawRowsShape {
  // Rows of a table; for transfers, of a client or with a reference when given.
  readonly rows: (
    table: Table,
    where?: { readonly client?: string; readonly reference?: string }
  ) => Effect.Effect<ReadonlyArray<Record<string, unknown>>>
}
export class RawRows extends Context.Tag("test/RawRows")<RawRows, RawRowsShape>() {}

export const count = (table: Table, where?: { readonly client?: string; readonly reference?: string }) =>
  Effect.flatMap(RawRows, (raw) => Effect.map(raw.rows(table, where), (rows) => rows.length))

export const sqlRawRows = Layer.effect(
  RawRows,
  Effect.map(SqlClient, (sql) => ({
    rows: (table, where = {}) =>
      Effect.orDie(sql<Record<string, unknown>>`SELECT * FROM ${sql(table)} WHERE ${
        sql.and([
          ...(where.client === undefined ? [] : [sql`client_id = ${where.client}`]),
          ...(where.reference === undefined ? [] : [sql`reference = ${where.reference}`])
        ])
      }`)
  }))
)

const flatten = (value: unknown, path = "", into: Record<string, unknown> = {}): Record<string, unknown> => {
  if (DateTime.isDateTime(value)) into[path] = DateTime.formatIso(value as DateTime.DateTime)
  else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) flatten(v, path === "" ? k : `${path}.${k}`, into)
  } else into[path] = value === undefined ? null : value
  return into
}

const tableOf: Record<Table, (t: Tables) => Map<unknown, unknown>> = {
  transfers: (t) => t.transfers,
  idempotency_keys: (t) => t.keys,
  api_clients: (t) => t.clients,
  subscriptions: (t) => t.subscriptions,
  signup_days: (t) => t.signupDays,
  mail_outbox: (t) => t.outbox,
  subscription_tokens: (t) => t.tokens,
  refunds: (t) => t.refunds,
  balances: (t) => t.balances,
  events: (t) => t.events,
  webhook_endpoints: (t) => t.endpoints,
  webhook_deliveries: (t) => t.deliveries
}

export const memoryRawRows = Layer.effect(
  RawRows,
  Effect.map(MemoryDatabase, (db) => ({
    rows: (table, where = {}) =>
      Effect.sync(() =>
        [...tableOf[table](db.tables)].map(([key, row]) => flatten({ key, row })).filter((r) =>
          (where.client === undefined || r["row.transfer.clientId"] === where.client) &&
          (where.reference === undefined || r["row.transfer.reference"] === where.reference)
        )
      )
  }))
)

// A SQL database's layer with its RawRows.
export const withSqlRawRows = <A>(makeLayer: () => Layer.Layer<A | SqlClient, unknown>) => () =>
  Layer.provideMerge(sqlRawRows, makeLayer())
