import type { SqlError } from "@effect/sql/SqlError"
import { DateTime, Effect, Option } from "effect"
import type { PgDirectShape, PgQuery } from "./PgClient.ts"

// A port's operations as statements over one connection: the pool's (each operation a transaction of its own)
// or a transaction's.
export type Statements<Tx> = {
  readonly [K in keyof Tx]: Tx[K] extends (...args: infer A) => Effect.Effect<infer R>
    ? (query: PgQuery, ...args: A) => Effect.Effect<R, SqlError>
    : never
}

// The port's unit of work on PgDirect: `transact` runs core's work in BEGIN ... COMMIT on a connection of its
// own (READ COMMITTED: the `lock*` statements read FOR UPDATE); outside it, each operation is one statement
// on the pool. Storage faults are not something a caller can act on: they become defects here.
export const unitOfWork = <Tx extends object>(direct: PgDirectShape, statements: Statements<Tx>) => {
  const names = Object.keys(statements) as Array<keyof Tx & string>
  const bind = (query: PgQuery): Tx => {
    const tx = {} as Record<string, unknown>
    for (const name of names) {
      const statement = statements[name] as (
        query: PgQuery,
        ...args: Array<unknown>
      ) => Effect.Effect<unknown, SqlError>
      tx[name] = (...args: Array<unknown>) => Effect.orDie(statement(query, ...args))
    }
    return tx as Tx
  }
  const transact = <A>(work: (tx: Tx) => Effect.Effect<A>): Effect.Effect<A> =>
    Effect.orDie(direct.transaction((query) => work(bind(query))))
  return { ...bind(direct.query), transact }
}

// A time as a query parameter.
export const ms = (t: DateTime.Utc) => new Date(DateTime.toEpochMillis(t))
export const first = <A, B>(rows: ReadonlyArray<A>, map: (row: A) => B) => Option.map(Option.fromNullable(rows[0]), map)
