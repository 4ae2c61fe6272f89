import * as Reactivity from "@effect/experimental/Reactivity"
import * as Client from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import * as Statement from "@effect/sql/Statement"
import {
  Context,
  Deferred,
  Effect,
  Exit,
  FiberId,
  FiberRef,
  Layer,
  Metric,
  MetricBoundaries,
  type MetricLabel,
  Scope
} from "effect"
import type { OpenSqlite, SqliteStatement } from "./SqliteDriver.ts"

// An @effect/sql client over one SQLite connection. Unlike @effect/sql-sqlite-node it starts transactions
// with BEGIN IMMEDIATE (a transaction that reads then writes takes the write lock up front, so two processes
// on one file cannot both read the old state), fsyncs every commit (synchronous=FULL: money and mail
// obligations must survive a power cut), commits concurrent transactions in groups (one fsync for many; see
// below) and runs on any driver behind SqliteDriver.

// How many logical transactions each COMMIT (one fsync) made durable.
const groupCommitSize = Metric.histogram(
  "sqlite_group_commit_size",
  MetricBoundaries.fromIterable([1, 2, 4, 8, 16, 32, 64]),
  "Logical transactions per SQLite commit"
)
const NoLabels: ReadonlyArray<MetricLabel.MetricLabel> = []

export interface SqliteClientOptions {
  readonly filename: string
  readonly open: OpenSqlite
  readonly busyTimeoutMs?: number
}

const pragmas = (busyTimeoutMs: number) => [
  "PRAGMA journal_mode = WAL",
  "PRAGMA synchronous = FULL",
  "PRAGMA foreign_keys = ON",
  // The journals of the group commit's savepoints (and of statements inside them) in memory: as temporary files,
  // once a group's changes outgrow what SQLite keeps in memory before spilling, they cost writes and a file made
  // and removed per group (docs/decisions/0041).
  "PRAGMA temp_store = MEMORY",
  `PRAGMA busy_timeout = ${busyTimeoutMs}`
]

// Statements for the direct path: SQL with `?` placeholders, run synchronously on cached prepared statements.
export interface DirectSql {
  readonly get: <A = any>(sql: string, params: ReadonlyArray<unknown>) => A | undefined
  readonly all: <A = any>(sql: string, params: ReadonlyArray<unknown>) => ReadonlyArray<A>
  // The number of rows changed.
  readonly run: (sql: string, params: ReadonlyArray<unknown>) => number
}

// A lower-level port of this client, for the few hot store methods: one Effect per logical transaction
// instead of a few dozen per statement through @effect/sql. `work` must be synchronous and must not keep
// `db` beyond its call; a throw rolls the transaction back and fails with SqlError. Both return only once
// what they wrote, or read, is durable.
export interface SqliteDirectShape {
  readonly transaction: <A>(work: (db: DirectSql) => A) => Effect.Effect<A, SqlError>
  readonly read: <A>(work: (db: DirectSql) => A) => Effect.Effect<A, SqlError>
}
export class SqliteDirect extends Context.Tag("SqliteDirect")<SqliteDirect, SqliteDirectShape>() {}

export const make = (
  options: SqliteClientOptions
): Effect.Effect<
  { readonly client: Client.SqlClient; readonly direct: SqliteDirectShape },
  SqlError,
  Scope.Scope | Reactivity.Reactivity
> =>
  Effect.gen(function*() {
    const db = yield* Effect.acquireRelease(
      Effect.try({
        try: () => {
          const db = options.open(options.filename)
          for (const pragma of pragmas(options.busyTimeoutMs ?? 5000)) db.exec(pragma)
          return db
        },
        catch: (cause) => new SqlError({ cause, message: `Failed to open SQLite database ${options.filename}` })
      }),
      (db) => Effect.sync(() => db.close())
    )

    const statements = new Map<string, SqliteStatement>()
    const prepare = (sql: string) => {
      let statement = statements.get(sql)
      if (statement === undefined) {
        if (statements.size >= 500) statements.clear()
        statement = db.prepare(sql)
        statements.set(sql, statement)
      }
      return statement
    }

    const fail = (cause: unknown) =>
      cause instanceof SqlError ? cause : new SqlError({ cause, message: "Failed to execute statement" })
    const step = <A>(f: () => A) => Effect.try({ try: f, catch: fail })

    // The statements that open, close and undo transactions and groups: prepared once, from the cache.
    const exec = (sql: string) => void prepare(sql).run([])

    // Reads outside a transaction share one read transaction per synchronous run (docs/decisions/0042). SQLite
    // takes a WAL read lock (a few fcntl calls: 5-7 µs of a 1 µs read on this kind of machine) for each statement
    // outside a transaction, but once for all the statements inside one: a 304 or a replay reads its API client,
    // key and transfer in one. The snapshot ends in the microtask after the run that began it, and before any
    // write: it is never older than the synchronous code that reads from it, and a write never runs inside it.
    let snapshot = false
    const endSnapshot = () => {
      if (!snapshot) return
      snapshot = false
      try {
        exec("COMMIT")
      } catch {
        // SQLite ended it already (a read that failed).
      }
    }
    const inSnapshot = () => {
      if (snapshot || open !== undefined || holders !== 0) return
      exec("BEGIN")
      snapshot = true
      queueMicrotask(endSnapshot)
    }

    const run = (sql: string, params: ReadonlyArray<unknown>, raw: boolean) => () => {
      const statement = prepare(sql)
      if (statement.reader && statement.readonly) return (inSnapshot(), statement.all(params) as ReadonlyArray<any>)
      // A write, with or without RETURNING: never inside the read snapshot, whose COMMIT comes only after the
      // synchronous run (it would answer before its write is durable).
      endSnapshot()
      if (statement.reader) return statement.all(params) as ReadonlyArray<any>
      const result = statement.run(params)
      return raw ? (result as unknown as ReadonlyArray<any>) : []
    }

    const unprepared = (sql: string, params?: ReadonlyArray<unknown>) => () => {
      endSnapshot()
      const statement = db.prepare(sql)
      return (statement.reader
        ? statement.all(params ?? [])
        : (statement.run(params ?? []), [])) as ReadonlyArray<any>
    }

    // Group commit. Logical transactions run one at a time (the semaphore), each as a SAVEPOINT inside one
    // physical BEGIN IMMEDIATE ... COMMIT that stays open while more of them queue up; a single COMMIT (one
    // fsync) then makes the whole group durable, and only then does each of them return. Statements outside
    // a transaction that ran inside an open group wait for its COMMIT too, so no caller ever acts on, or
    // answers with, data that is not yet durable.
    const semaphore = yield* Effect.makeSemaphore(1)
    // The fibers holding the semaphore (an @effect/sql transaction, between two of its statements). While there
    // are none, synchronous work (a COMMIT, the direct path) cannot interleave with anyone's transaction and runs
    // at once, without the semaphore's few dozen Effect steps.
    let holders = 0
    const take = Effect.zipRight(semaphore.take(1), Effect.sync(() => void holders++))
    const release = Effect.suspend(() => (holders--, semaphore.release(1)))
    const withLock = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      Effect.acquireUseRelease(take, () => effect, () => release)
    interface Group {
      readonly durable: Deferred.Deferred<void, SqlError>
      committing: boolean
      members: number
      // The reads that ran inside the group, to run again if its COMMIT fails.
      readonly rereads: Array<() => void>
    }
    // A bound on how long one group holds the write lock (and on the latency it adds).
    const MaxGroup = 64
    let open: Group | undefined
    const committedGroup = yield* FiberRef.make<Group | undefined>(undefined)

    // The group's steps, synchronous, each run with the semaphore held.
    const commitOpen = () => {
      const group = open
      if (group === undefined) return
      open = undefined
      groupCommitSize.unsafeUpdate(group.members, NoLabels)
      try {
        exec("COMMIT")
        Deferred.unsafeDone(group.durable, Exit.void)
      } catch (cause) {
        try {
          exec("ROLLBACK")
        } catch {
          // SQLite rolled back already.
        }
        // What the group's reads saw is gone: each reads again, now from what is durable, before its wait ends.
        for (const reread of group.rereads) reread()
        Deferred.unsafeDone(group.durable, Exit.fail(fail(cause)))
      }
    }
    const Logical = "paysub_logical"
    const beginLogical = (): Group => {
      endSnapshot()
      if (open !== undefined && open.members >= MaxGroup) commitOpen()
      if (open === undefined) {
        exec("BEGIN IMMEDIATE")
        open = {
          durable: Deferred.unsafeMake<void, SqlError>(FiberId.none),
          committing: false,
          members: 0,
          rereads: []
        }
      }
      exec(`SAVEPOINT ${Logical}`)
      open.members++
      return open
    }
    const releaseLogical = () => exec(`RELEASE SAVEPOINT ${Logical}`)
    // A transaction that fails still ends its group's wait: were it the group's only member, nobody else would
    // commit the group, and its open BEGIN IMMEDIATE would keep the write lock from other processes.
    const rollbackLogical = () => {
      exec(`ROLLBACK TO SAVEPOINT ${Logical}`)
      exec(`RELEASE SAVEPOINT ${Logical}`)
      if (open !== undefined) scheduleCommit(open)
    }

    // Runs `f`, then `then` on its result. `f` runs at once when no @effect/sql transaction holds the semaphore
    // (the common case, in two Effect steps), else under the semaphore.
    const locked = <A, B, E>(f: () => A, then: (a: A) => Effect.Effect<B, E>): Effect.Effect<B, E | SqlError> =>
      Effect.suspend(() => {
        if (holders !== 0) return Effect.flatMap(withLock(step(f)), then)
        let result: A
        try {
          result = f()
        } catch (cause) {
          return Effect.fail(fail(cause))
        }
        return then(result)
      })
    const commitGroup = (group: Group) => Effect.orDie(locked(() => open === group && commitOpen(), () => Effect.void))

    // The COMMIT waits for the event loop to read the sockets once more (setImmediate runs after the poll
    // phase), so that the requests which arrived meanwhile write into the same group. Yielding to Effect's
    // scheduler alone is not enough: it runs before any I/O, and every group held one transaction.
    const afterIo = Effect.async<void>((resume) => {
      const handle = setImmediate(() => resume(Effect.void))
      return Effect.sync(() => clearImmediate(handle))
    })
    const scheduleCommit = (group: Group) => {
      if (!group.committing) {
        group.committing = true
        Effect.runFork(Effect.zipRight(afterIo, commitGroup(group)))
      }
    }
    const durable = (group: Group) =>
      Effect.suspend(() => {
        scheduleCommit(group)
        return Deferred.await(group.durable)
      })
    const whenDurable = <A>(result: readonly [A, Group | undefined]) =>
      result[1] === undefined ? Effect.succeed(result[0]) : Effect.as(durable(result[1]), result[0])

    // A read (a statement outside any transaction) that ran inside an open group answers once the group is
    // durable, since it may have seen the group's writes. Should the COMMIT fail, it is run again right after the
    // ROLLBACK and answers with that: a read never fails because a write beside it failed.
    const readNow = <A>(f: () => A): Effect.Effect<A, SqlError> => {
      const result = f()
      const group = open
      if (group === undefined) return Effect.succeed(result)
      let again: Exit.Exit<A, SqlError> | undefined
      group.rereads.push(() => {
        try {
          again = Exit.succeed(f())
        } catch (cause) {
          again = Exit.fail(fail(cause))
        }
      })
      return Effect.catchAll(Effect.as(durable(group), result), (e) => again ?? Effect.fail(e))
    }

    const groupStatements: Record<string, Effect.Effect<ReadonlyArray<any>, SqlError>> = {
      "BEGIN GROUP": step(() => (beginLogical(), [])),
      "COMMIT GROUP": Effect.flatMap(step(() => (releaseLogical(), open)), (group) =>
        Effect.as(FiberRef.set(committedGroup, group), [])),
      "ROLLBACK GROUP": step(() => (rollbackLogical(), []))
    }

    // The direct path (SqliteDirect): a whole logical transaction, or a read, as one synchronous function over
    // prepared statements, in the same groups and under the same semaphore as the @effect/sql transactions.
    const direct: DirectSql = {
      get: (sql, params) => (inSnapshot(), prepare(sql).get(params) as any),
      all: (sql, params) => (inSnapshot(), prepare(sql).all(params) as any),
      run: (sql, params) => (endSnapshot(), Number(prepare(sql).run(params).changes))
    }
    // With a tracer on, each direct transaction and read is a span (the statements run synchronously in it).
    const spanned = (yield* FiberRef.get(FiberRef.currentTracerEnabled))
      ? (name: string) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
        Effect.withSpan(effect, name, { kind: "client", attributes: { "db.system.name": "sqlite" } })
      : () => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
        effect
    const tracedTransaction = spanned("sql transaction")
    const inRead = spanned("sql read")
    const directShape: SqliteDirectShape = {
      transaction: (work) =>
        tracedTransaction(
          locked(() => {
            const group = beginLogical()
            let result
            try {
              result = work(direct)
            } catch (cause) {
              rollbackLogical()
              throw cause
            }
            releaseLogical()
            return [result, group] as const
          }, whenDurable)
        ),
      read: (work) => inRead(locked(() => readNow(() => work(direct)), (answer) => answer))
    }

    // Inside a transaction a statement runs at once; outside one, as a read that answers only with durable data.
    const connection = (
      then: (statement: () => ReadonlyArray<any>) => Effect.Effect<ReadonlyArray<any>, SqlError>
    ): Connection => ({
      execute: (sql, params, transformRows) =>
        transformRows ? Effect.map(then(run(sql, params, false)), transformRows) : then(run(sql, params, false)),
      executeRaw: (sql, params) => then(run(sql, params, true)),
      executeValues: (sql, params) =>
        Effect.map(then(run(sql, params, false)), (rows) => rows.map((row) => Object.values(row as object))),
      executeUnprepared: (sql, params, transformRows) => {
        const effect = groupStatements[sql] ?? then(unprepared(sql, params))
        return transformRows ? Effect.map(effect, transformRows) : effect
      },
      executeStream: () => Effect.dieMessage("executeStream is not supported by this SQLite client")
    })
    const inTransaction = connection((statement) => step(statement))
    const outsideTransaction = connection((statement) =>
      Effect.suspend(() => {
        try {
          return readNow(statement)
        } catch (cause) {
          return Effect.fail(fail(cause))
        }
      })
    )

    const acquirer = withLock(Effect.succeed(outsideTransaction))
    const transactionAcquirer = Effect.uninterruptibleMask((restore) =>
      Effect.as(
        Effect.zipRight(
          restore(take),
          Effect.tap(Effect.scope, (scope) => Scope.addFinalizer(scope, release))
        ),
        inTransaction
      )
    )

    const client = yield* Client.make({
      acquirer,
      transactionAcquirer,
      compiler: Statement.makeCompilerSqlite(),
      beginTransaction: "BEGIN GROUP",
      commit: "COMMIT GROUP",
      rollback: "ROLLBACK GROUP",
      spanAttributes: [["db.system.name", "sqlite"]]
    })
    // A transaction returns once the group it committed into is durable (after it gave the semaphore back).
    const withTransaction = client.withTransaction
    const sqlClient = Object.assign(client, {
      withTransaction: <A, E, R>(effect: Effect.Effect<A, E, R>) =>
        Effect.flatMap(withTransaction(effect), (a) =>
          Effect.flatMap(
            FiberRef.getAndSet(committedGroup, undefined),
            (group) => group === undefined ? Effect.succeed(a) : Effect.as(durable(group), a)
          ))
    })
    return { client: sqlClient, direct: SqliteDirect.of(directShape) }
  })

export const layer = (options: SqliteClientOptions): Layer.Layer<Client.SqlClient | SqliteDirect, SqlError> =>
  Layer.scopedContext(
    Effect.map(
      make(options),
      ({ client, direct }) => Context.make(Client.SqlClient, client).pipe(Context.add(SqliteDirect, direct))
    )
  ).pipe(
    Layer.provide(Reactivity.layer)
  )
