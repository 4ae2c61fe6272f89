// The few calls the SQL client needs from a synchronous SQLite binding. better-sqlite3 (Node) and the
// built-in node:sqlite (Deno) both fit behind it, so one client, one migration list and one storage adapter
// serve both runtimes.
export interface SqliteStatement {
  // It returns rows (a SELECT, or a write with RETURNING).
  readonly reader: boolean
  // It changes nothing: only such a statement may join the shared read snapshot (SqliteClient.ts).
  readonly readonly: boolean
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
