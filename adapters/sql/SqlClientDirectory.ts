import { SqlClient } from "@effect/sql/SqlClient"
import { DateTime, Effect, Layer } from "effect"
import { ClientDirectory } from "../../core/payments/ClientDirectory.ts"
import type { ClientId } from "../../core/payments/Transfer.ts"
import { millisOf } from "./Dialect.ts"

// The operator's view of api_clients, on either database through @effect/sql (the CLI's path, not a hot one).
export const layer = Layer.effect(
  ClientDirectory,
  Effect.map(SqlClient, (sql) =>
    ClientDirectory.of({
      list: sql<{ id: ClientId; name: string; key_hash: string; created_at: unknown }>`
        SELECT id, name, key_hash, created_at FROM api_clients ORDER BY created_at, id`.pipe(
        Effect.map((rows) =>
          rows.map((row) => ({
            id: row.id,
            name: row.name,
            keyHash: row.key_hash,
            createdAt: DateTime.unsafeMake(millisOf(row.created_at))
          }))
        ),
        Effect.orDie
      ),
      // MariaDB has no UPDATE ... RETURNING: there the row is found first (an id never changes).
      replaceKeyHash: (id, keyHash) =>
        sql.onDialectOrElse({
          mysql: () =>
            sql`SELECT id FROM api_clients WHERE id = ${id}`.pipe(
              Effect.tap((rows) =>
                rows.length > 0 ? sql`UPDATE api_clients SET key_hash = ${keyHash} WHERE id = ${id}` : Effect.void
              )
            ),
          orElse: () => sql`UPDATE api_clients SET key_hash = ${keyHash} WHERE id = ${id} RETURNING id`
        }).pipe(
          Effect.map((rows) => rows.length > 0),
          Effect.orDie
        )
    }))
)
