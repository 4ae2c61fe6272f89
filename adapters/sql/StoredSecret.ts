import { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"

// A secret the service needs stable across restarts but nobody configured: made once, kept in the database.
export const storedSecret = (name: string, generate: () => string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const value = generate()
    yield* sql.onDialectOrElse({
      mysql: () => sql`INSERT IGNORE INTO service_secrets (name, value) VALUES (${name}, ${value})`,
      orElse: () =>
        sql`INSERT INTO service_secrets (name, value) VALUES (${name}, ${value}) ON CONFLICT (name) DO NOTHING`
    })
    return (yield* sql<{ value: string }>`SELECT value FROM service_secrets WHERE name = ${name}`)[0]!.value
  }).pipe(Effect.orDie)
