// What the index tests share (test/storage/IndexedStatements.*.test.ts): the statements the service issues, as
// its database driver receives them while the storage contract suites run, and which of those may be checked.
// Each driver is wrapped where every statement passes (better-sqlite3's prepare, pg's Client.query, mysql2's
// Connection.query and execute), so nothing the adapters send escapes, whichever path it takes (@effect/sql or
// the direct ones). Not a test file itself.
import type { SqlClient } from "@effect/sql/SqlClient"
import Database from "better-sqlite3"
import { Effect, Layer } from "effect"
import mysql from "mysql2"
import pg from "pg"
import { runMigrations } from "../../adapters/sql/Migrations.ts"
import { layer as SqlStorageHealth } from "../../adapters/sql/SqlStorageHealth.ts"
import { StorageHealth } from "../../core/shared/StorageHealth.ts"

export interface Issued {
  readonly sql: string
  readonly params: ReadonlyArray<unknown>
}

// Statements by text, each with the first parameters it was sent with (some drivers' first call has none).
export class Capture {
  readonly issued = new Map<string, Issued>()
  private readonly restores: Array<() => void> = []
  add(sql: string, params: ReadonlyArray<unknown> = []) {
    if ((this.issued.get(sql)?.params.length ?? 0) === 0) this.issued.set(sql, { sql, params })
  }
  patch<T extends object, K extends keyof T>(target: T, name: K, wrap: (original: T[K]) => T[K]) {
    const original = target[name]
    target[name] = wrap(original)
    this.restores.push(() => (target[name] = original))
  }
  restore() {
    for (const undo of this.restores.splice(0).reverse()) undo()
  }
}

export const captureSqlite = (capture: Capture) =>
  capture.patch(Database.prototype, "prepare", (prepare) =>
    function(this: Database.Database, sql: string) {
      const statement = prepare.call(this, sql) as any
      for (const method of ["all", "get", "run", "iterate"] as const) {
        const call = statement[method].bind(statement)
        statement[method] = (...params: Array<unknown>) => {
          capture.add(sql, params)
          return call(...params)
        }
      }
      return statement
    } as any)

export const capturePostgres = (capture: Capture) =>
  capture.patch(
    pg.Client.prototype,
    "query",
    (query) =>
      function(this: unknown, config: any, values?: any, callback?: any) {
        if (typeof config === "string") capture.add(config, Array.isArray(values) ? values : [])
        else if (config !== null && typeof config === "object" && typeof config.text === "string") {
          capture.add(config.text, config.values ?? (Array.isArray(values) ? values : []))
        }
        return (query as any).call(this, config, values, callback)
      } as any
  )

export const captureMariaDb = (capture: Capture) => {
  const prototype = (mysql as any).Connection.prototype
  for (const method of ["query", "execute"] as const) {
    capture.patch(
      prototype,
      method,
      (original: any) =>
        function(this: unknown, sql: any, values?: any, callback?: any) {
          const text = typeof sql === "string" ? sql : sql?.sql
          const params = Array.isArray(sql?.values) ? sql.values : Array.isArray(values) ? values : []
          if (typeof text === "string") capture.add(text, params)
          return original.call(this, sql, values, callback)
        }
    )
  }
}

// The tables that grow with the business: rows per transfer, request, subscriber or event, and per day and feed
// (the signups' counts). Clients, their
// endpoints and balances grow with the clients and merchants, not with the traffic; feeds, the service's secrets,
// the rate limit buckets and the migrations' own table stay small.
export const growing = new Set([
  "transfers",
  "idempotency_keys",
  "refunds",
  "subscriptions",
  "signup_days",
  "subscription_tokens",
  "mail_outbox",
  "events",
  "webhook_deliveries",
  "webhook_attempts"
])

// The table a statement reads alone, if it reads one growing table and no other (no join, no subquery of another
// table; a batch's `DELETE ... WHERE id IN (SELECT id ... LIMIT ?)` reads its own table alone).
export const soleTable = (sql: string): string | undefined => {
  const tables = new Set([...sql.matchAll(/\b(?:FROM|JOIN|UPDATE|INTO)\s+[`"]?(\w+)/gi)].map((m) => m[1]!))
  const [table] = tables
  return tables.size === 1 && growing.has(table!) ? table : undefined
}

// The columns a statement compares with a parameter in its WHERE clause (`col = ?`, `col = $1`, `col IN (?, ...)`).
export const filteredColumns = (sql: string): ReadonlyArray<string> => {
  const where = /\bWHERE\b([\s\S]*?)(?:\bORDER BY\b|\bLIMIT\b|\bRETURNING\b|\bGROUP BY\b|$)/i.exec(sql)?.[1] ?? ""
  return [...new Set([...where.matchAll(/(\w+)\s*(?:=|IN\s*\()\s*(?:\?|\$\d+)/gi)].map((m) => m[1]!.toLowerCase()))]
}

// Statements a plan can be asked for: reads and writes, not transaction control, locks or schema changes.
export const planned = (sql: string) => /^\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\b/i.test(sql)

// What the contract suites' RawRows (test/storage/RawRows.ts) reads beside the ports: the test's, not the
// service's. No adapter statement starts with `SELECT *`.
export const byTheTests = (sql: string) => /^SELECT \* FROM [`"]?\w+[`"]?( WHERE|$)/.test(sql.trim())

// The statements to check: those the service issued, less the migrations' (`migrations`: what running them
// alone issued, run once at start), less the tests' own reads.
export const serviceStatements = (capture: Capture, migrations: ReadonlySet<string>): ReadonlyArray<Issued> =>
  [...capture.issued.values()].filter(({ sql }) => planned(sql) && !migrations.has(sql) && !byTheTests(sql))

// What the contract suites do not issue: the backlog counts `/metrics` reads (StorageHealth), on a migrated database
// over `client`, so that the statements are captured beside the stores'.
export const readBacklogs = <E>(client: Layer.Layer<SqlClient, E>) =>
  Effect.flatMap(StorageHealth, (health) => health.backlogs).pipe(
    Effect.provide(Layer.merge(Layer.effectDiscard(runMigrations), SqlStorageHealth).pipe(Layer.provide(client)))
  )
