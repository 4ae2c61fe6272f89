import { SqlClient, TransactionConnection } from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import { Effect, Exit, Option, Stream } from "effect"

// The direct path on MariaDB, as PgDirect is on PostgreSQL: a statement is one prepared statement (mysql2's
// `execute`, parsed once per connection) on a pooled connection, or on the transaction's; a transaction is
// START TRANSACTION ... COMMIT on a connection of its own. One Effect per statement, instead of the few dozen @effect/sql
// spends on compiling, tracing and acquiring. Statements on @effect/sql inside a transaction run on its
// connection too: it is the fiber's TransactionConnection.

// The parts of mysql2's pool and connections used here, as types of our own (mysql2 hands the pool over
// untyped: MariaDbClient.ts).
type Callback = (error: Error | null, result?: unknown) => void
interface Executor {
  execute(
    options: { readonly sql: string; readonly values: ReadonlyArray<unknown>; rowsAsArray?: boolean },
    callback: Callback
  ): void
  query(sql: string, values: ReadonlyArray<unknown>, callback: Callback): void
}
export interface DirectPool extends Executor {
  getConnection(callback: (error: Error | null, connection?: PooledConnection) => void): void
}
interface PooledConnection extends Executor {
  release(): void
}

export interface MariaDbDirectShape {
  // The rows a statement answers (none for a write).
  readonly query: <A = any>(sql: string, values: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<A>, SqlError>
  // The rows a write matched (mysql2 connects with FOUND_ROWS): MariaDB has no UPDATE ... RETURNING.
  readonly matched: (sql: string, values: ReadonlyArray<unknown>) => Effect.Effect<number, SqlError>
  // Runs `work` in one transaction (makeDirect says how); work already in one joins it.
  readonly transaction: <A, E, R>(work: Effect.Effect<A, E, R>) => Effect.Effect<A, E | SqlError, R>
  // Runs `body` (statements separated by ";", whose `?` mysql2 fills in from `values`, escaped) in one transaction
  // of its own (never inside another), in one round trip: START TRANSACTION, the body, COMMIT; `then` reads the body's results, in order.
  // A statement that fails stops the body with the transaction open: `recover` ends it (COMMIT or ROLLBACK through
  // `send`, on the same connection), and answers or fails.
  readonly script: <A>(
    body: string,
    values: ReadonlyArray<unknown>,
    then: (results: ReadonlyArray<unknown>) => A,
    recover: (error: SqlError, send: (sql: string) => Effect.Effect<unknown, SqlError>) => Effect.Effect<A, SqlError>
  ) => Effect.Effect<A, SqlError>
}

// The usual ending of a script that failed: ROLLBACK, and the failure (its own, whatever the ROLLBACK met: on a
// connection that went away, the server ends the transaction itself).
export const rollBack = (error: SqlError, send: (sql: string) => Effect.Effect<unknown, SqlError>) =>
  Effect.zipRight(Effect.ignore(send("ROLLBACK")), Effect.fail(error))

// The direct path over a SqlClient's pool, as MariaDbClient.ts made them together: the stores need only the
// SqlClient.
const directs = new WeakMap<SqlClient, MariaDbDirectShape>()
export const MariaDbDirect = Effect.flatMap(SqlClient, (sql) => {
  const direct = directs.get(sql)
  return direct === undefined
    ? Effect.dieMessage("MariaDbDirect: a SqlClient not made by MariaDbClient.ts")
    : Effect.succeed(direct)
})
export const registerDirect = (sql: SqlClient, direct: MariaDbDirectShape) => void directs.set(sql, direct)

// A command given to a connection whose socket a reset has just closed, before mysql2 has learnt it (the socket's
// error comes a tick later), fails with Node's ERR_STREAM_DESTROYED: that is the connection lost, as mysql2 says it.
const lost = (cause: unknown) =>
  (cause as { code?: unknown } | null)?.code === "ERR_STREAM_DESTROYED"
    ? Object.assign(new Error("Connection lost: the connection closed before the command was sent", { cause }), {
      code: "PROTOCOL_CONNECTION_LOST",
      fatal: true
    })
    : cause
const failed = (cause: unknown) => new SqlError({ cause: lost(cause), message: "Failed to execute statement" })

const execute = (target: Executor, sql: string, values: ReadonlyArray<unknown>, rowsAsArray = false) =>
  Effect.async<unknown, SqlError>((resume) => {
    try {
      target.execute(
        { sql, values, rowsAsArray },
        (err, result) => resume(err ? Effect.fail(failed(err)) : Effect.succeed(result))
      )
    } catch (err) {
      resume(Effect.fail(failed(err)))
    }
  })

// Sent as text: statements of their own (BEGIN, COMMIT), several at once.
const simple = (target: Executor, sql: string, values: ReadonlyArray<unknown> = []) =>
  Effect.async<unknown, SqlError>((resume) => {
    try {
      target.query(sql, values, (err, result) => resume(err ? Effect.fail(failed(err)) : Effect.succeed(result)))
    } catch (err) {
      resume(Effect.fail(failed(err)))
    }
  })

const rowsOf = (result: unknown): ReadonlyArray<any> => Array.isArray(result) ? result : []
const matchedOf = (result: unknown) => (result as { affectedRows?: number }).affectedRows ?? 0

// A transaction's connection as @effect/sql's statements use it.
class DirectConnection implements Connection {
  constructor(readonly connection: PooledConnection) {}
  execute(
    sql: string,
    params: ReadonlyArray<unknown>,
    transform?: <A extends object>(rows: ReadonlyArray<A>) => ReadonlyArray<A>
  ) {
    const rows = Effect.map(execute(this.connection, sql, params), rowsOf)
    return transform === undefined ? rows : Effect.map(rows, transform)
  }
  executeRaw(sql: string, params: ReadonlyArray<unknown>) {
    return execute(this.connection, sql, params)
  }
  executeValues(sql: string, params: ReadonlyArray<unknown>) {
    return Effect.map(execute(this.connection, sql, params, true), rowsOf)
  }
  executeUnprepared(
    sql: string,
    params: ReadonlyArray<unknown>,
    transform?: <A extends object>(rows: ReadonlyArray<A>) => ReadonlyArray<A>
  ) {
    const rows = Effect.map(simple(this.connection, sql, params), rowsOf)
    return transform === undefined ? rows : Effect.map(rows, transform)
  }
  executeStream(
    sql: string,
    params: ReadonlyArray<unknown>,
    transform?: <A extends object>(rows: ReadonlyArray<A>) => ReadonlyArray<A>
  ) {
    return Stream.flatMap(Stream.fromEffect(this.execute(sql, params, transform)), Stream.fromIterable)
  }
}

// Two transactions that lock rows in opposite order (two first requests for one key both find its gap empty,
// then both insert) deadlock: MariaDB rolls one back, and it runs again from its start, where its locking read
// now finds the other's row. So does one that lost a race to a unique key.
export const errnoOf = (error: unknown): number =>
  (error as { _tag?: string })._tag === "SqlError"
    ? (error as SqlError & { cause: { errno?: number } }).cause?.errno ?? 0
    : 0
const isRetryable = (error: unknown) => {
  const errno = errnoOf(error)
  return errno === 1213 || errno === 1205 || errno === 1062
}
// `run` again at once after a retryable failure, up to 100 times. No Schedule: a run that succeeds (nearly every
// one) pays for nothing more than the catch.
const retried = <A, E, R>(run: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
  const attempt = (left: number): Effect.Effect<A, E, R> =>
    left === 0 ? run : Effect.catchIf(run, isRetryable, () => attempt(left - 1))
  return attempt(100)
}

// With a tracer on, each statement (its text: values are never in it) and each transaction is a span.
const traced = <A, E, R>(effect: Effect.Effect<A, E, R>, name: string, sql?: string) =>
  Effect.withSpan(effect, name, {
    kind: "client",
    attributes: { "db.system.name": "mariadb", ...(sql === undefined ? {} : { "db.query.text": sql }) }
  })

// A transaction runs READ COMMITTED, as on PostgreSQL: under InnoDB's default REPEATABLE READ a locking scan
// keeps every row it read locked (a SKIP LOCKED claim would hide rows it did not take) and its gap locks
// deadlock first inserts. The level is set on the connection with its first transaction, before BEGIN (after it,
// it would not apply), in the same round trip, with `limits` (MariaDbClient.ts), and kept for the connection's
// life; COMMIT ends it, or ROLLBACK on any failure, defect or interruption.
export const makeDirect = (pool: DirectPool, limits: string, tracing: boolean): MariaDbDirectShape => {
  const set = new WeakSet<PooledConnection>()
  const connect = Effect.async<PooledConnection, SqlError>((resume) => {
    pool.getConnection((err, connection) =>
      resume(
        err || connection === undefined
          ? Effect.fail(new SqlError({ cause: err, message: "Failed to acquire connection" }))
          : Effect.succeed(connection)
      )
    )
  })
  const preamble = `${limits}SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED; `
  const preambleResults = preamble.split(";").length - 1
  const begin = (connection: PooledConnection) =>
    set.has(connection)
      ? simple(connection, "START TRANSACTION")
      : Effect.tap(simple(connection, `${preamble}START TRANSACTION`), () => set.add(connection))
  const open = <A, E, R>(work: Effect.Effect<A, E, R>) =>
    Effect.acquireUseRelease(
      connect,
      (connection) =>
        Effect.acquireUseRelease(
          begin(connection),
          () => Effect.provideService(work, TransactionConnection, [new DirectConnection(connection), 0]),
          (_, exit) => Effect.orDie(simple(connection, Exit.isSuccess(exit) ? "COMMIT" : "ROLLBACK"))
        ),
      (connection) => Effect.sync(() => connection.release())
    ).pipe(
      // A port's statement turns its SqlError into a defect (MariaDbUnitOfWork.ts): a retryable one is run again
      // all the same.
      Effect.catchAllDefect((defect) => isRetryable(defect) ? Effect.fail(defect as SqlError) : Effect.die(defect)),
      retried
    )
  const transaction = <A, E, R>(work: Effect.Effect<A, E, R>) =>
    Effect.flatMap(
      Effect.serviceOption(TransactionConnection),
      (current) => Option.isSome(current) ? work : tracing ? traced(open(work), "sql transaction") : open(work)
    )
  const script: MariaDbDirectShape["script"] = (body, values, then, recover) => {
    const run = Effect.acquireUseRelease(
      connect,
      (connection) => {
        const fresh = !set.has(connection)
        return Effect.matchEffect(
          simple(connection, `${fresh ? preamble : ""}START TRANSACTION; ${body}; COMMIT`, values),
          {
            onSuccess: (results) => {
              if (fresh) set.add(connection)
              return Effect.succeed(then((results as Array<unknown>).slice(fresh ? preambleResults + 1 : 1, -1)))
            },
            onFailure: (error) => recover(error, (sql) => simple(connection, sql))
          }
        )
      },
      // Interrupted while the script ran, or failed after it: nothing it began is left open on the connection (after
      // a COMMIT, the ROLLBACK finds nothing to end).
      (connection, exit) =>
        Exit.isSuccess(exit)
          ? Effect.sync(() => connection.release())
          : Effect.ensuring(Effect.ignore(simple(connection, "ROLLBACK")), Effect.sync(() => connection.release()))
    ).pipe(retried)
    return tracing ? traced(run, "sql script", body) : run
  }
  // On the transaction's connection if the fiber is in one, else on the pool.
  const run = (sql: string, values: ReadonlyArray<unknown>) => {
    const statement = Effect.flatMap(Effect.serviceOption(TransactionConnection), (current) =>
      Option.isNone(current)
        ? execute(pool, sql, values)
        : current.value[0] instanceof DirectConnection
        ? execute(current.value[0].connection, sql, values)
        : current.value[0].executeRaw(sql, values))
    return tracing ? traced(statement, "sql.execute", sql) : statement
  }
  return {
    query: (sql, values) => Effect.map(run(sql, values), rowsOf),
    matched: (sql, values) => Effect.map(run(sql, values), matchedOf),
    transaction,
    script
  }
}
