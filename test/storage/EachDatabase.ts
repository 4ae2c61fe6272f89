// The harness of the tests that need a database as an older service left it: a test per database (SQLite in a
// temporary file; PostgreSQL and MariaDB in a throwaway database of their server, skipped where none answers),
// each with the stores the test file names over that database's client, and the migrations before a given one.
import * as Migrator from "@effect/sql/Migrator"
import type { SqlClient } from "@effect/sql/SqlClient"
import { it } from "@effect/vitest"
import { Effect, Layer, Redacted, type Scope } from "effect"
import { join } from "node:path"
import { layer as MariaDbClient } from "../../adapters/mariadb/MariaDbClient.ts"
import { layer as PgClient } from "../../adapters/postgres/PgClient.ts"
import { migrations } from "../../adapters/sql/Migrations.ts"
import * as MariaDb from "../support/MariaDb.ts"
import * as Postgres from "../support/Postgres.ts"
import { sqliteClient, tempDir } from "./TempSqlite.ts"

// The migrations before `id`: a database as the service left it before migration `id` ran.
export const migrationsBefore = (id: number) =>
  Migrator.make({})({ loader: Effect.map(migrations, (all) => all.filter(([n]) => n < id)) })

export type DatabaseKind = "sqlite" | "postgres" | "mariadb"

// Each database's client, as the app makes it: on the SQLite file's path, or the server database's URL.
const clients = {
  sqlite: (location: string) => sqliteClient(location),
  postgres: (location: string) => PgClient(Redacted.make(location)),
  mariadb: (location: string) => MariaDbClient(Redacted.make(location))
}
type ClientOf<K extends DatabaseKind> = Layer.Layer.Success<ReturnType<(typeof clients)[K]>>

// What a test file builds over each database's client (its stores). A kind left out has no test.
export interface Over<R> {
  readonly sqlite?: Layer.Layer<R, unknown, ClientOf<"sqlite">>
  readonly postgres?: Layer.Layer<R, unknown, ClientOf<"postgres">>
  readonly mariadb?: Layer.Layer<R, unknown, ClientOf<"mariadb">>
}
const builtOver = <R>(over: Over<R>, kind: DatabaseKind, location: string) => {
  switch (kind) {
    case "sqlite":
      return over.sqlite && over.sqlite.pipe(Layer.provideMerge(clients.sqlite(location)))
    case "postgres":
      return over.postgres && over.postgres.pipe(Layer.provideMerge(clients.postgres(location)))
    case "mariadb":
      return over.mariadb && over.mariadb.pipe(Layer.provideMerge(clients.mariadb(location)))
  }
}

const throwaway = (create: () => Promise<{ readonly url: string; readonly drop: () => Promise<void> }>) =>
  Effect.map(
    Effect.acquireRelease(Effect.promise(create), (d) => Effect.promise(() => d.drop())),
    (d) => d.url
  )

const locations: Record<DatabaseKind, Effect.Effect<string, never, Scope.Scope>> = {
  sqlite: Effect.map(tempDir, (dir) => join(dir, "legacy.db")),
  postgres: throwaway(Postgres.createTestDatabase),
  mariadb: throwaway(MariaDb.createTestDatabase)
}
const names: Record<DatabaseKind, string> = { sqlite: "SQLite", postgres: "PostgreSQL", mariadb: "MariaDB" }
const enabled: Record<DatabaseKind, boolean> = {
  sqlite: true,
  postgres: Postgres.postgresEnabled,
  mariadb: MariaDb.mariadbEnabled
}

// A test "on <database>" per kind in `over`: `test` runs with its stores and the client on a new database of that
// kind, and is handed the kind and the database's location.
export const onEachDatabase = <R>(
  over: Over<R>,
  test: (kind: DatabaseKind, location: string) => Effect.Effect<void, unknown, R | SqlClient | Scope.Scope>
) => {
  for (const kind of ["sqlite", "postgres", "mariadb"] as const) {
    if (over[kind] === undefined) continue
    it.scoped.skipIf(!enabled[kind])(`on ${names[kind]}`, () =>
      Effect.gen(function*() {
        const location = yield* locations[kind]
        const context = yield* Layer.build(builtOver(over, kind, location)!)
        yield* Effect.provide(test(kind, location), context)
      }))
  }
}
