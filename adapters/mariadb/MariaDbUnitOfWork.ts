import type { SqlClient } from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { DateTime, Effect, Option } from "effect"
import type { NewEvent } from "../../core/webhooks/Events.ts"
import type { EndpointId } from "../../core/webhooks/Webhooks.ts"
import { liveEndpointOf } from "../sql/EventRows.ts"
import { errnoOf, transactionOn } from "./MariaDbClient.ts"

// A port's operations as statements on @effect/sql: inside `transact` they run on the transaction's connection
// (@effect/sql finds it in the fiber's context), outside it on the pool.
export type Statements<Tx> = {
  readonly [K in keyof Tx]: Tx[K] extends (...args: infer A) => Effect.Effect<infer R>
    ? (...args: A) => Effect.Effect<R, SqlError>
    : never
}

// The port's unit of work on MariaDB: `transact` runs core's work in one READ COMMITTED transaction
// (MariaDbClient.ts's transactionOn: the `lock*` statements read FOR UPDATE, and after a deadlock, a lock wait
// time-out or a lost unique race the work runs again from its start). Outside it, an operation is one statement
// on the pool, or, for the `compound` ones (a locked read then a write: MariaDB has no UPDATE ... RETURNING, and
// @effect/sql-mysql2 answers no affected rows), a transaction of its own. Storage faults become defects.
export const unitOfWork = <Tx extends object>(
  sql: SqlClient,
  statements: Statements<Tx>,
  compound: ReadonlyArray<keyof Tx>
) => {
  const transaction = transactionOn(sql)
  const tx = {} as Record<string, unknown>
  const own = {} as Record<string, unknown>
  for (const name of Object.keys(statements) as Array<keyof Tx & string>) {
    const statement = statements[name] as (...args: Array<unknown>) => Effect.Effect<unknown, SqlError>
    tx[name] = (...args: Array<unknown>) => Effect.orDie(statement(...args))
    own[name] = compound.includes(name)
      ? (...args: Array<unknown>) => Effect.orDie(transaction(statement(...args)))
      : tx[name]
  }
  const transact = <A>(work: (tx: Tx) => Effect.Effect<A>): Effect.Effect<A> =>
    Effect.orDie(transaction(Effect.suspend(() => work(tx as Tx))))
  return { ...(own as Tx), transact }
}

// An INSERT that lost to a row with the same unique key (1062) answers `lost`; the transaction goes on (InnoDB
// undoes the statement only).
export const unlessDuplicate = <A>(insert: Effect.Effect<A, SqlError>, lost: A) =>
  Effect.catchIf(insert, (error) => errnoOf(error) === 1062, () => Effect.succeed(lost))

export const ms = DateTime.toEpochMillis
export const first = <A, B>(rows: ReadonlyArray<A>, map: (row: A) => B) => Option.map(Option.fromNullable(rows[0]), map)

// Events as the stores write them, in their transaction: the event, then one delivery for each endpoint core chose.
export const eventStatements = (sql: SqlClient) => ({
  liveEndpoints: (owner: string) =>
    Effect.map(
      sql<{ id: string; enabled_events: string }>`SELECT id, enabled_events FROM webhook_endpoints
        WHERE owner = ${owner} AND disabled_at IS NULL`,
      (rows) => rows.map(liveEndpointOf)
    ),
  insertEvent: (e: NewEvent, endpoints: ReadonlyArray<EndpointId>) => {
    const at = ms(e.createdAt)
    const event = sql`INSERT INTO events (id, type, owner, created_at, body)
      VALUES (${e.id}, ${e.type}, ${e.owner}, ${at}, ${e.body})`
    return endpoints.length === 0 ? Effect.asVoid(event) : Effect.zipRight(
      event,
      Effect.asVoid(
        sql`INSERT INTO webhook_deliveries ${
          sql.insert(endpoints.map((id) => ({ event_id: e.id, endpoint_id: id, created_at: at, next_attempt_at: at })))
        }`
      )
    )
  }
})
