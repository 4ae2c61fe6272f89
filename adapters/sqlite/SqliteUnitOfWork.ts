import { Effect } from "effect"
import type { DirectSql, SqliteDirectShape } from "./SqliteClient.ts"

// A port's operations as synchronous functions over the statements of one SQLite transaction.
export type Statements<Tx> = {
  readonly [K in keyof Tx]: Tx[K] extends (...args: infer A) => Effect.Effect<infer R> ?
    (db: DirectSql, ...args: A) => R
    : never
}

// The port's unit of work on SqliteDirect: `transact` runs core's work synchronously inside one transaction of
// the client's group commit (BEGIN IMMEDIATE holds the write lock throughout, so a read then a write cannot
// race another process); outside it, each operation is a transaction (or, for `reads`, a read) of its own.
// SQLite transactions never overlap in a process, so one bound `tx` serves them all.
export const unitOfWork = <Tx extends object>(
  direct: SqliteDirectShape,
  statements: Statements<Tx>,
  reads: ReadonlyArray<keyof Tx>
) => {
  let current: DirectSql | undefined
  const names = Object.keys(statements) as Array<keyof Tx & string>
  const tx = {} as Record<string, unknown>
  const own = {} as Record<string, unknown>
  for (const name of names) {
    const statement = statements[name] as (db: DirectSql, ...args: Array<unknown>) => unknown
    tx[name] = (...args: Array<unknown>) => Effect.sync(() => statement(current!, ...args))
    const run = reads.includes(name) ? direct.read : direct.transaction
    own[name] = (...args: Array<unknown>) => Effect.orDie(run((db) => statement(db, ...args)))
  }
  const transact = <A>(work: (tx: Tx) => Effect.Effect<A>): Effect.Effect<A> =>
    Effect.orDie(direct.transaction((db) => {
      current = db
      try {
        return Effect.runSync(work(tx as Tx))
      } finally {
        current = undefined
      }
    }))
  return { ...(own as Tx), transact }
}

export const read = (direct: SqliteDirectShape) => <A>(work: (db: DirectSql) => A) => Effect.orDie(direct.read(work))
export const write = (direct: SqliteDirectShape) => <A>(work: (db: DirectSql) => A) =>
  Effect.orDie(direct.transaction(work))
