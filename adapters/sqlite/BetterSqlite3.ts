import Database from "better-sqlite3"
import type { OpenSqlite } from "./SqliteDriver.ts"

export const openBetterSqlite3: OpenSqlite = (filename) => {
  const db = new Database(filename)
  return {
    prepare: (sql) => {
      const statement = db.prepare(sql)
      return {
        reader: statement.reader,
        all: (params) => statement.all(...params),
        get: (params) => statement.get(...params),
        run: (params) => statement.run(...params)
      }
    },
    exec: (sql) => void db.exec(sql),
    close: () => db.close()
  }
}
