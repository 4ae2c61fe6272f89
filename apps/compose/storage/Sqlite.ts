import { RateLimiter } from "@effect/experimental"
import { Layer } from "effect"
import { mkdirSync } from "node:fs"
import { dirname } from "node:path"
import { layer as SqliteClient } from "../../../adapters/sqlite/SqliteClient.ts"
import * as SqliteStores from "../../../adapters/sqlite/SqliteStores.ts"
import { layer as SqliteWebhookStore } from "../../../adapters/sqlite/SqliteWebhookStore.ts"
import { storesOver } from "../../../core/shared/Stores.ts"
import type { StorageAdapter } from "../Storage.ts"
import { sqlStorage } from "./Sql.ts"

// The file a `sqlite:PATH` or plain-path DATABASE_URL names (":memory:" for none).
export const sqliteFilename = (url: string) => url.replace(/^sqlite:/, "")

// The embedded file: one process, so its rate limits stay in that process's memory.
export const Sqlite: StorageAdapter = {
  forms: ["sqlite:PATH", "PATH (a plain path, no scheme://)"],
  accepts: (url) => url.startsWith("sqlite:") || !/^[a-z][a-z0-9+.-]*:\/\//i.test(url),
  shared: false,
  durable: true,
  layer: (url, { openSqlite }) =>
    Layer.suspend(() => {
      const filename = sqliteFilename(url)
      if (filename !== ":memory:") mkdirSync(dirname(filename), { recursive: true })
      return sqlStorage(
        Layer.mergeAll(
          storesOver(Layer.merge(SqliteStores.subscriptionStorage, SqliteStores.transferStorage)),
          SqliteWebhookStore,
          RateLimiter.layerStoreMemory
        ),
        SqliteClient({ filename, open: openSqlite })
      )
    })
}
