// PostgreSQL for the tests: whether the suites that need it run, a fresh database per app or per storage
// test (created from, and dropped through, the `test` database), and a synchronous query through psql for
// the black-box suites, which read what an app stored the way AppProcess.query reads a SQLite file.
//
// The server is PGHOST/PGPORT/PGUSER (default 127.0.0.1:5432, user postgres, trust auth) and the database
// the test databases are made from is PGDATABASE (default `test`); POSTGRES_ADMIN_URL overrides all of it.
import { spawnSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import pg, { type Client } from "pg"

export const adminUrl = process.env.POSTGRES_ADMIN_URL ??
  `postgres://${process.env.PGUSER ?? "postgres"}@${process.env.PGHOST ?? "127.0.0.1"}:${
    process.env.PGPORT ?? "5432"
  }/${process.env.PGDATABASE ?? "test"}`

// The URL without a password, for messages.
const shown = (url: string) => url.replace(/\/\/([^:@/]*):[^@/]*@/, "//$1:***@")

const withClient = async <A>(url: string, f: (client: Client) => Promise<A>): Promise<A> => {
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: 3_000,
    application_name: "paysub-tests"
  })
  // An error on an idle client (the server going away) must not crash the test process.
  client.on("error", () => {})
  await client.connect()
  try {
    return await f(client)
  } finally {
    await client.end().catch(() => {})
  }
}

const probe = (): Promise<boolean> => withClient(adminUrl, (c) => c.query("SELECT 1")).then(() => true, () => false)

// POSTGRES_TESTS=on: the PostgreSQL suites run (and fail loudly if the server is missing); off: they are
// skipped; unset: they run when a server answers.
const setting = process.env.POSTGRES_TESTS
export const postgresEnabled: boolean = setting === "on" ? true : setting === "off" ? false : await probe()

// Why the PostgreSQL suites are skipped, for their titles.
export const postgresSkipReason: string = setting === "off"
  ? "POSTGRES_TESTS=off"
  : `no PostgreSQL answers at ${shown(adminUrl)} (set POSTGRES_TESTS=on to require it)`

// Test databases: paysub_test_<pid>_<created, base36 ms>_<random>.
const prefix = "paysub_test_"
const namePattern = /^paysub_test_(\d+)_([0-9a-z]+)_[0-9a-f]+$/

export const urlOf = (database: string): string => {
  const url = new URL(adminUrl)
  url.pathname = `/${database}`
  return url.toString()
}

export const databaseOf = (url: string): string => decodeURIComponent(new URL(url).pathname.slice(1))

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

// Test databases left by test processes that died without dropping them (a killed run): gone once their
// process is gone and they are an hour old. Done once per process, before its first database.
let swept = false
const sweepOrphans = async (client: Client) => {
  if (swept) return
  swept = true
  const { rows } = await client.query<{ datname: string }>(
    "SELECT datname FROM pg_database WHERE starts_with(datname, $1)",
    [prefix]
  )
  for (const { datname } of rows) {
    const match = namePattern.exec(datname)
    if (match === null) continue
    const [pid, created] = [Number(match[1]), parseInt(match[2]!, 36)]
    if (pid === process.pid || alive(pid) || Date.now() - created < 3_600_000) continue
    await client.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(datname)} WITH (FORCE)`).catch(() => {})
  }
}

export interface TestDatabase {
  readonly name: string
  readonly url: string
  // Drops the database, closing whatever connections it still has. Safe to call more than once.
  readonly drop: () => Promise<void>
}

// A new database: empty (the app's migrations make its tables), or a copy of `template`, a test database no one
// is connected to.
export const createTestDatabase = async (template = "template0"): Promise<TestDatabase> => {
  const name = `${prefix}${process.pid}_${Date.now().toString(36)}_${randomBytes(4).toString("hex")}`
  await withClient(adminUrl, async (client) => {
    await sweepOrphans(client)
    // template0: nothing anyone added to template1, and no conflict with a session connected to it.
    await client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)} TEMPLATE ${pg.escapeIdentifier(template)}`)
  })
  let dropped: Promise<void> | undefined
  return {
    name,
    url: urlOf(name),
    drop: () => (dropped ??= withClient(adminUrl, async (client) => {
      await client.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`)
    }))
  }
}

const runPsql = (url: string, sql: string): string => {
  const result = spawnSync("psql", ["-At", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql], {
    encoding: "utf8",
    env: { ...process.env, PGCONNECT_TIMEOUT: "5" },
    maxBuffer: 512 * 1024 * 1024
  })
  if (result.error !== undefined) throw new Error(`psql could not run: ${result.error.message}`)
  if (result.status !== 0) {
    throw new Error(`psql on ${shown(url)} exited with ${result.status ?? result.signal}: ${result.stderr}\n${sql}`)
  }
  return result.stdout
}

// Drops a test database synchronously (for process exit, where nothing asynchronous runs any more).
export const dropDatabaseSync = (url: string): void => {
  runPsql(adminUrl, `DROP DATABASE IF EXISTS ${pg.escapeIdentifier(databaseOf(url))} WITH (FORCE)`)
}

// A value as a SQL literal. Strings are quoted with '' (and, with a backslash in them, as E'' strings so the
// result does not depend on standard_conforming_strings); a negative number is parenthesized so that
// `x - ?` cannot become a `--` comment.
export const sqlLiteral = (value: unknown): string => {
  if (value === null || value === undefined) return "NULL"
  if (typeof value === "boolean") return value ? "TRUE" : "FALSE"
  if (typeof value === "bigint") return value < 0n ? `(${value})` : String(value)
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new Error(`no SQL literal for ${value}`)
    return value < 0 || Object.is(value, -0) ? `(${value})` : String(value)
  }
  if (value instanceof Date) return `'${value.toISOString()}'`
  if (typeof value === "string") {
    if (value.includes("\0")) throw new Error("PostgreSQL text cannot hold NUL")
    const quoted = value.replaceAll("'", "''")
    return value.includes("\\") ? `E'${quoted.replaceAll("\\", "\\\\")}'` : `'${quoted}'`
  }
  throw new Error(`no SQL literal for a ${typeof value}`)
}

// Replaces each `?` outside quotes and comments with the next parameter as a literal.
export const inlineParams = (sql: string, params: ReadonlyArray<unknown>): string => {
  let out = ""
  let next = 0
  let i = 0
  while (i < sql.length) {
    const c = sql[i]!
    if (c === "'" || c === "\"") {
      const end = sql.indexOf(c, i + 1)
      if (end < 0) throw new Error(`unterminated ${c} in ${sql}`)
      // '' and "" inside are two quoted strings side by side: copying them one after the other is the same.
      out += sql.slice(i, end + 1)
      i = end + 1
    } else if (c === "-" && sql[i + 1] === "-") {
      const end = sql.indexOf("\n", i)
      out += end < 0 ? sql.slice(i) : sql.slice(i, end)
      i = end < 0 ? sql.length : end
    } else if (c === "?") {
      if (next >= params.length) throw new Error(`more ? than the ${params.length} parameters in ${sql}`)
      out += sqlLiteral(params[next++])
      i++
    } else {
      out += c
      i++
    }
  }
  if (next !== params.length) throw new Error(`${params.length} parameters for ${next} ? in ${sql}`)
  return out
}

// Runs one SELECT (with `?` placeholders) through psql and answers its rows as JSON values: text as
// strings, timestamptz as ISO strings, numbers (BIGINT and count(*) included) as JS numbers, so integers
// above 2^53 come back rounded: CAST them to TEXT to read them exactly.
export const queryPostgresSync = <A = Record<string, unknown>>(
  url: string,
  sql: string,
  params: ReadonlyArray<unknown> = []
): Array<A> => {
  const select = inlineParams(sql, params).trim().replace(/;+$/, "")
  // The row alias must be no column's name: json_agg(t) over a column named t aggregates that column.
  const out = runPsql(url, `SELECT coalesce(json_agg(q_row), '[]'::json) FROM (${select}) q_row`)
  return JSON.parse(out) as Array<A>
}

// The data of a database as pg_dump writes it (COPY blocks of text, as latin1 so that every byte is one
// character), for searching what is stored. `extraArgs` go to pg_dump, e.g. --exclude-table-data=TABLE.
export const dumpData = (url: string, extraArgs: ReadonlyArray<string> = []): string => {
  const result = spawnSync("pg_dump", ["--data-only", "--no-owner", ...extraArgs, "-d", url], {
    encoding: "latin1",
    env: { ...process.env, PGCONNECT_TIMEOUT: "5" },
    maxBuffer: 512 * 1024 * 1024
  })
  if (result.error !== undefined) throw new Error(`pg_dump could not run: ${result.error.message}`)
  if (result.status !== 0) throw new Error(`pg_dump of ${shown(url)} exited with ${result.status}: ${result.stderr}`)
  return result.stdout
}
