import type { SqlClient } from "@effect/sql/SqlClient"
import { Layer } from "effect"
import { runMigrations } from "../../../adapters/sql/Migrations.ts"
import { layer as SqlClientDirectory } from "../../../adapters/sql/SqlClientDirectory.ts"
import { layer as SqlSessionStore } from "../../../adapters/sql/SqlSessionStore.ts"
import { layer as SqlStorageHealth } from "../../../adapters/sql/SqlStorageHealth.ts"
import type { SessionStore } from "../../../core/console/SessionStore.ts"
import type { ClientDirectory } from "../../../core/payments/ClientDirectory.ts"
import type { ServiceSecrets, StorageHealth } from "../../../core/shared/StorageHealth.ts"
import { EventViewsLive } from "../../http/webhooks/EventViewsLive.ts"
import { type Storage, StorageStartError } from "../Storage.ts"

const messageOf = (cause: unknown) =>
  cause instanceof Error || (typeof cause === "object" && cause !== null && "message" in cause)
    ? String((cause as { message: unknown }).message)
    : String(cause)

// A SQL database as the service's storage: its own stores (and rate limit store) over its client, with the
// health, the kept secrets, the client directory and the console sessions that every SQL database shares, migrated before anything
// uses it. The client stays inside: the rest of the service sees the ports only.
export const sqlStorage = <E1, R1, E2, R2>(
  stores: Layer.Layer<Exclude<Storage, ClientDirectory | StorageHealth | ServiceSecrets | SessionStore>, E1, R1>,
  client: Layer.Layer<SqlClient | R2, E2>
) =>
  Layer.mergeAll(stores, SqlStorageHealth, SqlClientDirectory, SqlSessionStore).pipe(
    Layer.provide(EventViewsLive),
    Layer.provide(Layer.effectDiscard(runMigrations)),
    Layer.provide(client),
    Layer.mapError((cause) =>
      new StorageStartError({
        message: `the database at DATABASE_URL could not be opened or migrated: ${messageOf(cause)}`,
        cause
      })
    )
  )
