// Every statement the service sends SQLite while the storage contract suites run, asked for its plan (EXPLAIN
// QUERY PLAN) on a migrated database: none may read rows of a table that grows with the business that it does not
// return, beyond a page. Without statistics (no ANALYZE), SQLite plans as if every table were large, as they become.
import { assert, describe, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { Effect } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll } from "vitest"
import { runMigrations } from "../../adapters/sql/Migrations.ts"
import {
  Capture,
  captureSqlite,
  filteredColumns,
  growing,
  type Issued,
  readBacklogs,
  serviceStatements,
  soleTable
} from "./IndexedStatements.ts"
import { withSqlRawRows } from "./RawRows.ts"
import { refundStoreContract } from "./RefundStore.contract.ts"
import { subscriptionStoreContract } from "./SubscriptionStore.contract.ts"
import {
  sqliteClient,
  tempDir,
  tempSqliteStore,
  tempSqliteTransferStore,
  tempSqliteWebhookStores
} from "./TempSqlite.ts"
import { transferStoreContract } from "./TransferStore.contract.ts"
import { webhookStoreContract } from "./WebhookStore.contract.ts"

const capture = new Capture()
const dir = mkdtempSync(join(tmpdir(), "paysub-plans-"))
const planned = join(dir, "plans.db")
const migrations = new Set<string>()

beforeAll(async () => {
  captureSqlite(capture)
  await Effect.runPromise(Effect.scoped(Effect.provide(runMigrations, sqliteClient(planned))))
  for (const sql of capture.issued.keys()) migrations.add(sql)
  capture.issued.clear()
})
afterAll(() => {
  capture.restore()
  rmSync(dir, { recursive: true, force: true })
})

// The plan's steps that read rows of a growing table the statement does not return, beyond a page:
// - `SCAN t` or `SCAN t USING [COVERING] INDEX i`, the table or a whole index, unless i is partial (it holds only
//   the rows of its condition, a backlog such as the unsettled transfers, which the statement's condition names);
// - a search of a statement that reads one table, where a column it compares with a parameter is not among the
//   index's constraints (the rows that differ in it are read and dropped), unless the search is an equality on a
//   unique key (one row) or the index is partial on that column (it holds only the rows of its condition);
// - `USE TEMP B-TREE FOR ORDER BY` in a statement with a LIMIT: every matching row is read to be sorted.
const sqliteWaste = (db: Database.Database, partial: ReadonlyMap<string, string>, { params, sql }: Issued) => {
  const plan = db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as Array<{ detail: string }>
  const sole = soleTable(sql)
  return plan.flatMap(({ detail }): ReadonlyArray<string> => {
    const scan = /^SCAN (\w+)(?: USING (?:COVERING )?INDEX (\w+))?/.exec(detail)
    if (scan !== null) return growing.has(scan[1]!) && !partial.has(scan[2] ?? "") ? [detail] : []
    const search = /^SEARCH (\w+) USING (?:COVERING )?(?:INDEX (\w+)|INTEGER PRIMARY KEY) \((.*)\)/.exec(detail)
    if (search !== null && search[1] === sole) {
      const [, , index, constraint] = search
      const constrained = [...constraint!.matchAll(/(\w+)[=<>]/g)].map((m) => m[1]!.toLowerCase())
      const unique = (index === undefined || index.startsWith("sqlite_autoindex_")) && !/[<>]/.test(constraint!)
      const condition = partial.get(index ?? "") ?? ""
      const residual = filteredColumns(sql).filter((c) =>
        !constrained.includes(c) && !(c === "id" && constrained.includes("rowid")) &&
        !new RegExp(`\\b${c}\\b`, "i").test(condition)
      )
      return residual.length > 0 && !unique ? [`${detail}, then filtered on ${residual.join(", ")}`] : []
    }
    return /^USE TEMP B-TREE FOR ORDER BY/.test(detail) && sole !== undefined && /\bLIMIT\b/i.test(sql) ? [detail] : []
  })
}

describe("SQLite: the statements the service issues", () => {
  transferStoreContract("SQLite", withSqlRawRows(tempSqliteTransferStore))
  refundStoreContract("SQLite", withSqlRawRows(tempSqliteTransferStore))
  subscriptionStoreContract("SQLite", withSqlRawRows(tempSqliteStore))
  webhookStoreContract("SQLite", tempSqliteWebhookStores)
  it.scoped("the /metrics backlogs", () =>
    Effect.gen(function*() {
      const backlogs = yield* readBacklogs(sqliteClient(join(yield* tempDir, "health.db")))
      assert.strictEqual(backlogs.mail.depth, 0)
    }))

  it("none reads rows of a growing table it does not return, beyond a page", () => {
    const statements = serviceStatements(capture, migrations)
    capture.restore()
    assert.isAbove(statements.length, 40)
    const db = new Database(planned, { readonly: true })
    try {
      // Each partial index's condition, by name.
      const partial = new Map(
        (db.prepare(`SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql LIKE '% WHERE %'`).all() as Array<
          {
            name: string
            sql: string
          }
        >).map((r) => [r.name, r.sql.slice(r.sql.search(/ WHERE /i))])
      )
      const waste = statements.flatMap((s) => sqliteWaste(db, partial, s).map((w) => `${w}\n    in: ${s.sql}`))
      assert.deepStrictEqual(waste, [])
    } finally {
      db.close()
    }
  })
})
