import { SqlClient } from "@effect/sql/SqlClient"
import { DateTime, Effect, Layer, Option } from "effect"
import { Session, type SessionIdHash, type SessionRole } from "../../core/console/Session.ts"
import { SessionStore } from "../../core/console/SessionStore.ts"
import type { ClientId } from "../../core/payments/Transfer.ts"
import { Dialect, millisOf } from "./Dialect.ts"

interface Row {
  readonly id_hash: string
  readonly role: string
  readonly client_id: string | null
  readonly admin_key_hash: string | null
  readonly csrf_token: string
  readonly created_at: unknown
  readonly last_seen_at: unknown
}

const sessionOf = (row: Row) =>
  new Session({
    idHash: row.id_hash as SessionIdHash,
    role: row.role as SessionRole,
    ...(row.client_id === null ? {} : { clientId: row.client_id as ClientId }),
    ...(row.admin_key_hash === null ? {} : { adminKeyHash: row.admin_key_hash }),
    csrfToken: row.csrf_token,
    createdAt: DateTime.unsafeMake(millisOf(row.created_at)),
    lastSeenAt: DateTime.unsafeMake(millisOf(row.last_seen_at))
  }, { disableValidation: true })

// console_sessions on SQLite, PostgreSQL and MariaDB through @effect/sql: one statement per operation, none on
// a hot path of the API.
export const layer = Layer.effect(
  SessionStore,
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const { time } = yield* Dialect
    const at = (t: DateTime.Utc) => time(DateTime.toEpochMillis(t))
    // MariaDB's DELETE answers no rows: the rows are counted first (a count off by a concurrent write only
    // changes the number reported).
    const removing = (
      count: Effect.Effect<ReadonlyArray<{ n: unknown }>, unknown>,
      remove: Effect.Effect<unknown, unknown>
    ) => Effect.flatMap(count, (rows) => Effect.as(remove, Number(rows[0]?.n ?? 0))).pipe(Effect.orDie)
    return SessionStore.of({
      insert: (s) =>
        sql`INSERT INTO console_sessions
          (id_hash, role, client_id, admin_key_hash, csrf_token, created_at, last_seen_at)
          VALUES (${s.idHash}, ${s.role}, ${s.clientId ?? null}, ${s.adminKeyHash ?? null}, ${s.csrfToken}, ${
          at(s.createdAt)
        }, ${at(s.lastSeenAt)})`.pipe(Effect.asVoid, Effect.orDie),
      find: (idHash) =>
        sql<Row>`SELECT id_hash, role, client_id, admin_key_hash, csrf_token, created_at, last_seen_at
          FROM console_sessions WHERE id_hash = ${idHash}`.pipe(
          Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), sessionOf)),
          Effect.orDie
        ),
      touch: (idHash, seen) =>
        sql`UPDATE console_sessions SET last_seen_at = ${at(seen)} WHERE id_hash = ${idHash}`.pipe(
          Effect.asVoid,
          Effect.orDie
        ),
      remove: (idHash) => sql`DELETE FROM console_sessions WHERE id_hash = ${idHash}`.pipe(Effect.asVoid, Effect.orDie),
      removeForClient: (clientId) =>
        removing(
          sql`SELECT count(*) AS n FROM console_sessions WHERE client_id = ${clientId}`,
          sql`DELETE FROM console_sessions WHERE client_id = ${clientId}`
        ),
      removeSeenBefore: (cutoff) =>
        removing(
          sql`SELECT count(*) AS n FROM console_sessions WHERE last_seen_at < ${at(cutoff)}`,
          sql`DELETE FROM console_sessions WHERE last_seen_at < ${at(cutoff)}`
        )
    })
  })
)
