import { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { Dialect } from "./Dialect.ts"

// The console's sessions (adapters/sql/SqlSessionStore.ts): the hash of the cookie's id, who signed in (a role
// and, for a merchant, the client), never a key.
export const m0012_console_sessions = Effect.gen(function*() {
  const sql = yield* SqlClient
  const { types: T } = yield* Dialect
  yield* sql`CREATE TABLE console_sessions (
    id_hash ${T.key} PRIMARY KEY,
    role ${T.key} NOT NULL,
    client_id ${T.key} REFERENCES api_clients (id),
    admin_key_hash ${T.key},
    csrf_token TEXT NOT NULL,
    created_at ${T.time} NOT NULL,
    last_seen_at ${T.time} NOT NULL
  )${T.table}`
  yield* sql`CREATE INDEX console_sessions_client ON console_sessions (client_id)`
  yield* sql`CREATE INDEX console_sessions_seen ON console_sessions (last_seen_at)`
})
