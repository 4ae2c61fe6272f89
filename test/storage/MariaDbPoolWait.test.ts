// The wait for a connection of MariaDB's pool is bounded by MARIADB_CONNECT_TIMEOUT_MS (adapters/mariadb/PoolWait.ts):
// mysql2 has no such time-out, so a request behind a pool whose connections are all out (held by transactions
// on a black-holed network, or by more requests than it serves) would otherwise wait for ever. On a database of
// its own; skipped, with the reason in the title, when MARIADB_TESTS=off or no server answers.
import { SqlClient } from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import { Cause, ConfigProvider, Effect, Exit, Redacted, Scope } from "effect"
import { layer as MariaDbClient } from "../../adapters/mariadb/MariaDbClient.ts"
import { isStorageUnavailable } from "../../adapters/sql/StorageFaults.ts"
import { createTestDatabase, mariadbEnabled, mariadbSkipReason } from "../support/MariaDb.ts"

const waitMs = 500
const poolSize = 10

describe.skipIf(!mariadbEnabled)(
  `MariaDB's pool: the wait for a connection${mariadbEnabled ? "" : ` (skipped: ${mariadbSkipReason})`}`,
  () => {
    it("fails after the connect time-out when every connection is out, and leaks none", async () => {
      const database = await createTestDatabase()
      try {
        const outcome = await Effect.runPromise(
          Effect.gen(function*() {
            const sql = yield* SqlClient
            // Every connection of the pool out, each in a scope of its own, closed below.
            const held = yield* Effect.all(
              Array.from(
                { length: poolSize },
                () =>
                  Effect.flatMap(
                    Scope.make(),
                    (scope) => Effect.as(Scope.extend(sql.reserve, scope), scope)
                  )
              ),
              { concurrency: "unbounded" }
            )
            const started = Date.now()
            const exit = yield* Effect.exit(sql`SELECT 1`)
            const waited = Date.now() - started
            // The first connection handed back goes to the request that gave up (mysql2 still queues it), which
            // hands it back at once.
            yield* Effect.forEach(held, (scope) => Scope.close(scope, Exit.void), { discard: true })
            const late = yield* Effect.exit(sql`SELECT 1`)
            // None leaked: all of the pool's connections at once.
            const all = yield* Effect.exit(Effect.scoped(Effect.all(
              Array.from({ length: poolSize }, () => Effect.zipRight(sql.reserve, Effect.sleep(50))),
              { concurrency: "unbounded" }
            )))
            return { exit, waited, late, all }
          }).pipe(
            Effect.scoped,
            Effect.provide(MariaDbClient(Redacted.make(database.url))),
            Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["MARIADB_CONNECT_TIMEOUT_MS", String(waitMs)]])))
          )
        )
        assert.isTrue(Exit.isFailure(outcome.exit), "the request that found every connection out failed")
        if (Exit.isFailure(outcome.exit)) {
          assert.isTrue(isStorageUnavailable(Cause.squash(outcome.exit.cause)), "a storage fault: 503")
        }
        assert.isAtLeast(outcome.waited, waitMs - 50)
        assert.isBelow(outcome.waited, waitMs + 1_500)
        assert.isTrue(Exit.isSuccess(outcome.late), "a statement after the connections came back")
        assert.isTrue(Exit.isSuccess(outcome.all), `all ${poolSize} connections again`)
      } finally {
        await database.drop()
      }
    }, 30_000)
  }
)
