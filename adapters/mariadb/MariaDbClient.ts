import { MysqlClient } from "@effect/sql-mysql2"
import { type SqlClient, TransactionConnection } from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Exit, Layer, Option, Redacted } from "effect"

// MariaDB (or MySQL 8) through @effect/sql-mysql2: mysql://user:password@host:port/database, or mariadb://.
// Times are BIGINT milliseconds (adapters/sql/Dialect.ts), so no time zone stands between the server and the
// instances.
export const layer = (url: Redacted.Redacted<string>) => {
  const parsed = new URL(Redacted.value(url))
  return MysqlClient.layer({
    host: parsed.hostname,
    port: Number(parsed.port || 3306),
    database: decodeURIComponent(parsed.pathname.slice(1)),
    username: decodeURIComponent(parsed.username) || "root",
    ...(parsed.password === "" ? {} : { password: Redacted.make(decodeURIComponent(parsed.password)) }),
    maxConnections: 10,
    poolConfig: { maxIdle: 10, charset: "utf8mb4_bin" }
    // Its ConfigError is in the type only: this layer reads no Config.
  }).pipe(Layer.catchAll((error) => error._tag === "SqlError" ? Layer.fail(error) : Layer.die(error)))
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
      run("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED; START TRANSACTION"),
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
