// MariaDB for the tests: whether the suites that need it run, a fresh database per app or per storage test
// (created and dropped through the server's root account), and a synchronous query for the black-box suites,
// which read what an app stored the way AppProcess.query reads a SQLite file.
//
// The server is MYSQL_HOST/MYSQL_PORT/MYSQL_USER/MYSQL_PASSWORD (default 127.0.0.1:3306, root, no password);
// MARIADB_ADMIN_URL (mysql://...) overrides all of it.
import mysql from "mysql2/promise"
import { spawnSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import { inlineParams } from "./Postgres.ts"

export const adminUrl = process.env.MARIADB_ADMIN_URL ??
  `mysql://${process.env.MYSQL_USER ?? "root"}${
    process.env.MYSQL_PASSWORD ? `:${encodeURIComponent(process.env.MYSQL_PASSWORD)}` : ""
  }@${process.env.MYSQL_HOST ?? "127.0.0.1"}:${process.env.MYSQL_PORT ?? "3306"}/`

const shown = (url: string) => url.replace(/\/\/([^:@/]*):[^@/]*@/, "//$1:***@")

const withConnection = async <A>(url: string, f: (c: mysql.Connection) => Promise<A>): Promise<A> => {
  const connection = await mysql.createConnection({ uri: url, connectTimeout: 3_000, supportBigNumbers: true })
  connection.on("error", () => {})
  try {
    return await f(connection)
  } finally {
    await connection.end().catch(() => {})
  }
}

const probe = (): Promise<boolean> => withConnection(adminUrl, (c) => c.query("SELECT 1")).then(() => true, () => false)

// MARIADB_TESTS=on: the MariaDB suites run (and fail loudly if the server is missing); off: they are skipped;
// unset: they run when a server answers.
const setting = process.env.MARIADB_TESTS
export const mariadbEnabled: boolean = setting === "on" ? true : setting === "off" ? false : await probe()
export const mariadbSkipReason: string = setting === "off"
  ? "MARIADB_TESTS=off"
  : `no MariaDB answers at ${shown(adminUrl)} (set MARIADB_TESTS=on to require it)`

export const urlOf = (database: string): string => {
  const url = new URL(adminUrl)
  url.pathname = `/${database}`
  return url.toString()
}

export interface TestDatabase {
  readonly name: string
  readonly url: string
  readonly drop: () => Promise<void>
}

// A new, empty database: paysub_test_<pid>_<created, base36 ms>_<random>.
export const createTestDatabase = async (): Promise<TestDatabase> => {
  const name = `paysub_test_${process.pid}_${Date.now().toString(36)}_${randomBytes(4).toString("hex")}`
  await withConnection(adminUrl, (c) => c.query(`CREATE DATABASE \`${name}\``))
  let dropped: Promise<void> | undefined
  return {
    name,
    url: urlOf(name),
    drop: () => (dropped ??= withConnection(
      adminUrl,
      async (c) => void (await c.query(`DROP DATABASE IF EXISTS \`${name}\``))
    ))
  }
}

const entities: Record<string, string> = { lt: "<", gt: ">", amp: "&", quot: "\"", apos: "'" }
const unescape = (text: string) =>
  text.replace(
    /&(lt|gt|amp|quot|apos|#(\d+));/g,
    (_, name: string, code?: string) => code !== undefined ? String.fromCodePoint(Number(code)) : entities[name]!
  )
// The client's XML has text only: an integer within 2^53 is read back as a number, as psql's JSON has it, except
// in the text columns whose values can be all digits.
const textColumns = new Set([
  "card_last4",
  "reference",
  "recipient_merchant_id",
  "merchant_id",
  "authorization_code",
  "decline_code",
  "idempotency_key",
  "name",
  "email",
  "title",
  "hash"
])
const valueOf = (name: string, text: string): unknown =>
  /^-?\d{1,15}$/.test(text) && !textColumns.has(name) ? Number(text) : text

// Runs one statement (with `?` placeholders, inlined as literals) through the `mariadb` client and answers its
// rows: NULL as null, integers as numbers, the rest as strings.
export const queryMariaDbSync = <A = Record<string, unknown>>(
  url: string,
  sql: string,
  params: ReadonlyArray<unknown> = []
): Array<A> => {
  const target = new URL(url)
  // PostgreSQL's CAST(... AS TEXT), which the suites use to read amounts exactly, is CAST(... AS CHAR) here.
  const texts = new Set([...sql.matchAll(/CAST\(.+? AS TEXT\) AS (\w+)/gi)].map((m) => m[1]!))
  const statement = sql.replace(/ AS TEXT\)/gi, " AS CHAR)")
  const result = spawnSync("mariadb", [
    "--xml",
    "--default-character-set=utf8mb4",
    "-h",
    target.hostname,
    "-P",
    target.port || "3306",
    "-u",
    decodeURIComponent(target.username) || "root",
    ...(target.password ? [`-p${decodeURIComponent(target.password)}`] : []),
    ...(target.pathname.length > 1 ? [decodeURIComponent(target.pathname.slice(1))] : []),
    "-e",
    inlineParams(statement, params)
  ], { encoding: "utf8", maxBuffer: 512 * 1024 * 1024 })
  if (result.error !== undefined) throw new Error(`mariadb could not run: ${result.error.message}`)
  if (result.status !== 0) {
    throw new Error(`mariadb on ${shown(url)} exited with ${result.status}: ${result.stderr}\n${sql}`)
  }
  return [...result.stdout.matchAll(/<row>([\s\S]*?)<\/row>/g)].map(([, row]) =>
    Object.fromEntries(
      [...row!.matchAll(/<field name="([^"]*)"(?: xsi:nil="true" \/>|>([\s\S]*?)<\/field>)/g)].map((
        [, name, text]
      ) => [
        unescape(name!),
        text === undefined ? null : texts.has(name!) ? unescape(text) : valueOf(unescape(name!), unescape(text))
      ])
    ) as A
  )
}

// Drops a test database synchronously (for process exit).
export const dropDatabaseSync = (url: string): void => {
  const name = decodeURIComponent(new URL(url).pathname.slice(1))
  queryMariaDbSync(adminUrl, `DROP DATABASE IF EXISTS \`${name}\``)
}
