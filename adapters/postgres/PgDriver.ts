import type { Socket } from "node:net"
import { Pool, types } from "pg"
import pgUtils from "pg/lib/utils.js"

// The parts of node-postgres's Pool this adapter uses, as types of our own: `pg` comes with @effect/sql-pg
// without type declarations (@types/pg is not a dependency), and Deno's type check reads none for it either.
export interface PoolConfig {
  readonly connectionString?: string
  readonly max?: number
  readonly application_name?: string
  readonly connectionTimeoutMillis?: number
  // Sent at connect: the server cancels a statement that runs longer (SQLSTATE 57014).
  readonly statement_timeout?: number
  // Sent at connect: the server ends a session left idle in a transaction this long, and frees its locks.
  readonly idle_in_transaction_session_timeout?: number
  readonly keepAlive?: boolean
  readonly keepAliveInitialDelayMillis?: number
}
// A named statement is parsed and planned once per connection, then only bound and executed.
export interface QueryConfig {
  readonly name?: string
  readonly text: string
  readonly values?: Array<unknown>
}
export interface PoolQueryResult {
  readonly rows: Array<any>
}
export type QueryCallback = (error: Error | undefined, result: PoolQueryResult) => void
export interface PoolClient {
  query(config: QueryConfig | PreparedQuery | string, callback: QueryCallback): void
  // An error (or true) closes the connection instead of returning it to the pool.
  release(destroy?: Error | boolean): void
  on(event: "error", listener: (error: Error) => void): this
}
export interface PgPool {
  query(config: QueryConfig | PreparedQuery | string, callback: QueryCallback): void
  query(text: string): Promise<PoolQueryResult>
  connect(callback: (error: Error | undefined, client: PoolClient | undefined) => void): void
  end(): Promise<void>
  on(event: "error", listener: (error: Error) => void): this
}

// What the pool's events hand over: pg's Client, with its socket and whether a statement awaits its answer
// (pg 8's own name for it).
interface DriverClient extends PoolClient {
  readonly connection: { readonly stream: Socket }
  emit(event: "error", error: Error): boolean
  _getActiveQuery(): unknown
}
interface DriverPool extends PgPool {
  on(event: "error", listener: (error: Error) => void): this
  on(event: "connect" | "acquire" | "remove", listener: (client: DriverClient) => void): this
  on(event: "release", listener: (error: unknown, client: DriverClient) => void): this
}

// ---- a named statement run without describing its result each time

// What pg's Client hands the query it runs (its Connection), as far as PreparedQuery uses it.
interface Wire {
  readonly stream: { cork(): void; uncork(): void }
  readonly parsedStatements: Record<string, string | undefined>
  readonly submittedNamedStatements: Record<string, string | undefined>
  parse(config: { readonly text: string; readonly name: string }): void
  bind(config: {
    readonly portal: string
    readonly statement: string
    readonly values: ReadonlyArray<unknown>
    readonly binary: boolean
    readonly valueMapper: (value: unknown) => unknown
  }): void
  describe(config: { readonly type: "P"; readonly name: string }): void
  execute(config: { readonly portal: string }): void
  close(config: { readonly type: "S"; readonly name: string }): void
  sync(): void
  sendCopyFail(message: string): void
}
interface RowDescription {
  readonly fields: ReadonlyArray<{ readonly name: string; readonly dataTypeID: number }>
}

// A statement's result columns: their names, and the parser of each column's type (pg's own, text format).
interface Columns {
  readonly names: ReadonlyArray<string>
  readonly parsers: ReadonlyArray<(raw: string) => unknown>
}
const NoColumns: Columns = { names: [], parsers: [] }
// By statement name: a name always has the same text (PgClient.statement), so the same columns.
const columnsOf = new Map<string, Columns>()

// A named statement as pg's Query runs it (Parse once per connection, then Bind, Execute, Sync in one write),
// except that Describe is sent only until the statement's columns are known: pg's Query describes the portal on
// every execution, and parses the RowDescription that comes back and builds a parser per column each time, the
// larger part of what a statement costs the driver. The rows are the objects pg would make: a property per column,
// in order, each value through the parser pg would have used (only `rows` is kept).
export class PreparedQuery {
  callback: QueryCallback | undefined = undefined
  private columns: Columns | undefined
  private described = false
  private readonly rows: Array<Record<string, unknown>> = []
  private failure: unknown = undefined

  constructor(readonly name: string, readonly text: string, readonly values: ReadonlyArray<unknown>) {
    this.columns = columnsOf.get(name)
  }

  submit(connection: Wire): Error | null {
    const previous = connection.parsedStatements[this.name] ?? connection.submittedNamedStatements[this.name]
    if (previous !== undefined && previous !== this.text) {
      return new Error(`Prepared statements must be unique - '${this.name}' was used for a different statement`)
    }
    connection.stream.cork()
    try {
      if (previous === undefined) {
        connection.parse({ text: this.text, name: this.name })
        connection.submittedNamedStatements[this.name] = this.text
      }
      try {
        connection.bind({
          portal: "",
          statement: this.name,
          values: this.values,
          binary: false,
          valueMapper: pgUtils.prepareValue
        })
      } catch (error) {
        connection.close({ type: "S", name: this.name })
        connection.sync()
        this.handleError(error)
        return null
      }
      if (this.columns === undefined) {
        this.described = true
        connection.describe({ type: "P", name: "" })
      }
      connection.execute({ portal: "" })
      connection.sync()
    } finally {
      connection.stream.uncork()
    }
    return null
  }

  handleRowDescription(message: RowDescription) {
    const columns = {
      names: message.fields.map((f) => f.name),
      parsers: message.fields.map((f) => types.getTypeParser(f.dataTypeID, "text"))
    }
    this.columns = columns
    columnsOf.set(this.name, columns)
  }

  handleDataRow(message: { readonly fields: ReadonlyArray<string | null> }) {
    const columns = this.columns
    if (this.failure !== undefined) return
    if (columns === undefined) {
      this.failure = new Error(`A row of ${this.name} came before its columns`)
      return
    }
    try {
      const row: Record<string, unknown> = {}
      for (let i = 0; i < columns.names.length; i++) {
        const raw = message.fields[i]
        row[columns.names[i]!] = raw === null || raw === undefined ? null : columns.parsers[i]!(raw)
      }
      this.rows.push(row)
    } catch (error) {
      this.failure = error
    }
  }

  // Described, and no RowDescription came (NoData): the statement returns no columns.
  handleCommandComplete() {
    if (this.described && this.columns === undefined) columnsOf.set(this.name, NoColumns)
  }

  handleEmptyQuery() {}
  handlePortalSuspended() {}
  handleCopyInResponse(connection: Wire) {
    connection.sendCopyFail("No source stream defined")
  }
  handleCopyData() {}

  handleError(error: unknown) {
    const failure = this.failure ?? error
    this.failure = undefined
    this.callback?.(failure as Error, { rows: [] })
  }

  handleReadyForQuery() {
    if (this.failure !== undefined) return this.handleError(this.failure)
    this.callback?.(undefined, { rows: this.rows })
  }
}

export const ReadTimeoutMessage = "Query read timeout"

// A pool whose connections are closed when found dead, and which then closes its idle ones too.
// - A connection whose statement has had no byte back for `silentMs` is closed (its statement fails with
//   "Query read timeout"): pg's own `query_timeout` fails the statement but keeps the connection, and a caller
//   that releases it without an error (as @effect/sql-pg does) hands the next statement a connection still
//   waiting for the first one's answer.
// - A connection that dies unasked (that silence, a reset, the server going away) closes every idle one: they went
//   through the same network, and one black-holed while idle would otherwise be found dead only by the next
//   request to use it, after `silentMs`, however long after the network came back. The next requests open fresh
//   ones. Healthy idle connections closed so cost a connect each.
export const makePool = (config: PoolConfig & { readonly silentMs: number }): PgPool => {
  const { silentMs, ...options } = config
  const pool = new Pool(options) as unknown as DriverPool
  const idle = new Set<DriverClient>()
  const evicted = new WeakSet<DriverClient>()
  // An idle connection's error is how pg-pool is told to drop it: at once, so that no statement gets it meanwhile.
  const evictIdle = () => {
    for (const client of idle) {
      evicted.add(client)
      client.emit("error", new Error("Connection closed: another connection of the pool was found dead"))
      client.connection.stream.destroy()
    }
    idle.clear()
  }
  pool.on("connect", (client) => {
    const socket = client.connection.stream
    socket.setTimeout(silentMs)
    socket.on("timeout", () => {
      if (client._getActiveQuery()) socket.destroy(new Error(ReadTimeoutMessage))
    })
    client.on("error", () => {
      if (!evicted.has(client)) evictIdle()
      evicted.add(client)
    })
  })
  pool.on("acquire", (client) => idle.delete(client))
  pool.on("release", (error, client) => error ? idle.delete(client) : idle.add(client))
  pool.on("remove", (client) => idle.delete(client))
  return pool
}
