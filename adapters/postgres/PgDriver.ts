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
  // The client's own limit on a statement's answer: a connection whose server or network went silent fails then.
  readonly query_timeout?: number
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

export const makePool = (config: PoolConfig): PgPool => new Pool(config) as unknown as PgPool
