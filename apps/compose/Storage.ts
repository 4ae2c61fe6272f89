import type { RateLimiter } from "@effect/experimental"
import { Config, ConfigError, Data, Either, Layer } from "effect"
import type { SessionStore } from "../../core/console/SessionStore.ts"
import type { ClientDirectory } from "../../core/payments/ClientDirectory.ts"
import type { RefundStore } from "../../core/payments/RefundStore.ts"
import type { TransferStore } from "../../core/payments/TransferStore.ts"
import type { ServiceSecrets, StorageHealth } from "../../core/shared/StorageHealth.ts"
import type { SubscriptionStore } from "../../core/subscriptions/SubscriptionStore.ts"
import type { WebhookStore } from "../../core/webhooks/Webhooks.ts"
import type { StorageDrivers } from "./storage/Drivers.ts"
import { MariaDb } from "./storage/MariaDb.ts"
import { Memory } from "./storage/Memory.ts"
import { Postgres } from "./storage/Postgres.ts"
import { Sqlite } from "./storage/Sqlite.ts"

// DATABASE_URL picks the storage adapter: the ports the service stores through, whatever is behind them (a
// database, migrated at start, or this process's memory). A storage is one file in ./storage/ and one line in
// `storages`; nothing outside ./storage/ knows what technology it is.
export type Storage =
  | SubscriptionStore
  | TransferStore
  | RefundStore
  | WebhookStore
  | ClientDirectory
  | StorageHealth
  | ServiceSecrets
  | RateLimiter.RateLimiterStore
  | SessionStore

// The storage could not be opened or migrated at start.
export class StorageStartError extends Data.TaggedError("StorageStartError")<{
  readonly message: string
  readonly cause: unknown
}> {}

export interface StorageAdapter {
  // The DATABASE_URL forms it takes, as the error at start names them.
  readonly forms: ReadonlyArray<string>
  readonly accepts: (databaseUrl: string) => boolean
  // Several instances may share the storage: the rate limits are then kept where they all see them.
  readonly shared: boolean
  // Kept outside the process, so that a restart or another process sees it: the CLI, a process of its own,
  // refuses a storage that is not.
  readonly durable: boolean
  readonly layer: (databaseUrl: string, drivers: StorageDrivers) => Layer.Layer<Storage, StorageStartError>
}

// SQLite last: it takes any plain path.
const storages: ReadonlyArray<StorageAdapter> = [Memory, Postgres, MariaDb, Sqlite]

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

export const storageLayer = (databaseUrl: string, drivers: StorageDrivers): Layer.Layer<Storage, StorageStartError> =>
  Layer.suspend(() =>
    storageOf(databaseUrl)?.layer(databaseUrl, drivers) ??
      Layer.die(new Error("DATABASE_URL: no storage adapter takes it"))
  )
