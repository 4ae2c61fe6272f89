import Database from "better-sqlite3"
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync, mkdtempSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { afterAll, expect } from "vitest"
import { denoStartCommand, denoStartEnv, nodeStartCommand } from "../../scripts/start-commands.mjs"
import { ContractProxy } from "./ContractProxy.ts"
import * as MariaDb from "./MariaDb.ts"
import { createTestDatabase, dropDatabaseSync, queryPostgresSync, type TestDatabase } from "./Postgres.ts"

// Starts the service as a real process on a real socket, the way a user starts it. APP_RUNTIME picks the
// app under test, so the same black-box suites run against every runtime; TEST_DATABASE=postgres (or mariadb)
// runs it on a PostgreSQL (or MariaDB) database of its own instead of a SQLite file in its data directory.
const root = resolve(import.meta.dirname, "../..")
// The apps and the CLI as `npm start`, `npm run start:deno` and `npm run cli` run them: plain node, or deno, on
// the bundles that scripts/build.mjs makes (vitest's globalSetup, test/support/globalSetup.ts, builds them once
// per run). The command lines come from package.json (scripts/start-commands.mjs), and each is the app itself,
// not a launcher: a SIGKILL (kill9) must end the app, not leave it running behind a killed parent.
const nodeStart = nodeStartCommand()
const nodeAppBundle = nodeStart.entry
export const nodeAppCommand: ReadonlyArray<string> = [process.execPath, ...nodeStart.flags, nodeAppBundle]
// The variables npm start sets for the app (MALLOC_ARENA_MAX).
export const nodeAppEnv: Readonly<Record<string, string>> = nodeStart.env
export const cliBundle = join(root, "dist/cli/main.mjs")
// Each runtime's command line, and the variables its start script sets.
const commands: Record<
  string,
  () => { readonly argv: ReadonlyArray<string>; readonly env: Readonly<Record<string, string>> }
> = {
  node: () => ({ argv: nodeAppCommand, env: nodeAppEnv }),
  deno: () => ({ argv: denoStartCommand(), env: denoStartEnv() })
}

export const freePort = (): Promise<number> =>
  new Promise((ok, fail) => {
    const server = createServer()
    server.once("error", fail)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() => ok(typeof address === "object" && address ? address.port : 0))
    })
  })

export const AdminKey = "test-admin-key-0123456789"

export const testDatabase: "sqlite" | "postgres" | "mariadb" | "memory" =
  process.env.TEST_DATABASE === "postgres" || process.env.TEST_DATABASE === "mariadb" ||
    process.env.TEST_DATABASE === "memory"
    ? process.env.TEST_DATABASE
    : "sqlite"
// TEST_DATABASE=memory: the app keeps everything in its own memory (DATABASE_URL=memory:), so nothing survives its
// restart and no other process (the CLI, so createClient) reaches its data: suites that need either skip there.
export const inMemory = testDatabase === "memory"
// A database server several instances can share (the scale-out suites run on these only).
export const sharedDatabase = testDatabase === "postgres" || testDatabase === "mariadb"
const server = testDatabase === "mariadb"
  ? { create: MariaDb.createTestDatabase, dropSync: MariaDb.dropDatabaseSync }
  : { create: createTestDatabase, dropSync: dropDatabaseSync }

// PostgreSQL (or MariaDB) databases made for apps in this test file, by the data directory of the app they were made for:
// an app started again on the same data directory (a restart) gets the same database. They are dropped after
// the file's last test (an afterAll registered here, before the file's own, so it runs after them), or at
// exit if the process ends some other way.
const databasesByDataDir = new Map<string, TestDatabase>()
if (sharedDatabase) {
  afterAll(async () => {
    const databases = [...databasesByDataDir.values()]
    databasesByDataDir.clear()
    await Promise.all(databases.map((d) => d.drop()))
  })
  process.once("exit", () => {
    for (const d of databasesByDataDir.values()) {
      try {
        server.dropSync(d.url)
      } catch {
        // the process is ending: nothing to report to
      }
    }
  })
}

const postgresUrlFor = async (dataDir: string): Promise<string> => {
  const existing = databasesByDataDir.get(dataDir)
  if (existing !== undefined) return existing.url
  const created = await server.create()
  databasesByDataDir.set(dataDir, created)
  return created.url
}

// Every app's requests and responses through fetch are checked against the OpenAPI document it serves (a
// ContractProxy in front of it, at app.baseUrl; CONTRACT_PROXY=off talks to the app directly). After the file's
// last test the counts are printed, and a response that did not conform fails the file.
const contractChecked = process.env.CONTRACT_PROXY !== "off"
const proxies: Array<ContractProxy> = []
afterAll(async () => {
  const started = proxies.splice(0)
  await Promise.all(started.map((p) => p.close()))
  if (started.length === 0) return
  const sum = (key: "requests" | "responses" | "refusedByBoth") => started.reduce((n, p) => n + p.counts[key], 0)
  const violations = started.flatMap((p) => p.counts.violations)
  console.log(
    `OpenAPI contract (${expect.getState().testPath?.split("/test/")[1] ?? "this file"}): ${
      sum("requests")
    } requests and ${sum("responses")} responses checked, ${
      sum("refusedByBoth")
    } requests refused by document and service alike, ${violations.length} violations`
  )
  if (violations.length > 0) {
    throw new Error(`${violations.length} answers do not conform to the OpenAPI document:\n${violations.join("\n")}`)
  }
})

export interface AppOptions {
  readonly env?: Readonly<Record<string, string>>
  // Restarts pass the first app's dataDir: on PostgreSQL that selects the same database too.
  readonly dataDir?: string
  readonly port?: number
  // PostgreSQL only: an existing database, e.g. another instance's (`app.databaseUrl`) for apps that share
  // one. By default TEST_DATABASE=postgres makes a new one (or, for a dataDir seen before, reuses its).
  readonly databaseUrl?: string
}

export class AppProcess {
  private child: ChildProcess | undefined
  private log = ""
  private constructor(
    readonly port: number,
    readonly dataDir: string,
    private readonly env: Record<string, string>,
    private readonly proxy: ContractProxy | undefined
  ) {}

  static async start(options: AppOptions = {}): Promise<AppProcess> {
    const port = options.port ?? (await freePort())
    const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), "paysub-app-"))
    const databaseUrl = options.env?.DATABASE_URL ?? options.databaseUrl ??
      (sharedDatabase ? await postgresUrlFor(dataDir) : inMemory ? "memory:" : `sqlite:${join(dataDir, "paysub.db")}`)
    const proxy = contractChecked ? await ContractProxy.start(await freePort(), port) : undefined
    if (proxy !== undefined) proxies.push(proxy)
    const app = new AppProcess(port, dataDir, {
      PORT: String(port),
      BASE_URL: `http://127.0.0.1:${proxy?.port ?? port}`,
      DATABASE_URL: databaseUrl,
      ADMIN_API_KEY: AdminKey,
      // Suites send many requests from one address; the rate-limit tests set their own limits.
      SUBSCRIBE_RATE_LIMIT: "0",
      MERCHANT_RATE_LIMIT: "0",
      ...options.env
    }, proxy)
    await app.start()
    return app
  }

  // Where the suites send their requests: the contract-checking proxy in front of the app, or the app itself.
  get baseUrl(): string {
    return `http://127.0.0.1:${this.proxy?.port ?? this.port}`
  }
  // The app's own socket, for what must not pass a proxy (raw HTTP, what is not HTTP).
  get appUrl(): string {
    return `http://127.0.0.1:${this.port}`
  }
  // What the app was started with (and what a CLI run on its database needs): postgres://... or sqlite:PATH.
  get databaseUrl(): string {
    return this.env.DATABASE_URL!
  }
  get onPostgres(): boolean {
    return /^postgres(ql)?:\/\//.test(this.databaseUrl)
  }
  get onMariaDb(): boolean {
    return /^(mysql|mariadb):\/\//.test(this.databaseUrl)
  }
  // The SQLite file. There is none on PostgreSQL: use databaseUrl, query() or Postgres.dumpData there.
  get databaseFile(): string {
    if (this.onPostgres || this.onMariaDb || this.databaseUrl === "memory:") {
      throw new Error(`databaseFile: this app runs on ${this.databaseUrl.split(":")[0]}, which has no database file`)
    }
    return this.databaseUrl.replace(/^sqlite:/, "")
  }
  get output(): string {
    return this.log
  }
  // The app's process id (its memory can be read from /proc/<pid>/status on Linux).
  get pid(): number | undefined {
    return this.child?.pid
  }

  async start(): Promise<void> {
    const runtime = process.env.APP_RUNTIME ?? "node"
    const start = commands[runtime]?.()
    const [command, ...args] = start?.argv ?? []
    if (start === undefined || command === undefined) throw new Error(`APP_RUNTIME=${runtime}: no such app`)
    const bundle = args.at(-1)!
    if (!existsSync(bundle)) throw new Error(`${bundle} is missing: run \`npm run build\` (vitest's globalSetup does)`)
    const env = { ...process.env, ...start.env, ...this.env }
    const child = spawn(command, args, { cwd: root, env, stdio: "pipe" })
    this.child = child
    child.stdout!.on("data", (chunk) => (this.log += chunk))
    child.stderr!.on("data", (chunk) => (this.log += chunk))
    // "close" comes once the pipes are read to their end, which can be after "exit" (exitCode set): an app that
    // stops at start is reported with all it wrote, not with what had arrived by then.
    const closed = new Promise((r) => child.once("close", r))
    const deadline = Date.now() + 30_000
    while (Date.now() < deadline) {
      if (child.exitCode !== null) {
        await Promise.race([closed, new Promise((r) => setTimeout(r, 5_000))])
        throw new Error(`app exited with ${child.exitCode}:\n${this.log}`)
      }
      // With a timeout: the port accepts connections before the app is built, and a request that arrives in
      // between is never answered (see test/scaleout/ScaleOut.test.ts); on PostgreSQL that window is long.
      const ready = await fetch(`${this.appUrl}/healthz`, { signal: AbortSignal.timeout(2_000) }).then(
        (r) => r.ok,
        () => false
      )
      if (ready) return await this.proxy?.load()
      await new Promise((r) => setTimeout(r, 100))
    }
    throw new Error(`app did not become ready within 30 s:\n${this.log}`)
  }

  private async exit(signal: NodeJS.Signals): Promise<void> {
    const child = this.child
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return
    const exited = new Promise((r) => child.once("exit", r))
    child.kill(signal)
    await exited
    // The process we started is the app itself, not a launcher that leaves it running (see the commands
    // above): once it has exited, nothing answers on its port any more.
    const answered = await fetch(`${this.appUrl}/healthz`, { signal: AbortSignal.timeout(2_000) }).then(
      () => true,
      () => false
    )
    if (answered) throw new Error(`the app still answers on ${this.appUrl} after its process got ${signal}`)
  }

  stop(): Promise<void> {
    return this.exit("SIGTERM")
  }
  // No shutdown hooks, no flushing: what a power cut or the OOM killer does.
  kill9(): Promise<void> {
    return this.exit("SIGKILL")
  }

  // Reads the database directly, to check what was (not) stored. `?` placeholders on both databases. On
  // PostgreSQL the rows come through psql as JSON: times are ISO strings there (numbers on SQLite), and
  // integers above 2^53 are rounded (read them CAST AS TEXT).
  query<A = Record<string, unknown>>(sql: string, ...params: ReadonlyArray<unknown>): Array<A> {
    if (this.onPostgres) return queryPostgresSync<A>(this.databaseUrl, sql, params)
    if (this.onMariaDb) return MariaDb.queryMariaDbSync<A>(this.databaseUrl, sql, params)
    const db = new Database(this.databaseFile, { readonly: true, fileMustExist: true })
    try {
      return db.prepare(sql).all(...params) as Array<A>
    } finally {
      db.close()
    }
  }
}

export const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString()

export const postForm = (
  baseUrl: string,
  path: string,
  fields: Record<string, string>,
  headers: Record<string, string> = {}
) =>
  fetch(`${baseUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: form(fields)
  })
