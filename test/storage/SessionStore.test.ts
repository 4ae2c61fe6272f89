// The session store's contract on every storage, as apps/compose/Storage.ts makes it from a DATABASE_URL: the
// process's memory, a SQLite file, PostgreSQL and MariaDB (a database of their own, made and dropped here; the
// server suites are skipped, with the reason in the title, when no server answers).
import { describe } from "@effect/vitest"
import { Effect, Layer, type Scope } from "effect"
import { join } from "node:path"
import { openBetterSqlite3 } from "../../adapters/sqlite/BetterSqlite3.ts"
import { storageLayer } from "../../apps/compose/Storage.ts"
import * as MariaDb from "../support/MariaDb.ts"
import * as Postgres from "../support/Postgres.ts"
import { sessionStoreContract } from "./SessionStore.contract.ts"
import { tempDir } from "./TempSqlite.ts"

const drivers = { openSqlite: openBetterSqlite3 }
const on = (url: Effect.Effect<string, never, Scope.Scope>) => () =>
  Layer.unwrapScoped(Effect.map(url, (u) => storageLayer(u, drivers)))
const serverDatabase = (create: () => Promise<{ readonly url: string; readonly drop: () => Promise<unknown> }>) =>
  Effect.map(Effect.acquireRelease(Effect.promise(create), (d) => Effect.promise(() => d.drop())), (d) => d.url)

sessionStoreContract("in-memory", on(Effect.succeed("memory:")))
sessionStoreContract("SQLite", on(Effect.map(tempDir, (dir) => `sqlite:${join(dir, "paysub.db")}`)))

describe.skipIf(!Postgres.postgresEnabled)(
  `PostgreSQL${Postgres.postgresEnabled ? "" : ` (skipped: ${Postgres.postgresSkipReason})`}`,
  () => {
    sessionStoreContract("PostgreSQL", on(serverDatabase(Postgres.createTestDatabase)))
  }
)
describe.skipIf(!MariaDb.mariadbEnabled)(
  `MariaDB${MariaDb.mariadbEnabled ? "" : ` (skipped: ${MariaDb.mariadbSkipReason})`}`,
  () => {
    sessionStoreContract("MariaDB", on(serverDatabase(MariaDb.createTestDatabase)))
  }
)
