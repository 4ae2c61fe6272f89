// A write that returns rows (INSERT ... RETURNING), sent outside a transaction through @effect/sql, answers only
// once it is committed: another connection sees its row the moment it answers. Run as a read (better-sqlite3 calls
// such a statement a reader), it joined the shared read snapshot, whose COMMIT waits for the microtask after the
// synchronous run: the service could answer, and crash, before it.
import { SqlClient } from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { Effect } from "effect"
import { join } from "node:path"
import { openNodeSqlite } from "../../adapters/sqlite/NodeSqlite.ts"
import { layer as SqliteClient } from "../../adapters/sqlite/SqliteClient.ts"
import { sqliteClient, tempDir } from "./TempSqlite.ts"

const seenElsewhere = (file: string) => {
  const other = new Database(file, { readonly: true })
  try {
    return (other.prepare("SELECT count(*) AS n FROM t").get() as { n: number }).n
  } finally {
    other.close()
  }
}

const committedBeforeAnswer = (client: (file: string) => ReturnType<typeof sqliteClient>) =>
  Effect.gen(function*() {
    const file = join(yield* tempDir, "returning.db")
    yield* Effect.gen(function*() {
      const sql = yield* SqlClient
      yield* sql`CREATE TABLE t (id INTEGER PRIMARY KEY, x INTEGER NOT NULL)`
      // A read first: it opens the shared read snapshot, as a request's reads do before its write.
      yield* sql`SELECT count(*) AS n FROM t`
      const rows = yield* sql<{ id: number }>`INSERT INTO t (x) VALUES (1) RETURNING id`
      assert.strictEqual(rows.length, 1)
      assert.strictEqual(seenElsewhere(file), 1, "committed when it answered")
      yield* sql`UPDATE t SET x = 2 WHERE id = ${rows[0]!.id} RETURNING id`
      yield* sql`DELETE FROM t RETURNING id`
      assert.strictEqual(seenElsewhere(file), 0, "the delete committed when it answered")
    }).pipe(Effect.provide(client(file)))
  }).pipe(Effect.scoped)

describe("SQLite: writes that return rows, outside a transaction", () => {
  it.effect("better-sqlite3: committed before they answer", () => committedBeforeAnswer(sqliteClient))
  it.effect("node:sqlite: committed before they answer", () =>
    committedBeforeAnswer((filename) => SqliteClient({ filename, open: openNodeSqlite })))
})
