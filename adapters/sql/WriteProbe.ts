import type { SqlClient } from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect } from "effect"

// Whether the database takes a durable write now: one row rewritten and committed. A SELECT answers while the
// disk is full or the server is read-only, so readiness asks for a write. The table is the probe's own, made on
// first use rather than by a migration: it holds nothing anyone reads.
const made = new WeakSet<object>()

export const writeProbe = (sql: SqlClient): Effect.Effect<void, SqlError> =>
  Effect.gen(function*() {
    if (!made.has(sql)) {
      yield* sql`CREATE TABLE IF NOT EXISTS paysub_write_probe (id INTEGER PRIMARY KEY, written_at BIGINT NOT NULL)`
      made.add(sql)
    }
    yield* sql`INSERT INTO paysub_write_probe (id, written_at) VALUES (1, ${Date.now()})
      ON CONFLICT (id) DO UPDATE SET written_at = excluded.written_at`
  })
