// The harness of the tests that need a database as an older service left it: a test per database (SQLite in a
// temporary file; PostgreSQL and MariaDB in a throwaway database of their server, skipped where none answers),
// each with the layer the test file builds over that database's client, and the migrations before a given one.
import * as Migrator from "@effect/sql/Migrator"
import { it } from "@effect/vitest"
import { Effect, Layer, type Scope } from "effect"
import { join } from "node:path"
import { migrations } from "../../adapters/sql/Migrations.ts"
import * as MariaDb from "../support/MariaDb.ts"
import * as Postgres from "../support/Postgres.ts"
import { tempDir } from "./TempSqlite.ts"

// The migrations before `id`: a database as the service left it before migration `id` ran.
export const migrationsBefore = (id: number) =>
  Migrator.make({})({ loader: Effect.map(migrations, (all) => all.filter(([n]) => n < id)) })

export type DatabaseKind = "sqlite" | "postgres" | "mariadb"

// What a test file builds over each database: from the SQLite file's path, or the server database's URL. A
// kind left out has no test.
export type Over<R> = { readonly [K in DatabaseKind]?: (location: string) => Layer.Layer<R, unknown> }

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

// A test "on <database>" per kind in `over`: `test` runs with the layer built over a new database of that kind,
// and is handed the kind and the database's location.
export const onEachDatabase = <R>(
  over: Over<R>,
  test: (kind: DatabaseKind, location: string) => Effect.Effect<void, unknown, R | Scope.Scope>
) => {
  for (const kind of ["sqlite", "postgres", "mariadb"] as const) {
    const build = over[kind]
    if (build === undefined) continue
    it.scoped.skipIf(!enabled[kind])(`on ${names[kind]}`, () =>
      Effect.gen(function*() {
        const location = yield* locations[kind]
        const context = yield* Layer.build(build(location))
        yield* Effect.provide(test(kind, location), context)
      }))
  }
}
