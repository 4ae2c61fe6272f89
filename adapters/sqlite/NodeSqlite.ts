// eslint-disable-next-line @typescript-eslint/triple-slash-reference -- a declaration, not a module: tsc and deno check both need it
/// <reference path="./node-sqlite.d.ts" />
import { DatabaseSync } from "node:sqlite"
import type { OpenSqlite } from "./SqliteDriver.ts"

// The SQLite built into Deno (and Node 22.5+) as `node:sqlite`. Deno cannot load better-sqlite3, a nan
// addon, so the Deno app stores through this one.
export const openNodeSqlite: OpenSqlite = (filename) => {
  const db = new DatabaseSync(filename)
  return {
    prepare: (sql) => {
      const statement = db.prepare(sql)
      return {
        reader: statement.columns().length > 0,
        all: (params) => statement.all(...params),
        get: (params) => statement.get(...params),
        run: (params) => statement.run(...params)
      }
    },
    exec: (sql) => db.exec(sql),
    close: () => db.close()
  }
}
