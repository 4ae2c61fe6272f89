import Database from "better-sqlite3"
import type { OpenSqlite } from "./SqliteDriver.ts"

type Row = Record<string, unknown>

// better-sqlite3 builds a row object in C++ one property at a time (a string-table lookup per column, per row):
// for a transfer's 22 columns that is half the cost of reading it. Rows are read as arrays instead and built by
// an object literal made once per statement, which gives the same object (same keys, same order; a later
// column of the same name wins, as before) at about half the cost. The names are SQLite's column names of our
// own statements, quoted by JSON.stringify; `__proto__`, the one name a literal would treat differently, keeps
// the driver's own objects.
const rowBuilder = (names: ReadonlyArray<string>): ((values: ReadonlyArray<unknown>) => Row) | undefined =>
  names.includes("__proto__")
    ? undefined
    : (new Function("v", `return {${names.map((name, i) => `${JSON.stringify(name)}: v[${i}]`).join(", ")}}`) as (
      values: ReadonlyArray<unknown>
    ) => Row)

export const openBetterSqlite3: OpenSqlite = (filename) => {
  const db = new Database(filename)
  return {
    prepare: (sql) => {
      const statement = db.prepare(sql)
      const build = statement.reader ? rowBuilder(statement.columns().map((column) => column.name)) : undefined
      if (build === undefined) {
        return {
          reader: statement.reader,
          readonly: statement.readonly,
          all: (params) => statement.all(...params),
          get: (params) => statement.get(...params),
          run: (params) => statement.run(...params)
        }
      }
      statement.raw(true)
      return {
        reader: true,
        readonly: statement.readonly,
        all: (params) => (statement.all(...params) as Array<ReadonlyArray<unknown>>).map(build),
        get: (params) => {
          const values = statement.get(...params) as ReadonlyArray<unknown> | undefined
          return values === undefined ? undefined : build(values)
        },
        run: (params) => statement.run(...params)
      }
    },
    exec: (sql) => void db.exec(sql),
    close: () => db.close()
  }
}
