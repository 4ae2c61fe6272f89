import { MysqlClient } from "@effect/sql-mysql2"
import { SqlClient } from "@effect/sql/SqlClient"
import { Config, Effect, FiberRef, Layer, Redacted } from "effect"
import { type DirectPool, makeDirect, registerDirect } from "./MariaDbDirect.ts"
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

// MariaDB (or MySQL 8): one mysql2 pool, made by @effect/sql-mysql2 (migrations, readiness, the statements
// that are not on a hot path) and shared with MariaDbDirect (the stores' hot statements, and every transaction):
// mysql://user:password@host:port/database, or mariadb://. Times are BIGINT milliseconds (adapters/sql/Dialect.ts),
// so no time zone stands between the server and the instances.
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
    // @effect/sql-mysql2 does not hand its pool out; mysql2 gives it to the `stream` factory of each connection.
    let pool: DirectPool | undefined
    const client = MysqlClient.layer({
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
          pool = options.config.pool as DirectPool
          return sockets()
        }
      }
      // Its ConfigError is in the type only: this layer reads no Config.
    })
    // MariaDB's own limits (MySQL has neither variable): a statement cancelled at the statement time-out, and a
    // transaction left idle as long (one whose client the network lost would hold its locks) rolled back. The
    // client connected at start (its SELECT 1), so the pool is known by now.
    const direct = Layer.effectDiscard(
      Effect.gen(function*() {
        const sql = yield* SqlClient
        const [row] = yield* Effect.orDie(sql<{ version: string }>`SELECT VERSION() AS version`)
        const limits = /mariadb/i.test(row?.version ?? "")
          ? `SET SESSION max_statement_time = ${timeouts.statementMs / 1000}, idle_transaction_timeout = ${
            Math.ceil(timeouts.statementMs / 1000)
          }; `
          : ""
        if (pool === undefined) return yield* Effect.dieMessage("mysql2 made no connection: its pool is unknown")
        registerDirect(sql, makeDirect(pool, limits, yield* FiberRef.get(FiberRef.currentTracerEnabled)))
      })
    )
    return Layer.provideMerge(direct, client).pipe(
      Layer.catchAll((error) => error._tag === "SqlError" ? Layer.fail(error) : Layer.die(error))
    )
  }))
}
