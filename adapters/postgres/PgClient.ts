import { PgClient } from "@effect/sql-pg"
import { SqlClient } from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import { Cause, Config, Context, Duration, Effect, Exit, FiberRef, Layer, Redacted } from "effect"
import {
  makePool,
  type PgPool,
  type PoolClient,
  PreparedQuery,
  type QueryCallback,
  type QueryConfig
} from "./PgDriver.ts"

// PostgreSQL: one pg Pool, shared by @effect/sql-pg (migrations, readiness, the statements that are not on a
// hot path) and PgDirect (the stores' hot statements). Every commit is durable: synchronous_commit is checked
// at start and the service warns if the server's default turned it off.

// A named (prepared) statement: each connection parses and plans it once, on first use. Names are unique per
// text (pg refuses a name reused with another text), so statements are made once, at module level.
export interface PgStatement {
  readonly name: string
  readonly text: string
}
const named = new Map<string, string>()
export const statement = (name: string, text: string): PgStatement => {
  const known = named.get(name)
  if (known !== undefined && known !== text) throw new Error(`Two PostgreSQL statements are named ${name}`)
  named.set(name, text)
  return { name: `paysub_${name}`, text }
}

export type PgQuery = <A = any>(statement: PgStatement, values: ReadonlyArray<unknown>) => Effect.Effect<
  ReadonlyArray<A>,
  SqlError
>

// The direct path: a statement is one round trip on a pooled connection (one statement is one transaction,
// atomic by itself), or several in a transaction on a connection of its own (BEGIN ... COMMIT). One Effect per
// statement, instead of the few dozen @effect/sql spends on compiling, tracing and acquiring.
export interface PgDirectShape {
  readonly query: PgQuery
  // Runs `work` between BEGIN and COMMIT on one connection; a failure or a defect rolls it back.
  readonly transaction: <A, E, R>(work: (query: PgQuery) => Effect.Effect<A, E, R>) => Effect.Effect<A, E | SqlError, R>
}
export class PgDirect extends Context.Tag("PgDirect")<PgDirect, PgDirectShape>() {}

interface Queryable {
  query(config: QueryConfig | PreparedQuery, callback: QueryCallback): void
}

const failed = (cause: unknown) => new SqlError({ cause, message: "Failed to execute statement" })

const queryOn = (target: Queryable): PgQuery => (statement, values) =>
  Effect.async((resume) => {
    target.query(
      new PreparedQuery(statement.name, statement.text, values),
      (err, result) => resume(err ? Effect.fail(failed(err)) : Effect.succeed(result.rows))
    )
  })

const simple = (client: PoolClient, text: string) =>
  Effect.async<void, SqlError>((resume) => {
    client.query(text, (err) => resume(err ? Effect.fail(failed(err)) : Effect.void))
  })

// With a tracer on, each statement (its text: values are never in it) and each transaction is a span.
const traced = (query: PgQuery): PgQuery => (statement, values) =>
  Effect.withSpan(query(statement, values), `sql ${statement.name}`, {
    kind: "client",
    attributes: { "db.system.name": "postgresql", "db.query.text": statement.text }
  })

// A checked-out connection whose server goes away emits "error", and pg's pool listens only to idle ones: with
// no listener of its own the process would end. The fault reaches the transaction through its statement instead.
const watched = new WeakSet<PoolClient>()
const watch = (client: PoolClient) => {
  if (!watched.has(client)) {
    watched.add(client)
    client.on("error", () => {})
  }
  return client
}

const makeDirect = (pool: PgPool, tracing: boolean): PgDirectShape => {
  const on = tracing ? (target: Queryable) => traced(queryOn(target)) : queryOn
  const connect = Effect.async<PoolClient, SqlError>((resume) => {
    pool.connect((err, client) =>
      resume(
        err || client === undefined
          ? Effect.fail(new SqlError({ cause: err, message: "Failed to acquire connection for transaction" }))
          : Effect.succeed(watch(client))
      )
    )
  })
  return {
    query: on(pool),
    transaction: (work) => {
      const run = Effect.acquireUseRelease(
        connect,
        (client) =>
          Effect.gen(function*() {
            yield* simple(client, "BEGIN")
            const result = yield* work(on(client))
            yield* simple(client, "COMMIT")
            return result
          }),
        // A connection whose transaction could not be rolled back is closed rather than reused; one that went
        // silent or was cut is closed at once, without a ROLLBACK to wait for.
        (client, exit) =>
          Exit.isSuccess(exit)
            ? Effect.sync(() => client.release())
            : connectionLost(exit.cause)
            ? Effect.sync(() => client.release(true))
            : simple(client, "ROLLBACK").pipe(
              Effect.match({ onFailure: () => client.release(true), onSuccess: () => client.release() })
            )
      )
      return tracing
        ? Effect.withSpan(run, "sql transaction", { kind: "client", attributes: { "db.system.name": "postgresql" } })
        : run
    }
  }
}

const connectionLost = (cause: Cause.Cause<unknown>) =>
  [...Cause.failures(cause), ...Cause.defects(cause)].some((e) => {
    const inner = (e as { cause?: { message?: unknown } })?.cause?.message
    return typeof inner === "string" && /Query read timeout|Connection terminated/.test(inner)
  })

const atLeast = (name: string, min: number, fallback: number) =>
  Config.integer(name).pipe(
    Config.validate({ message: `${name} must be an integer of at least ${min}`, validation: (n) => n >= min }),
    Config.withDefault(fallback)
  )

// How long a request waits for PostgreSQL before it answers 503 (docs/operations.md, "When the database is away"):
// a connection (waiting for a free one included), then each statement's answer. The server cancels a statement
// at PG_STATEMENT_TIMEOUT_MS, and ends a session left idle in a transaction as long (one whose client the network
// lost would hold its locks); the client gives up 1 s later, when the network or the server went silent (no RST
// ever comes through a lost NAT entry), and closes that connection and the pool's idle ones (PgDriver.ts). TCP
// keepalive finds idle connections whose peer is gone.
export const pgTimeoutsConfig = Config.all({
  connectMs: atLeast("PG_CONNECT_TIMEOUT_MS", 1, 2_000),
  statementMs: atLeast("PG_STATEMENT_TIMEOUT_MS", 1, 5_000),
  keepAliveMs: atLeast("PG_KEEPALIVE_MS", 1, 10_000)
})
const SilentAfterCancelMs = 1_000

export const layer = (url: Redacted.Redacted<string>) => {
  const pool = Effect.acquireRelease(
    Effect.gen(function*() {
      const timeouts = yield* pgTimeoutsConfig.pipe(Effect.orDie)
      // pg's pool opens a connection only when a statement needs one and never retries by itself, so connection
      // attempts follow the requests and the loops' backoff; a server that does not answer fails a connection
      // after PG_CONNECT_TIMEOUT_MS rather than holding the request.
      const pool = makePool({
        connectionString: Redacted.value(url),
        max: 10,
        application_name: "paysub",
        connectionTimeoutMillis: timeouts.connectMs,
        statement_timeout: timeouts.statementMs,
        idle_in_transaction_session_timeout: timeouts.statementMs,
        silentMs: timeouts.statementMs + SilentAfterCancelMs,
        keepAlive: true,
        keepAliveInitialDelayMillis: timeouts.keepAliveMs
      })
      // An idle connection's error (the server going away) must not crash the process: the pool drops it.
      pool.on("error", () => {})
      yield* Effect.tryPromise({
        try: () => pool.query("SELECT 1"),
        catch: (cause) => new SqlError({ cause, message: "PgClient: Failed to connect" })
      }).pipe(
        Effect.timeoutFail({
          duration: Duration.seconds(5),
          onTimeout: () =>
            new SqlError({ cause: new Error("Connection timed out"), message: "PgClient: Connection timed out" })
        }),
        Effect.onError(() => Effect.promise(() => pool.end()))
      )
      return pool
    }),
    (pool) => Effect.promise(() => pool.end()).pipe(Effect.interruptible, Effect.timeoutOption(1000))
  )
  return Layer.effectDiscard(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const [setting] = yield* sql<{ synchronous_commit: string }>`SHOW synchronous_commit`
      if (setting?.synchronous_commit !== "on") {
        yield* Effect.logWarning(
          `synchronous_commit is ${setting?.synchronous_commit}; set it to on for durable commits`
        )
      }
    })
  ).pipe(
    Layer.provideMerge(
      Layer.unwrapScoped(Effect.map(pool, (pool) =>
        Layer.merge(
          PgClient.layerFromPool({ acquire: Effect.succeed(pool), applicationName: "paysub" }),
          Layer.effect(PgDirect, Effect.map(FiberRef.get(FiberRef.currentTracerEnabled), (on) => makeDirect(pool, on)))
        )))
    )
  )
}
