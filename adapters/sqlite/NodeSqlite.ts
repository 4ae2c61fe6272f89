import { DatabaseSync, type SQLInputValue } from "node:sqlite"
import type { OpenSqlite } from "./SqliteDriver.ts"

// The SQLite built into Deno (and Node 22.5+) as `node:sqlite`. Deno cannot load better-sqlite3, a nan
// addon, so the Deno app stores through this one. The parameters are what @effect/sql's SQLite compiler made.
export const openNodeSqlite: OpenSqlite = (filename) => {
  const db = new DatabaseSync(filename)
  return {
    prepare: (sql) => {
      const statement = db.prepare(sql)
      return {
        reader: statement.columns().length > 0,
        // node:sqlite does not say; a statement that names a write is taken for one (at worst it ends the read
        // snapshot for nothing).
        readonly: !/\b(INSERT|UPDATE|DELETE|REPLACE|CREATE|DROP|ALTER)\b/i.test(sql),
        all: (params) => statement.all(...(params as ReadonlyArray<SQLInputValue>)),
        get: (params) => statement.get(...(params as ReadonlyArray<SQLInputValue>)),
        run: (params) => statement.run(...(params as ReadonlyArray<SQLInputValue>))
      }
    },
    exec: (sql) => db.exec(sql),
    close: () => db.close()
  }
}
