import type { RateLimiter } from "@effect/experimental"
import type { MigrationError } from "@effect/sql/Migrator"
import type { SqlClient } from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Config, ConfigError, Either, Layer } from "effect"
import type { OpenSqlite } from "../../adapters/sqlite/SqliteDriver.ts"
import type { RefundStore } from "../../core/payments/RefundStore.ts"
import type { TransferStore } from "../../core/payments/TransferStore.ts"
import type { SubscriptionStore } from "../../core/subscriptions/SubscriptionStore.ts"
import type { WebhookStore } from "../../core/webhooks/Webhooks.ts"
import { MariaDb } from "./storage/MariaDb.ts"
import { Postgres } from "./storage/Postgres.ts"
import { Sqlite } from "./storage/Sqlite.ts"

// DATABASE_URL picks the storage adapter: the migrated database, its client and its stores, and the rate limit
// store (the database's own when several instances share it). A database is one file in ./storage/ and one
// line in `storages`.
export type Storage =
  | SqlClient
  | SubscriptionStore
  | TransferStore
  | RefundStore
  | WebhookStore
  | RateLimiter.RateLimiterStore

export interface StorageAdapter {
  // The DATABASE_URL forms it takes, as the error at start names them.
  readonly forms: ReadonlyArray<string>
  readonly accepts: (databaseUrl: string) => boolean
  // Several instances may share the database: the rate limits are then kept where they all see them.
  readonly shared: boolean
  readonly layer: (databaseUrl: string, open: OpenSqlite) => Layer.Layer<Storage, SqlError | MigrationError>
}

// SQLite last: it takes any plain path.
const storages: ReadonlyArray<StorageAdapter> = [Postgres, MariaDb, Sqlite]

export const storageOf = (databaseUrl: string): StorageAdapter | undefined =>
  storages.find((s) => s.accepts(databaseUrl))

// A URL of a scheme no adapter knows stops the service instead of becoming a SQLite file of that name.
export const databaseUrlConfig = Config.string("DATABASE_URL").pipe(
  Config.withDefault("sqlite:data/paysub.db"),
  Config.mapOrFail((url) =>
    storageOf(url) === undefined
      ? Either.left(ConfigError.InvalidData(
        ["DATABASE_URL"],
        `a scheme no storage adapter knows; use one of: ${storages.flatMap((s) => s.forms).join(", ")}`
      ))
      : Either.right(url)
  )
)

export const storageLayer = (databaseUrl: string, open: OpenSqlite): Layer.Layer<Storage, SqlError | MigrationError> =>
  Layer.suspend(() =>
    storageOf(databaseUrl)?.layer(databaseUrl, open) ??
      Layer.die(new Error("DATABASE_URL: no storage adapter takes it"))
  )
