import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import {
  makePool,
  type PgPool,
  type PoolClient,
  type PoolQueryResult,
  PreparedQuery,
  type QueryConfig
} from "../../adapters/postgres/PgDriver.ts"
import { createTestDatabase, postgresEnabled, postgresSkipReason, type TestDatabase } from "../support/Postgres.ts"

// PreparedQuery (adapters/postgres/PgDriver.ts) runs a named statement as pg's own Query does, but describes its
// result only until its columns are known. The two agree: the same rows, the same values through the same parsers,
// on the first execution and on the later ones, on the pool and on a transaction's connection, for a statement
// with no columns, with no rows, and one that fails (and leaves its connection usable).

const run = (target: PgPool | PoolClient, query: QueryConfig | PreparedQuery | string) =>
  new Promise<PoolQueryResult>((ok, fail) => target.query(query, (e, r) => (e ? fail(e) : ok(r))))
let unique = 0
// The same text through pg's Query and through PreparedQuery, each under a name of its own.
const both = async (target: PgPool | PoolClient, text: string, values: ReadonlyArray<unknown>) => {
  const n = unique++
  const theirs = await run(target, { name: `pg_${n}`, text, values: [...values] })
  const ours = await run(target, new PreparedQuery(`ours_${n}`, text, values))
  return { theirs: theirs.rows, ours: ours.rows }
}
// A name run several times, on whichever connections the pool hands out.
const repeated = async (target: PgPool, name: string, text: string, values: ReadonlyArray<unknown>, times = 12) =>
  Promise.all(Array.from({ length: times }, () => run(target, new PreparedQuery(name, text, values))))

const everyType = `SELECT $1::text AS t, CAST($2::bigint AS TEXT) AS amount, $2::bigint AS big, $3::integer AS i,
  $4::timestamptz AS at, $5::boolean AS b, $6::float8 AS f, NULL::text AS nothing, $7::text[] AS list,
  $8::numeric AS n, 'x' AS t`

describe.skipIf(!postgresEnabled)(
  `PostgreSQL: PreparedQuery answers as pg's Query${postgresEnabled ? "" : ` (skipped: ${postgresSkipReason})`}`,
  () => {
    let database: TestDatabase
    let pool: PgPool
    beforeAll(async () => {
      database = await createTestDatabase()
      pool = makePool({ connectionString: database.url, max: 4, silentMs: 10_000 })
      pool.on("error", () => {})
      await run(pool, "CREATE TABLE things (id TEXT PRIMARY KEY, amount BIGINT NOT NULL)")
    })
    afterAll(async () => {
      await pool?.end()
      await database?.drop()
    })

    it("the same rows and values, first and later executions, on every connection", async () => {
      const values = ["a'b", 9007199254740993n, 42, new Date(Date.UTC(2026, 10, 28, 12, 0, 0, 123)), true, 1.5, [
        "x",
        "y,z"
      ], "12.340"]
      const { ours, theirs } = await both(pool, everyType, values)
      assert.deepStrictEqual(ours, theirs)
      assert.deepStrictEqual(Object.keys(ours[0]!), Object.keys(theirs[0]!))
      const results = await repeated(pool, `ours_${unique - 1}`, everyType, values)
      for (const r of results) assert.deepStrictEqual(r.rows, theirs)
    })

    it("no columns, no rows, rows: as pg answers, before and after its columns are known", async () => {
      const insert = "INSERT INTO things (id, amount) VALUES ($1, $2)"
      for (let i = 0; i < 3; i++) {
        const { ours, theirs } = await both(pool, insert + ` ON CONFLICT DO NOTHING`, [`t${i}`, i])
        assert.deepStrictEqual(ours, theirs)
        assert.deepStrictEqual(ours, [])
      }
      const inserted = await repeated(pool, "insert_thing", insert + " ON CONFLICT DO NOTHING", ["t9", 9], 6)
      for (const r of inserted) assert.deepStrictEqual(r.rows, [])
      const update = "UPDATE things SET amount = amount + 1 WHERE id = ANY($1::text[]) RETURNING id, amount"
      const none = await repeated(pool, "update_things", update, [["nope"]], 6)
      for (const r of none) assert.deepStrictEqual(r.rows, [])
      const some = await run(pool, new PreparedQuery("update_things", update, [["t1", "t2"]]))
      const theirs = await run(pool, { name: "pg_update_things", text: update, values: [["t1", "t2"]] })
      assert.deepStrictEqual(some.rows.map((r) => r.id).sort(), ["t1", "t2"])
      assert.deepStrictEqual(Object.keys(some.rows[0]!), Object.keys(theirs.rows[0]!))
    })

    it("a failing statement fails with the server's error, and its connection answers the next one", async () => {
      const insert = "INSERT INTO things (id, amount) VALUES ($1, $2) RETURNING id"
      const client = await new Promise<PoolClient>((ok, fail) =>
        pool.connect((e, c) => (e || c === undefined ? fail(e) : ok(c)))
      )
      try {
        await run(client, "BEGIN")
        const first = await run(client, new PreparedQuery("insert_returning", insert, ["dup", 1]))
        assert.deepStrictEqual(first.rows, [{ id: "dup" }])
        await run(client, "COMMIT")
        const error = await run(client, new PreparedQuery("insert_returning", insert, ["dup", 2])).then(
          () => undefined,
          (e: { code?: string }) => e
        )
        assert.strictEqual(error?.code, "23505")
        const next = await run(client, new PreparedQuery("insert_returning", insert, ["dup2", 3]))
        assert.deepStrictEqual(next.rows, [{ id: "dup2" }])
      } finally {
        client.release()
      }
    })
  }
)
