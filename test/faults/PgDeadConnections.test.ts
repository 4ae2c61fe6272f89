import { assert, describe, it } from "@effect/vitest"
import { makePool, type PgPool, type PoolClient } from "../../adapters/postgres/PgDriver.ts"
import { FaultProxy } from "../support/FaultProxy.ts"
import { ThrowawayPostgres, unavailableReason } from "./ThrowawayPostgres.ts"

// The pool's own handling of dead connections (adapters/postgres/PgDriver.ts), through the test's proxy to a
// throwaway PostgreSQL: a connection found silent is closed (never handed out again, even when its user releases
// it without an error, as @effect/sql-pg does) and closes the idle ones, so once one statement has found the
// network dead the next ones get fresh connections.
if (unavailableReason !== undefined) {
  if (process.env.CI === "true") throw new Error(`PgDeadConnections cannot run with CI=true: ${unavailableReason}`)
  console.warn(`PgDeadConnections: skipped, ${unavailableReason}`)
}

const silentMs = 500
const poolSize = 5
const connect = (pool: PgPool) =>
  new Promise<PoolClient>((ok, fail) => pool.connect((e, c) => (e || c === undefined ? fail(e) : ok(c))))
const run = (target: PoolClient | PgPool, text: string) =>
  new Promise<number>((ok) => {
    const started = Date.now()
    target.query(text, (error) => ok(error === undefined ? Date.now() - started : -1))
  })

describe.skipIf(unavailableReason !== undefined)("PostgreSQL's pool after the network died under it", () => {
  it("the first statement on a dead connection fails; the next ones get fresh connections", async () => {
    const pg = await ThrowawayPostgres.start()
    const proxy = await FaultProxy.start(pg.port)
    const pool = makePool({
      connectionString: `postgres://postgres@127.0.0.1:${proxy.port}/postgres`,
      max: poolSize,
      connectionTimeoutMillis: 2_000,
      silentMs
    })
    pool.on("error", () => {})
    try {
      // Every connection of the pool opened, then idle.
      const clients = await Promise.all(Array.from({ length: poolSize }, () => connect(pool)))
      for (const client of clients) client.release()
      // The pool's connections stop answering; new ones work.
      proxy.blackHoleOpen()
      // A statement on a checked-out connection that gives up, released without an error.
      const first = await connect(pool)
      assert.strictEqual(await run(first, "SELECT 1"), -1)
      first.release()
      const next: Array<number> = []
      for (let i = 0; i < poolSize; i++) next.push(await run(pool, "SELECT 1"))
      assert.deepStrictEqual(next.map((ms) => ms >= 0 && ms < silentMs), next.map(() => true), `${next.join(", ")} ms`)
    } finally {
      await Promise.race([pool.end(), new Promise((r) => setTimeout(r, 1_000))])
      await proxy.close()
      pg.destroy()
    }
  }, 60_000)
})
