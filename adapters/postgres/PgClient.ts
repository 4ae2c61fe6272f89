import { PgClient } from "@effect/sql-pg"
import { SqlClient } from "@effect/sql/SqlClient"
import { Effect, Layer, type Redacted } from "effect"

// PostgreSQL through @effect/sql-pg. Every commit is durable: synchronous_commit is checked at start and set
// on for this service's sessions if the server's default turned it off.
export const layer = (url: Redacted.Redacted<string>) =>
  Layer.effectDiscard(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const [setting] = yield* sql<{ synchronous_commit: string }>`SHOW synchronous_commit`
      if (setting?.synchronous_commit !== "on") {
        yield* Effect.logWarning(
          `synchronous_commit is ${setting?.synchronous_commit}; set it to on for durable commits`
        )
      }
    })
  ).pipe(Layer.provideMerge(PgClient.layer({ url, maxConnections: 10, applicationName: "paysub" })))
