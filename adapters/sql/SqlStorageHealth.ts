import { SqlClient } from "@effect/sql/SqlClient"
import { Context, DateTime, Effect, Layer } from "effect"
import { type Backlog, ServiceSecrets, StorageHealth } from "../../core/shared/StorageHealth.ts"
import { millisOf } from "./Dialect.ts"
import { isStorageUnavailable } from "./StorageFaults.ts"

// The storage health and the kept secrets on any of the SQL databases, through @effect/sql.

// A SELECT answers while the disk is full or the server is read-only, so the probe writes: one row rewritten
// and committed. The table is the probe's own, made on first use rather than by a migration: it holds nothing
// anyone reads.
const probeWrite = (sql: SqlClient) => {
  let made = false
  return Effect.gen(function*() {
    if (!made) {
      yield* sql`CREATE TABLE IF NOT EXISTS paysub_write_probe (id INTEGER PRIMARY KEY, written_at BIGINT NOT NULL)`
      made = true
    }
    yield* sql.onDialectOrElse({
      mysql: () =>
        sql`INSERT INTO paysub_write_probe (id, written_at) VALUES (1, ${Date.now()})
          ON DUPLICATE KEY UPDATE written_at = VALUES(written_at)`,
      orElse: () =>
        sql`INSERT INTO paysub_write_probe (id, written_at) VALUES (1, ${Date.now()})
          ON CONFLICT (id) DO UPDATE SET written_at = excluded.written_at`
    })
  }).pipe(Effect.orDie)
}

interface BacklogRow {
  readonly depth: number | string
  readonly oldest: unknown
}
const backlogOf = (row: BacklogRow | undefined): Backlog => ({
  depth: Number(row?.depth ?? 0),
  oldestDue: row?.oldest === null || row?.oldest === undefined ? undefined : DateTime.unsafeMake(millisOf(row.oldest))
})

export const layer = Layer.effectContext(
  Effect.map(SqlClient, (sql) => {
    const health = StorageHealth.of({
      probeWrite: probeWrite(sql),
      backlogs: Effect.gen(function*() {
        const [mail] = yield* sql<BacklogRow>`SELECT COUNT(*) AS depth, MIN(next_attempt_at) AS oldest
          FROM mail_outbox WHERE sent_at IS NULL AND next_attempt_at IS NOT NULL`
        const [webhook] = yield* sql<BacklogRow>`SELECT COUNT(*) AS depth, MIN(d.next_attempt_at) AS oldest
          FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
          WHERE d.delivered_at IS NULL AND e.disabled_at IS NULL`
        return { mail: backlogOf(mail), webhook: backlogOf(webhook) }
      }).pipe(Effect.orDie),
      isUnavailable: isStorageUnavailable
    })
    const secrets = ServiceSecrets.of({
      keep: (name, generate) =>
        Effect.gen(function*() {
          const value = generate()
          yield* sql.onDialectOrElse({
            mysql: () => sql`INSERT IGNORE INTO service_secrets (name, value) VALUES (${name}, ${value})`,
            orElse: () =>
              sql`INSERT INTO service_secrets (name, value) VALUES (${name}, ${value}) ON CONFLICT (name) DO NOTHING`
          })
          return (yield* sql<{ value: string }>`SELECT value FROM service_secrets WHERE name = ${name}`)[0]!.value
        }).pipe(Effect.orDie)
    })
    return Context.make(StorageHealth, health).pipe(Context.add(ServiceSecrets, secrets))
  })
)
