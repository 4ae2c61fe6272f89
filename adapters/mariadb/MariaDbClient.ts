import { MysqlClient } from "@effect/sql-mysql2"
import { SqlClient, TransactionConnection } from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Config, Context, Effect, Exit, Layer, Option, Redacted } from "effect"
import { boundPoolWait } from "./PoolWait.ts"
import { watchedSockets } from "./WatchedSockets.ts"

const atLeast = (name: string, min: number, fallback: number) =>
  Config.integer(name).pipe(
    Config.validate({ message: `${name} must be an integer of at least ${min}`, validation: (n) => n >= min }),
    Config.withDefault(fallback)
  )

// How long a request waits for MariaDB before it answers 503 (docs/operations.md, "When the database is away"),
// as PostgreSQL's PG_* settings: a connection (a free one of the pool, PoolWait.ts, or a new one); a statement's
// answer, which MariaDB cancels at MARIADB_STATEMENT_TIMEOUT_MS (`max_statement_time`, set on a connection with
// its first transaction's isolation level, and kept for its later statements) and the service gives up on 1 s
// later, closing that connection and the idle ones (WatchedSockets.ts); TCP keepalive on every connection.
export const mariaDbTimeoutsConfig = Config.all({
  connectMs: atLeast("MARIADB_CONNECT_TIMEOUT_MS", 1, 2_000),
  statementMs: atLeast("MARIADB_STATEMENT_TIMEOUT_MS", 1, 5_000),
  keepAliveMs: atLeast("MARIADB_KEEPALIVE_MS", 1, 10_000)
})
const SilentAfterCancelMs = 1_000

// What a transaction sends before its first statement, per client (transactionOn).
const preambles = new WeakMap<SqlClient, string>()

// MariaDB (or MySQL 8) through @effect/sql-mysql2: mysql://user:password@host:port/database, or mariadb://.
// Times are BIGINT milliseconds (adapters/sql/Dialect.ts), so no time zone stands between the server and the
// instances.
export const layer = (url: Redacted.Redacted<string>) => {
  const parsed = new URL(Redacted.value(url))
  const host = parsed.hostname
  const port = Number(parsed.port || 3306)
  return Layer.unwrapEffect(Effect.map(Effect.orDie(mariaDbTimeoutsConfig), (timeouts) => {
    const sockets = watchedSockets({
      host,
      port,
      keepAliveMs: timeouts.keepAliveMs,
      silentMs: timeouts.statementMs + SilentAfterCancelMs
    })
    return MysqlClient.layer({
      host,
      port,
      database: decodeURIComponent(parsed.pathname.slice(1)),
      username: decodeURIComponent(parsed.username) || "root",
      ...(parsed.password === "" ? {} : { password: Redacted.make(decodeURIComponent(parsed.password)) }),
      maxConnections: 10,
      poolConfig: {
        maxIdle: 10,
        charset: "utf8mb4_bin",
        connectTimeout: timeouts.connectMs,
        // mysql2 makes each connection's socket with this, handing it the pool (PoolWait.ts).
        stream: (options: { readonly config: { readonly pool?: unknown } }) => {
          boundPoolWait(options.config.pool, timeouts.connectMs)
          return sockets()
        }
      }
      // Its ConfigError is in the type only: this layer reads no Config.
    }).pipe(
      // MariaDB's own limits (MySQL has neither variable): a statement cancelled at the statement time-out, and a
      // transaction left idle as long (one whose client the network lost would hold its locks) rolled back.
      Layer.tap((context) => {
        const sql = Context.get(context, SqlClient)
        return Effect.map(Effect.orDie(sql<{ version: string }>`SELECT VERSION() AS version`), ([row]) => {
          if (!/mariadb/i.test(row?.version ?? "")) return
          preambles.set(
            sql,
            `SET SESSION max_statement_time = ${timeouts.statementMs / 1000}, idle_transaction_timeout = ${
              Math.ceil(timeouts.statementMs / 1000)
            }; `
          )
        })
      }),
      Layer.catchAll((error) => error._tag === "SqlError" ? Layer.fail(error) : Layer.die(error))
    )
  }))
}

// Two transactions that lock rows in opposite order (two first requests for one key both find its gap empty,
// then both insert) deadlock: MariaDB rolls one back, and it runs again from its start, where its locking read
// now finds the other's row. So does one that lost a race to a unique key.
export const errnoOf = (error: unknown): number =>
  (error as { _tag?: string })._tag === "SqlError"
    ? (error as SqlError & { cause: { errno?: number } }).cause?.errno ?? 0
    : 0
const isRetryable = (error: unknown) => [1213, 1205, 1062].includes(errnoOf(error))

// A transaction runs READ COMMITTED, as on PostgreSQL: under InnoDB's default REPEATABLE READ a locking scan
// keeps every row it read locked (a SKIP LOCKED claim would hide rows it did not take) and its gap locks
// deadlock first inserts. The level is set on the connection before BEGIN (after it, it would not apply), in
// the same round trip; COMMIT ends it, or ROLLBACK on any failure, defect or interruption. Work already in a
// transaction joins it: an operation of several statements is atomic alone and inside `transact` alike.
export const transactionOn = (sql: SqlClient) => <A, E, R>(work: Effect.Effect<A, E, R>) => {
  const begin = Effect.scoped(Effect.gen(function*() {
    const connection = yield* sql.reserve
    const run = (statement: string) => connection.executeUnprepared(statement, [], undefined)
    return yield* Effect.acquireUseRelease(
      run(`${preambles.get(sql) ?? ""}SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED; START TRANSACTION`),
      () => Effect.provideService(work, TransactionConnection, [connection, 0]),
      (_, exit) => Effect.orDie(run(Exit.isSuccess(exit) ? "COMMIT" : "ROLLBACK"))
    )
  })).pipe(
    // A port's statement turns its SqlError into a defect (adapters/mariadb/MariaDbUnitOfWork.ts): a retryable
    // one is run again all the same.
    Effect.catchAllDefect((defect) => isRetryable(defect) ? Effect.fail(defect as SqlError) : Effect.die(defect)),
    Effect.retry({ while: isRetryable, times: 100 })
  )
  return Effect.flatMap(Effect.serviceOption(TransactionConnection), (open) => Option.isSome(open) ? work : begin)
}
