import type { Socket } from "node:net"
import { Pool } from "pg"

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
  query(config: QueryConfig | string, callback: QueryCallback): void
  // An error (or true) closes the connection instead of returning it to the pool.
  release(destroy?: Error | boolean): void
  on(event: "error", listener: (error: Error) => void): this
}
export interface PgPool {
  query(config: QueryConfig | string, callback: QueryCallback): void
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
