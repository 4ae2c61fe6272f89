import { SqlClient } from "@effect/sql/SqlClient"
import { assert, describe, it, layer } from "@effect/vitest"
import Database from "better-sqlite3"
import { Context, Effect, Layer } from "effect"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { SqliteDirect } from "../../adapters/sqlite/SqliteClient.ts"
import { MailThrottle } from "../../core/subscriptions/Subscription.ts"
import { runProcesses } from "./Processes.ts"
import { sqliteClient, sqliteStoreOn, tempDir } from "./TempSqlite.ts"

// The storage contracts run once on SQLite, in IndexedStatements.sqlite.test.ts, which EXPLAINs every statement
// they issue.

const countRows = (table: "subscriptions" | "mail_outbox") =>
  Effect.flatMap(SqlClient, (sql) => sql<{ n: unknown }>`SELECT count(*) AS n FROM ${sql(table)}`).pipe(
    Effect.map((rows) => Number(rows[0]!.n))
  )

describe("SQLite storage", () => {
  // Group commit: transactions that run while a group is open share its COMMIT, and one that fails rolls
  // back to its own savepoint without taking the others with it. (Two connections to one file in one process
  // are not a supported set-up: better-sqlite3's busy wait blocks the event loop that would commit the other
  // connection's group. The test with real processes below covers several writers on one file.)
  it.scoped("concurrent transactions commit together; a failing one rolls back alone", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const context = yield* Layer.build(sqliteStoreOn(join(dir, "group.db")))
      const sql = Context.get(context, SqlClient)
      yield* sql`CREATE TABLE t (n INTEGER PRIMARY KEY)`
      const results = yield* Effect.all(
        Array.from({ length: 40 }, (_, n) =>
          sql.withTransaction(Effect.gen(function*() {
            yield* sql`INSERT INTO t (n) VALUES (${n})`
            if (n % 3 === 0) return yield* Effect.fail(`transaction ${n} fails`)
            yield* sql`INSERT INTO t (n) VALUES (${n + 1000})`
          })).pipe(Effect.either)),
        { concurrency: "unbounded" }
      )
      const kept = (yield* sql<{ n: number }>`SELECT n FROM t ORDER BY n`).map((r) => r.n)
      const expected = Array.from({ length: 40 }, (_, n) => n).filter((n) => n % 3 !== 0)
      assert.deepStrictEqual(kept, [...expected, ...expected.map((n) => n + 1000)])
      assert.strictEqual(results.filter((r) => r._tag === "Left").length, 14)
    }))

  // A transaction that fails while it is alone in its group must not leave the group's BEGIN IMMEDIATE open: the
  // write lock would stay taken, and every other process on the file would time out waiting for it.
  it.scopedLive("a failing transaction alone in its group gives the write lock back", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const filename = join(dir, "lock.db")
      const context = yield* Layer.build(sqliteClient(filename))
      const sql = Context.get(context, SqlClient)
      const direct = Context.get(context, SqliteDirect)
      yield* sql`CREATE TABLE t (n INTEGER PRIMARY KEY)`
      const other = new Database(filename)
      other.pragma("busy_timeout = 0")
      yield* Effect.addFinalizer(() => Effect.sync(() => other.close()))
      const writableByAnother = Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 50))).pipe(
        Effect.map(() => {
          try {
            other.exec("BEGIN IMMEDIATE")
            other.exec("ROLLBACK")
            return true
          } catch {
            return false
          }
        })
      )

      const viaSql = yield* Effect.either(
        sql.withTransaction(Effect.zipRight(sql`INSERT INTO t (n) VALUES (1)`, Effect.fail("fails")))
      )
      assert.strictEqual(viaSql._tag, "Left")
      assert.isTrue(yield* writableByAnother, "after a failed @effect/sql transaction")

      const viaDirect = yield* Effect.either(direct.transaction((db) => {
        db.run("INSERT INTO t (n) VALUES (?)", [2])
        throw new Error("fails")
      }))
      assert.strictEqual(viaDirect._tag, "Left")
      assert.isTrue(yield* writableByAnother, "after a failed direct transaction")
      assert.deepStrictEqual(other.prepare("SELECT n FROM t").all(), [])
    }))
})

const subscribeProcess = fileURLToPath(new URL("./SubscribeProcess.ts", import.meta.url))

// Separate processes, each with its own connection, as several app instances on one file would be. Every
// process subscribes the same addresses in the same order, so most requests race one from another process.
// Without BEGIN IMMEDIATE (or without the transaction) a process fails with "database is locked" or a
// UNIQUE violation.
describe("SQLite storage across processes", () => {
  it.live(
    "several processes subscribing the same addresses at once: one row each, mails within the throttle",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const dir = yield* tempDir
        const filename = join(dir, "processes.db")
        const store = yield* Layer.build(sqliteStoreOn(filename))
        const processes = 4
        const addresses = 100
        const results = yield* runProcesses(subscribeProcess, processes, (i) => [filename, String(addresses), `${i}`])
          .pipe(Effect.timeout("50 seconds"))
        for (const [i, result] of results.entries()) {
          assert.strictEqual(result.code, 0, `process ${i} failed:\n${result.stderr}`)
        }
        const queued = results.reduce((sum, r) => sum + Number(/queued (\d+)/.exec(r.stdout)?.[1] ?? NaN), 0)
        const expectedMails = Math.min(processes, MailThrottle.maxMails)
        const sql = Context.get(store, SqlClient)
        assert.strictEqual(yield* Effect.provide(countRows("subscriptions"), store), addresses)
        type Count = { n: unknown }
        const perSubscription = yield* sql<Count>`SELECT count(*) AS n FROM mail_outbox GROUP BY subscription_id`
        assert.lengthOf(perSubscription, addresses)
        for (const row of perSubscription) assert.strictEqual(Number(row.n), expectedMails)
        assert.strictEqual(queued, addresses * expectedMails)
      })),
    60_000
  )
})

const pragmaClient = Layer.unwrapScoped(Effect.map(tempDir, (dir) => sqliteClient(join(dir, "pragmas.db"))))

layer(pragmaClient)("SqliteClient.layer", (it) => {
  it.effect("opens the file in WAL mode with synchronous = FULL and foreign keys on", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const journal = yield* sql<{ journal_mode: string }>`PRAGMA journal_mode`
      assert.deepStrictEqual(journal, [{ journal_mode: "wal" }])
      const synchronous = yield* sql<{ synchronous: number }>`PRAGMA synchronous`
      assert.deepStrictEqual(synchronous, [{ synchronous: 2 }])
      const foreignKeys = yield* sql<{ foreign_keys: number }>`PRAGMA foreign_keys`
      assert.deepStrictEqual(foreignKeys, [{ foreign_keys: 1 }])
    }))
})
