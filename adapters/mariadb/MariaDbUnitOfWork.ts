import type { SqlClient } from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type { Fragment, Statement } from "@effect/sql/Statement"
import { DateTime, Effect, Option, Record } from "effect"
import type { UnsettledRule } from "../../core/payments/Transfer.ts"
import type { NewEvent } from "../../core/webhooks/Events.ts"
import type { EndpointId } from "../../core/webhooks/Webhooks.ts"
import { sqlStrings, unsettledCondition } from "../sql/Dialect.ts"
import { insertEvent, liveEndpointOf, liveEndpoints } from "../sql/EventRows.ts"
import { errnoOf, type MariaDbDirectShape } from "./MariaDbDirect.ts"

// A port's operations as statements, on MariaDbDirect or on @effect/sql: inside `transact` they run on the
// transaction's connection (both find it in the fiber's context), outside it on the pool.
export type Statements<Tx> = {
  readonly [K in keyof Tx]: Tx[K] extends (...args: infer A) => Effect.Effect<infer R>
    ? (...args: A) => Effect.Effect<R, SqlError>
    : never
}

// The port's unit of work on MariaDB: `transact` runs core's work in one READ COMMITTED transaction
// (MariaDbDirect.ts: the `lock*` statements read FOR UPDATE, and after a deadlock, a lock wait
// time-out or a lost unique race the work runs again from its start). Outside it, an operation is one statement
// on the pool, or a transaction of its own where it runs several. Storage faults become defects.
export const unitOfWork = <Tx extends object>(direct: MariaDbDirectShape, statements: Statements<Tx>) => {
  const tx = Record.map(
    statements as Record<string, (...args: Array<unknown>) => Effect.Effect<unknown, SqlError>>,
    (statement) => (...args: Array<unknown>) => Effect.orDie(statement(...args))
  ) as unknown as Tx
  const transact = <A>(work: (tx: Tx) => Effect.Effect<A>): Effect.Effect<A> =>
    Effect.orDie(direct.transaction(Effect.suspend(() => work(tx))))
  return { ...tx, transact }
}

// An INSERT that lost to a row with the same unique key (1062) answers `lost`; the transaction goes on (InnoDB
// undoes the statement only).
export const unlessDuplicate = <A>(insert: Effect.Effect<A, SqlError>, lost: A) =>
  Effect.catchIf(insert, (error) => errnoOf(error) === 1062, () => Effect.succeed(lost))

// Whether a conditional UPDATE or DELETE wrote: MariaDB has no UPDATE ... RETURNING, but the driver's raw result
// counts the rows the statement matched (mysql2 connects with FOUND_ROWS), written or not.
export const wrote = (write: Statement<unknown>) =>
  Effect.map(write.raw, (result) => (result as { affectedRows: number }).affectedRows > 0)
export const wroteDirect = (direct: MariaDbDirectShape, sql: string, values: ReadonlyArray<unknown>) =>
  Effect.map(direct.matched(sql, values), (n) => n > 0)

export const ms = DateTime.toEpochMillis
export const first = <A, B>(rows: Effect.Effect<ReadonlyArray<A>, SqlError>, map: (row: A) => B) =>
  Effect.map(rows, (rows) => Option.map(Option.fromNullable(rows[0]), map))

// Amounts are read as text (adapters/sql/TransferRows.ts); MariaDB casts to CHAR, not TEXT.
export const asChar = (columns: string) => columns.replaceAll(" AS TEXT)", " AS CHAR)")

// Due rows claimed in one transaction: `due` reads them in its index's order and locks them, skipping rows
// another instance holds (a sort would lock every due row), then `lease` (a SET clause) is written to each, so
// that instances claiming at once take disjoint rows.
export const claim =
  (sql: SqlClient, direct: MariaDbDirectShape, table: string, lease: Fragment) =>
  <Row extends { readonly id: unknown }>(due: Effect.Effect<ReadonlyArray<Row>, SqlError>) =>
    direct.transaction(Effect.tap(due, (rows) => {
      const ids = rows.map((r) => r.id)
      return ids.length === 0 ? Effect.void : sql`UPDATE ${sql(table)} SET ${lease} WHERE ${sql.in("id", ids)}`
    }))

// The reconciler's transfers or refunds: the unsettled ones claimed, each leased until `leaseUntil` (a leased one
// is not due), and one put off to `next`.
export const reconciliation = <Row, A>(
  sql: SqlClient,
  direct: MariaDbDirectShape,
  table: "transfers" | "refunds",
  columns: string,
  of: (row: Row, attempts: number) => A,
  rule: UnsettledRule<string>
) => {
  // The condition around its one parameter, the pending lease's end.
  const [beforeLease, afterLease] = unsettledCondition(rule, "\u0000").split("\u0000")
  return {
    claim: (now: DateTime.Utc, pendingBefore: DateTime.Utc, leaseUntil: DateTime.Utc, limit: number) =>
      claim(sql, direct, table, sql`reconcile_at = ${ms(leaseUntil)}`)(
        sql<Row & { id: string; reconcile_attempts: number }>`SELECT ${sql.literal(columns)}, reconcile_attempts
        FROM ${sql(table)} FORCE INDEX (${sql(`${table}_unsettled`)})
        WHERE ${sql.literal(beforeLease!)}${ms(pendingBefore)}${sql.literal(afterLease!)}
        AND (reconcile_at IS NULL OR reconcile_at <= ${ms(now)})
        ORDER BY created_at LIMIT ${limit} FOR UPDATE SKIP LOCKED`
      ).pipe(Effect.map((rows) => rows.map((row) => of(row, Number(row.reconcile_attempts)))), Effect.orDie),
    later: (id: string, attempts: number, next: DateTime.Utc) =>
      Effect.orDie(sql`UPDATE ${sql(table)} SET reconcile_attempts = ${attempts}, reconcile_at = ${ms(next)}
      WHERE id = ${id} AND status IN (${sql.literal(sqlStrings(rule.all))})`)
  }
}

// Events as the stores write them, in their transaction: the event, then one delivery for each endpoint core chose.
export const eventStatements = (sql: SqlClient, direct: MariaDbDirectShape) => ({
  liveEndpoints: (owner: string) =>
    Effect.map(
      direct.query<{ id: string; enabled_events: string }>(liveEndpoints, [owner]),
      (rows) => rows.map(liveEndpointOf)
    ),
  insertEvent: (e: NewEvent, endpoints: ReadonlyArray<EndpointId>) => {
    const at = ms(e.createdAt)
    const deliveries = endpoints.map((id) => ({ event_id: e.id, endpoint_id: id, created_at: at, next_attempt_at: at }))
    const event = direct.query(insertEvent, [e.id, e.type, e.owner, at, e.body, e.subject ?? null])
    if (deliveries.length === 0) return Effect.asVoid(event)
    return direct.transaction(Effect.gen(function*() {
      yield* event
      yield* sql`INSERT INTO webhook_deliveries ${sql.insert(deliveries)}`
    }))
  }
})
