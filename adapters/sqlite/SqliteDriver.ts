// The few calls the SQL client needs from a synchronous SQLite binding. better-sqlite3 (Node) and the
// built-in node:sqlite (Deno) both fit behind it, so one client, one migration list and one storage adapter
// serve both runtimes.
export interface SqliteStatement {
  readonly reader: boolean
  readonly all: (params: ReadonlyArray<unknown>) => ReadonlyArray<unknown>
  readonly get: (params: ReadonlyArray<unknown>) => unknown
  readonly run: (
    params: ReadonlyArray<unknown>
  ) => { readonly changes: number | bigint; readonly lastInsertRowid: number | bigint }
}

export interface SqliteDriver {
  readonly prepare: (sql: string) => SqliteStatement
  readonly exec: (sql: string) => void
  readonly close: () => void
}

export type OpenSqlite = (filename: string) => SqliteDriver
