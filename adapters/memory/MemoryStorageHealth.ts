import { Context, DateTime, Effect, Layer } from "effect"
import { ClientDirectory } from "../../core/payments/ClientDirectory.ts"
import type { ClientId } from "../../core/payments/Transfer.ts"
import { type Backlog, ServiceSecrets, StorageHealth } from "../../core/shared/StorageHealth.ts"
import { atomically, MemoryDatabase, millis } from "./MemoryDatabase.ts"

// The storage's health, kept secrets and client directory over the in-memory tables. Memory is never away: a
// write always goes through and no failure is the storage's.
const backlogOf = (due: ReadonlyArray<DateTime.Utc>): Backlog => ({
  depth: due.length,
  oldestDue: due.reduce<DateTime.Utc | undefined>(
    (oldest, at) => oldest === undefined || millis(at) < millis(oldest) ? at : oldest,
    undefined
  )
})

export const layer = Layer.effectContext(
  Effect.map(MemoryDatabase, (db) => {
    const { tables } = db
    const health = StorageHealth.of({
      probeWrite: Effect.void,
      backlogs: atomically(
        db,
        Effect.sync(() => {
          const mail = [...tables.outbox.values()].filter((row) => row.sentAt === undefined)
            .flatMap((row) => row.nextAttemptAt === undefined ? [] : [row.nextAttemptAt])
          const webhook = [...tables.deliveries.values()].filter((row) =>
            row.deliveredAt === undefined && tables.endpoints.get(row.endpointId)?.disabledAt === undefined
          ).map((row) => row.nextAttemptAt)
          return { mail: backlogOf(mail), webhook: backlogOf(webhook) }
        })
      ),
      isUnavailable: () => false
    })
    const secrets = ServiceSecrets.of({
      keep: (name, generate) =>
        atomically(
          db,
          Effect.sync(() => {
            if (!tables.secrets.has(name)) tables.secrets.set(name, generate())
            return tables.secrets.get(name)!
          })
        )
    })
    const directory = ClientDirectory.of({
      list: atomically(
        db,
        Effect.sync(() =>
          [...tables.clients.values()]
            .sort((a, b) => millis(a.createdAt) - millis(b.createdAt) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
            .map(({ createdAt, id, keyHash, name }) => ({ id, name, keyHash, createdAt }))
        )
      ),
      replaceKeyHash: (id: ClientId, keyHash: string) =>
        atomically(
          db,
          Effect.sync(() => {
            const client = tables.clients.get(id)
            if (client === undefined) return false
            tables.clients.set(id, { ...client, keyHash })
            return true
          })
        )
    })
    return Context.make(StorageHealth, health).pipe(
      Context.add(ServiceSecrets, secrets),
      Context.add(ClientDirectory, directory)
    )
  })
)
