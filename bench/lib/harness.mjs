// What bench/run.mjs and bench/profile.mjs share: the targets and how to start and stop them, the
// scenarios, the load generator (autocannon, in this process), per-process measurements from /proc, and a
// registry that kills every spawned process however the run ends.
import autocannon from "autocannon"
import Database from "better-sqlite3"
import { execFileSync, fork, spawn } from "node:child_process"
import {
  closeSync,
  fdatasyncSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statfsSync,
  writeFileSync,
  writeSync
} from "node:fs"
import { createRequire } from "node:module"
import { createServer } from "node:net"
import os from "node:os"
import { join, relative, resolve } from "node:path"
import pg from "pg"
import { denoStartCommand, denoStartEnv, nodeStartCommand } from "../../scripts/start-commands.mjs"
import { askProbe } from "./heap-probe.mjs"
import { createMariadbDatabase, dropAllMariadbDatabases, dropMariadbDatabase, mariadbCounts } from "./mariadb.mjs"

// autocannon's client, when the server closes a keep-alive connection, reconnects and sends a new request
// without dropping the one it had just written into the dying socket: that stale entry stays at the head of
// its queue, and every later latency of that connection is measured from the stale request's start. Against
// a server that closes connections (the Node app closes one after every request with a body) the latencies
// come out several times too large. Here the queue is emptied on every (re)connect (a request written into a
// closed socket gets no answer), and connects are counted so the reports can say how many there were.
const Client = createRequire(import.meta.url)("autocannon/lib/httpClient.js")
let connects = 0
const connect = Client.prototype._connect
Client.prototype._connect = function(...args) {
  connects++
  this.pipelinedRequests?.clear()
  return connect.apply(this, args)
}

export const root = resolve(import.meta.dirname, "../..")

// ---- every spawned process, killed on any exit path

const live = new Set()
export const track = (child) => {
  live.add(child)
  child.once("exit", () => live.delete(child))
  return child
}
const killGroup = (child, signal) => {
  try {
    // Each server is started in its own process group (detached), so anything it spawned goes too.
    process.kill(-child.pid, signal)
  } catch {
    try {
      child.kill(signal)
    } catch {
      // already gone
    }
  }
}
export const killAllSync = () => {
  for (const child of live) killGroup(child, "SIGKILL")
  live.clear()
}
process.once("exit", killAllSync)

// ---- PostgreSQL: throwaway databases, always dropped

export const pgAdminUrl = process.env.POSTGRES_ADMIN_URL ??
  `postgres://${process.env.PGUSER ?? "postgres"}@${process.env.PGHOST ?? "127.0.0.1"}:${
    process.env.PGPORT ?? "5432"
  }/${process.env.PGDATABASE ?? "test"}`
const createdDatabases = new Set()

const withPg = async (url, f) => {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 })
  client.on("error", () => {})
  await client.connect()
  try {
    return await f(client)
  } finally {
    await client.end().catch(() => {})
  }
}
const databaseUrl = (name) => {
  const url = new URL(pgAdminUrl)
  url.pathname = `/${name}`
  return url.toString()
}
// A throwaway database of `kind` (postgres, mariadb): its URL; dropDatabase(url) drops either.
export const createDatabase = async (kind = "postgres") => {
  if (kind === "mariadb") return createMariadbDatabase()
  const name = `paysub_bench_${process.pid}_${Date.now().toString(36)}`
  await withPg(pgAdminUrl, (c) => c.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`))
  createdDatabases.add(name)
  return databaseUrl(name)
}
export const dropDatabase = async (url) => {
  if (/^(mysql|mariadb):/.test(url)) return dropMariadbDatabase(url)
  const name = decodeURIComponent(new URL(url).pathname.slice(1))
  await withPg(pgAdminUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`))
  createdDatabases.delete(name)
}
export const dropAllDatabases = async () => {
  for (const name of [...createdDatabases]) await dropDatabase(databaseUrl(name)).catch(() => {})
  await dropAllMariadbDatabases()
}
export const postgresAvailable = () => withPg(pgAdminUrl, (c) => c.query("SELECT 1")).then(() => true, () => false)

// ---- small helpers

// Pins a running process and all its threads (and what it starts later) to a taskset CPU list.
export const pinProcess = (pid, cpus) => execFileSync("taskset", ["-a", "-p", "-c", cpus, String(pid)])

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

export const freePort = () =>
  new Promise((ok, fail) => {
    const server = createServer()
    server.once("error", fail)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address()
      server.close(() => ok(port))
    })
  })

const clockTicks = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim()) || 100
  } catch {
    return 100
  }
})()

// CPU seconds (user + system) in a /proc stat file: of a process (all its threads), or of one thread.
const cpuSecondsOf = (file) => {
  const stat = readFileSync(file, "utf8")
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  return (Number(fields[11]) + Number(fields[12])) / clockTicks
}

// VmHWM (peak resident set) and VmRSS in kB, CPU seconds (user + system) of one process, and of its main thread
// alone (the thread whose id is the process's): the one that answers requests and runs every statement, so the
// one whose time bounds the throughput; the rest is GC helpers, the delivery thread and libuv's pool.
export const procStats = (pid) => {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8")
    const kb = (field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN)
    return {
      hwmKb: kb("VmHWM"),
      rssKb: kb("VmRSS"),
      cpuS: cpuSecondsOf(`/proc/${pid}/stat`),
      mainCpuS: cpuSecondsOf(`/proc/${pid}/task/${pid}/stat`)
    }
  } catch {
    return { hwmKb: NaN, rssKb: NaN, cpuS: NaN, mainCpuS: NaN }
  }
}
// Busy CPU seconds of the whole machine (all cores), from /proc/stat.
const machineBusyS = () => {
  try {
    const v = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1, 9).map(Number)
    return (v.reduce((a, b) => a + b, 0) - v[3] - v[4]) / clockTicks
  } catch {
    return NaN
  }
}

// Other users of the machine (another test suite...) distort a measurement: waits, up to maxMs, for a
// one-second window in which processes other than ours used less than thresholdPercent of a core.
export const waitForQuiet = async ({ ownPids, maxMs, thresholdPercent = 20 }) => {
  const started = performance.now()
  let foreign = NaN
  while (performance.now() - started < maxMs) {
    const busy = machineBusyS()
    const own = ownPids.map((pid) => procStats(pid).cpuS)
    const self = process.cpuUsage()
    await sleep(1_000)
    const ownDelta = ownPids.reduce((a, pid, i) => a + (procStats(pid).cpuS - own[i]), 0)
    const selfDelta = process.cpuUsage(self)
    foreign = (machineBusyS() - busy - ownDelta - (selfDelta.user + selfDelta.system) / 1e6) * 100
    if (foreign < thresholdPercent) break
  }
  return { waitedMs: Math.round(performance.now() - started), foreignCpuPercent: foreign }
}

// The processes on this machine whose name (comm) is one of `names`.
const pidsNamed = (...names) => {
  const pids = []
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (names.includes(readFileSync(`/proc/${entry}/comm`, "utf8").trim())) pids.push(Number(entry))
    } catch {
      // gone
    }
  }
  return pids
}
// A database server's processes (PostgreSQL's postmaster, backends, walwriter...; MariaDB's one threaded
// process): their CPU is the database's work for a target on it, not "other processes". (Another user of the
// same server would be counted too.)
export const postgresPids = () => pidsNamed("postgres")
export const databasePids = (kind) =>
  kind === "postgres" ? postgresPids() : kind === "mariadb" ? pidsNamed("mariadbd", "mysqld") : []
// The server targets: their database's CPU is reported beside theirs.
export const serverDatabase = (kind) => kind === "postgres" || kind === "mariadb"

// Writing 5 to clear_refs resets VmHWM to the current RSS (Linux 4.0+), so each scenario gets its own peak.
export const resetPeakRss = (pid) => {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, "5")
    return true
  } catch {
    return false
  }
}

export const percentile = (sorted, p) =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]
export const median = (xs) => {
  const v = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b)
  if (v.length === 0) return NaN
  return v.length % 2 === 1 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2
}

const versionOf = (pkg) => {
  try {
    return JSON.parse(readFileSync(join(root, "node_modules", pkg, "package.json"), "utf8")).version
  } catch {
    return undefined
  }
}

// How long one 4 KiB write + fdatasync takes where the benchmark's databases live (median of 100): what a durable
// commit waits for. The write ratios depend on it: one fsync per transaction (the references) against one per
// group (the service) matters when it is slow; when it is fast, CPU per request decides.
const fsyncMicros = (dir) => {
  const file = join(dir, `paysub-bench-fsync-${process.pid}`)
  const fd = openSync(file, "w")
  try {
    const block = Buffer.alloc(4096, 1)
    const times = []
    for (let i = 0; i < 100; i++) {
      const start = process.hrtime.bigint()
      writeSync(fd, block, 0, block.length, i * block.length)
      fdatasyncSync(fd)
      times.push(Number(process.hrtime.bigint() - start) / 1000)
    }
    return Math.round(times.sort((a, b) => a - b)[50])
  } finally {
    closeSync(fd)
    rmSync(file, { force: true })
  }
}

export const machineInfo = () => {
  const cpus = os.cpus()
  let git
  try {
    git = {
      commit: execFileSync("git", ["rev-parse", "HEAD"], { cwd: root }).toString().trim(),
      dirty: execFileSync("git", ["status", "--porcelain"], { cwd: root }).toString().trim() !== ""
    }
  } catch {
    git = undefined
  }
  let sqliteVersion
  try {
    const db = new Database(":memory:")
    sqliteVersion = db.prepare("SELECT sqlite_version() AS v").get().v
    db.close()
  } catch {
    sqliteVersion = undefined
  }
  let filesystem
  try {
    const type = statfsSync(os.tmpdir()).type
    filesystem = { tmpdir: os.tmpdir(), type: `0x${type.toString(16)}${type === 0xef53 ? " (ext2/3/4)" : ""}` }
  } catch {
    filesystem = undefined
  }
  return {
    cpuModel: cpus[0]?.model,
    cpuCount: cpus.length,
    availableParallelism: os.availableParallelism?.(),
    totalMemoryBytes: os.totalmem(),
    totalMemoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    node: process.version,
    loadAverageAtStart: os.loadavg(),
    filesystem,
    fsyncMicros: fsyncMicros(os.tmpdir()),
    sqlite: sqliteVersion,
    packages: Object.fromEntries(
      [
        "effect",
        "@effect/platform",
        "@effect/platform-node",
        "@effect/sql",
        "better-sqlite3",
        "fastify",
        "autocannon",
        "esbuild",
        "tsx",
        "deno"
      ].map((p) => [p, versionOf(p)])
    ),
    git
  }
}

// ---- the SMTP sink (a child process: its work does not land on the load generator's event loop)

export const startSmtpSink = (port) => startSink("bench/smtp-sink.mjs", port)
// bench/webhook-sink.mjs: count() answers the deliveries received; distinct() the distinct webhook-ids.
export const startWebhookSink = (port) => startSink("bench/webhook-sink.mjs", port)

const startSink = (file, port) =>
  new Promise((ok, fail) => {
    const args = port === undefined ? [] : [String(port)]
    const child = track(fork(join(root, file), args, { stdio: ["ignore", "ignore", "inherit", "ipc"] }))
    const timer = setTimeout(() => fail(new Error(`${file} did not start within 10 s`)), 10_000)
    child.once("exit", (code) => fail(new Error(`${file} exited with ${code}`)))
    child.on("message", (m) => {
      if (m?.type !== "listening") return
      clearTimeout(timer)
      ok({
        port: m.port,
        pid: child.pid,
        count: (field = "count") =>
          new Promise((res) => {
            const onMessage = (r) => {
              if (r?.type !== "count") return
              child.off("message", onMessage)
              res(r[field])
            }
            child.on("message", onMessage)
            child.send({ type: "count" })
            setTimeout(() => (child.off("message", onMessage), res(NaN)), 2_000)
          }),
        stop: () => {
          child.removeAllListeners("exit")
          killGroup(child, "SIGTERM")
        }
      })
    })
  })

// bench/healthz-probe.mjs against baseUrl: a request every `everyMs` ms, `requests` ([{ path, headers }]) in turn;
// take() answers the latencies by path since the last take, how many were not sent (too many waiting) and how many
// got no answer (failed).
export const startProbe = (baseUrl, everyMs, requests = [{ path: "/healthz" }]) => {
  const child = track(
    fork(join(root, "bench/healthz-probe.mjs"), [baseUrl, String(everyMs), JSON.stringify(requests)], {
      stdio: ["ignore", "ignore", "inherit", "ipc"]
    })
  )
  return {
    pid: child.pid,
    take: () =>
      new Promise((ok) => {
        child.once("message", ok)
        child.send({ type: "take" })
      }),
    stop: () => killGroup(child, "SIGTERM")
  }
}

// ---- targets

// The Node app as `npm start` runs it: `node [flags] dist/node/main.mjs` once `npm run build` (scripts/build.mjs)
// has made the bundle; the Deno app as `npm run start:deno` runs it, `deno run [flags] dist/deno/main.mjs`. The command lines are read from
// package.json's scripts (scripts/start-commands.mjs), so the benchmark measures what users start, with the same
// flags (the heap settings). Each is the app's own process: node flags such as --cpu-prof apply to the app
// itself. The bundle is built once per harness process, before the first start (run.mjs and profile.mjs call
// buildApp() up front, so no start-up time includes the build).
let built = false
export const buildApp = () => {
  if (built) return
  execFileSync(process.execPath, [join(root, "scripts/build.mjs")], { cwd: root, stdio: "inherit" })
  built = true
}
const nodeService = (extraNodeArgs = []) => {
  const { entry, flags } = nodeStartCommand()
  return [process.execPath, ...flags, ...extraNodeArgs, entry]
}
// What every target of the Node app shares: npm start's command line and the variables it sets (MALLOC_ARENA_MAX),
// on the bundle.
const nodeApp = { command: nodeService, env: nodeStartCommand().env, bundle: true, app: true }

export const targetDefinitions = {
  service: {
    label: "service (node, sqlite)",
    short: "service",
    ...nodeApp,
    database: "sqlite"
  },
  ref1: {
    label: "ref1 node:http+bsqlite3",
    short: "ref1",
    command: (extra = []) => [process.execPath, ...extra, "bench/ref-node-http.mjs"]
  },
  ref2: {
    label: "ref2 fastify+bsqlite3",
    short: "ref2",
    command: (extra = []) => [process.execPath, ...extra, "bench/ref-fastify.mjs"]
  },
  deno: {
    label: "service (deno, sqlite)",
    short: "deno",
    command: denoStartCommand,
    env: denoStartEnv(),
    bundle: true,
    database: "sqlite",
    app: true
  },
  "service-pg": {
    label: "service (node, postgres)",
    short: "service-pg",
    ...nodeApp,
    database: "postgres"
  },
  "ref-pg": {
    label: "ref-pg node:http+pg",
    short: "ref-pg",
    command: (extra = []) => [process.execPath, ...extra, "bench/ref-node-http.mjs", "--postgres"],
    database: "postgres"
  },
  "ref2-pg": {
    label: "ref2-pg fastify+pg",
    short: "ref2-pg",
    command: (extra = []) => [process.execPath, ...extra, "bench/ref-fastify.mjs", "--postgres"],
    database: "postgres"
  },
  "service-mariadb": {
    label: "service (node, mariadb)",
    short: "service-mariadb",
    ...nodeApp,
    database: "mariadb"
  },
  "ref-mariadb": {
    label: "ref-mariadb node:http+mysql2",
    short: "ref-mariadb",
    command: (extra = []) => [process.execPath, ...extra, "bench/ref-node-http.mjs", "--mariadb"],
    database: "mariadb"
  },
  "ref2-mariadb": {
    label: "ref2-mariadb fastify+mysql2",
    short: "ref2-mariadb",
    command: (extra = []) => [process.execPath, ...extra, "bench/ref-fastify.mjs", "--mariadb"],
    database: "mariadb"
  },
  // The service with one webhook endpoint for its client, registered at a local receiver (bench/webhook-sink.mjs):
  // every write also records an event and a delivery, which the worker sends. Only with --targets=service-hooks.
  "service-hooks": {
    label: "service + 1 webhook endpoint (node, sqlite)",
    short: "service-hooks",
    ...nodeApp,
    database: "sqlite",
    webhooks: true
  },
  // Two processes of the bundle on one database, each on its own port; the load is split between them.
  "service-pg-x2": {
    label: "service x2 (node, postgres)",
    short: "service-pg-x2",
    ...nodeApp,
    database: "postgres",
    instances: 2
  }
}
// service and service-hooks sending mail and webhooks from the main thread (DELIVERY_THREAD=off,
// docs/decisions/0029): what the delivery thread changes. Only with --targets.
for (const name of ["service", "service-hooks"]) {
  const def = targetDefinitions[name]
  targetDefinitions[`${name}-1t`] = {
    ...def,
    label: `${def.label}, sends on the main thread`,
    short: `${name}-1t`,
    env: { ...def.env, DELIVERY_THREAD: "off" }
  }
}

// `baseline`, `baseline-hooks`, `baseline-pg` (with --postgres) and `baseline-mariadb` (with --mariadb): service,
// service-hooks, service-pg and service-mariadb as another checkout has them, built there
// (BENCH_BASELINE=/path/to/checkout): a change against the code before it, in one run. Only with --targets.
if (process.env.BENCH_BASELINE !== undefined) {
  const checkout = process.env.BENCH_BASELINE
  for (const name of ["service", "service-hooks", "service-pg", "service-mariadb"]) {
    const def = targetDefinitions[name]
    const short = name.replace("service", "baseline")
    targetDefinitions[short] = {
      ...def,
      label: `${def.label.replace("service", "baseline")} (${checkout})`,
      short,
      env: nodeStartCommand(checkout).env,
      command: (extraNodeArgs = []) => {
        const [node, ...args] = def.command(extraNodeArgs)
        return [node, ...args.slice(0, -1), join(checkout, relative(root, args.at(-1)))]
      }
    }
  }
}

// Starts a target on a free port with a fresh database; resolves once /healthz answers and the API key is
// known. Output is kept (the last 16 kB) for error reports and otherwise discarded. A target of several
// instances (service-pg-x2) starts them one after the other on the same database: the second finds the
// first's API client (and prints no key), so it is given the first one's key. The result then has `pids`
// and `baseUrls` (one per instance); `pid` and `baseUrl` are the first's.
export const startTarget = async (name, options) => {
  const def = targetDefinitions[name]
  if ((def.instances ?? 1) === 1) return startInstance(name, options)
  const instances = []
  try {
    for (let i = 0; i < def.instances; i++) {
      instances.push(await startInstance(name, { ...options, apiKey: instances[0]?.apiKey }))
    }
  } catch (e) {
    await Promise.all(instances.map((t) => t.stop()))
    throw e
  }
  return {
    ...instances[0],
    pids: instances.map((t) => t.pid),
    heapProbes: instances.map((t) => t.heapProbe),
    baseUrls: instances.map((t) => t.baseUrl),
    instances,
    output: () => instances.map((t, i) => `[instance ${i + 1}]\n${t.output()}`).join("\n"),
    stop: async (graceMs) => {
      const exits = await Promise.all(instances.map((t) => t.stop(graceMs)))
      return exits.length === 1 ? exits[0] : { instances: exits }
    }
  }
}

// `cpus` (a taskset list, "0"): the target and every thread it starts run only there. `port`: the port to listen
// on (a free one when not given); `onSpawn`: called with the process id once it is started; `onOutput`: called
// with each chunk the target writes, as it comes.
const startInstance = async (
  name,
  {
    dataDir,
    smtpPort,
    databaseUrl,
    extraNodeArgs = [],
    env = {},
    apiKey: knownKey,
    webhookPort,
    cpus,
    port: given,
    onSpawn,
    onOutput
  }
) => {
  const def = targetDefinitions[name]
  if (def.bundle) buildApp()
  const port = given ?? await freePort()
  const baseUrl = `http://127.0.0.1:${port}`
  // A Node target counts the bytes its main thread allocates (bench/lib/heap-probe.mjs).
  const heapProbe = def.command()[0] === process.execPath ? join(dataDir, `heap-${port}.sock`) : undefined
  const nodeArgs = heapProbe === undefined
    ? extraNodeArgs
    : [`--import=${join(root, "bench/lib/heap-probe.mjs")}`, ...extraNodeArgs]
  // taskset execs the command, so the child's pid is the target's.
  const [command, ...args] = [...(cpus === undefined ? [] : ["taskset", "-c", cpus]), ...def.command(nodeArgs)]
  const childEnv = {
    ...process.env,
    PORT: String(port),
    BASE_URL: baseUrl,
    DB_FILE: join(dataDir, "ref.db"),
    DATABASE_URL: databaseUrl ?? `sqlite:${join(dataDir, "paysub.db")}`,
    MAIL_TRANSPORT: "smtp",
    SMTP_URL: `smtp://127.0.0.1:${smtpPort}`,
    SUBSCRIBE_RATE_LIMIT: "0",
    MERCHANT_RATE_LIMIT: "0",
    NO_COLOR: "1",
    ...(heapProbe === undefined ? {} : { BENCH_HEAP_PROBE: heapProbe }),
    ...(def.webhooks ? { WEBHOOK_ALLOW_HTTP: "on", WEBHOOK_ALLOW_PRIVATE: "on" } : {}),
    ...def.env,
    ...env
  }
  const child = track(
    spawn(command, args, { cwd: root, env: childEnv, stdio: ["ignore", "pipe", "pipe"], detached: true })
  )
  onSpawn?.(child.pid)
  let output = ""
  const keep = (chunk) => {
    onOutput?.(chunk)
    output += chunk
    if (output.length > 16_384) output = output.slice(-16_384)
  }
  child.stdout.setEncoding("utf8").on("data", keep)
  child.stderr.setEncoding("utf8").on("data", keep)
  const exited = new Promise((r) => child.once("exit", (code, signal) => r({ code, signal })))
  let apiKey = knownKey
  const deadline = Date.now() + 60_000
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${name} exited during start (${child.exitCode ?? child.signalCode}):\n${output}`)
    }
    if (Date.now() > deadline) {
      killGroup(child, "SIGKILL")
      throw new Error(`${name} did not become ready within 60 s:\n${output}`)
    }
    apiKey ??= /shown only now:\s*\n\s*(sk_[A-Za-z0-9_-]+)/.exec(output)?.[1]
    if (apiKey !== undefined) {
      const ready = await fetch(`${baseUrl}/healthz`).then((r) => r.ok, () => false)
      if (ready) break
    }
    await sleep(100)
  }
  if (def.webhooks && webhookPort !== undefined) {
    const registered = await fetch(`${baseUrl}/webhook_endpoints`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${apiKey}` },
      body: JSON.stringify({ url: `http://127.0.0.1:${webhookPort}/hooks`, enabled_events: ["*"] })
    })
    if (registered.status !== 201) throw new Error(`${name}: webhook endpoint answered ${registered.status}`)
  }
  return {
    name,
    def,
    pid: child.pid,
    port,
    baseUrl,
    apiKey,
    heapProbe,
    dataDir,
    databaseUrl: childEnv.DATABASE_URL,
    output: () => output,
    // SIGTERM (a graceful stop, which also makes node write a --cpu-prof profile), SIGKILL after the grace.
    stop: async (graceMs = 10_000) => {
      if (child.exitCode !== null || child.signalCode !== null) return exited
      try {
        process.kill(child.pid, "SIGTERM")
      } catch {
        // gone
      }
      const timer = setTimeout(() => killGroup(child, "SIGKILL"), graceMs)
      const result = await exited
      clearTimeout(timer)
      killGroup(child, "SIGKILL") // anything left in its group
      return result
    }
  }
}

// ---- scenarios

const futureExpiry = () => {
  const now = new Date()
  return `${now.getUTCFullYear() + 3}-${String(now.getUTCMonth() + 1).padStart(2, "0")}`
}

// A transfer body with a unique reference, built from two constant halves around the reference.
const transferTemplate = (expiry, pan = "4242424242424242") => {
  const marker = "\u0000REF\u0000"
  const body = JSON.stringify({
    payment_transfer: {
      reference: marker,
      amount: "12.34",
      currency: "USD",
      sender_account_uri: `pan:${pan};exp=${expiry};cvc=123`,
      sender: { first_name: "Ann", middle_name: "B", email: "ann@example.com" },
      recipient: { first_name: "Mo", email: "shop@example.com", merchant_id: "m-42" },
      authentication_value: "ucaf:jJJLtQa+Iws8AREAEbjsA1MAAAA="
    }
  })
  const [before, after] = body.split(JSON.stringify(marker).slice(1, -1))
  return (reference) => `${before}${reference}${after}`
}
export const transferBody = (reference, expiry = futureExpiry(), pan) => transferTemplate(expiry, pan)(reference)

let uniqueCounter = 0
const unique = (tag) => `${tag}-${(uniqueCounter++).toString(36)}`

export const scenarios = {
  approved: {
    title: "POST /merchant/transfers/payment approved (201, reserve + settle)",
    expect: 201,
    requests: (ctx) => {
      const body = transferTemplate(futureExpiry())
      const tag = `ok${Date.now().toString(36)}`
      return [{
        method: "POST",
        path: "/merchant/transfers/payment",
        headers: { "content-type": "application/json", authorization: `Bearer ${ctx.apiKey}` },
        setupRequest: (req) => ({ ...req, body: body(unique(tag)) })
      }]
    }
  },
  approvedIdempotent: {
    title: "POST /merchant/transfers/payment approved, new Idempotency-Key each request (201)",
    expect: 201,
    requests: (ctx) => {
      const body = transferTemplate(futureExpiry())
      const tag = `ik${Date.now().toString(36)}`
      const headers = { "content-type": "application/json", authorization: `Bearer ${ctx.apiKey}` }
      return [{
        method: "POST",
        path: "/merchant/transfers/payment",
        headers,
        setupRequest: (req) => {
          const id = unique(tag)
          return { ...req, headers: { ...headers, "idempotency-key": `key-${id}` }, body: body(id) }
        }
      }]
    }
  },
  replay: {
    title: "POST /merchant/transfers/payment, a used Idempotency-Key + same body (201 replayed)",
    expect: 201,
    // The keys were used before the timed window (prepareTarget); a 201 without `Idempotent-Replayed: true`
    // or with other bytes than the first answer is counted as unexpected.
    requests: (ctx, tally) => {
      const pool = ctx.replayPool
      let next = Math.floor(Math.random() * pool.length)
      const headers = { "content-type": "application/json", authorization: `Bearer ${ctx.apiKey}` }
      return [{
        method: "POST",
        path: "/merchant/transfers/payment",
        headers,
        setupRequest: (req, context) => {
          const entry = pool[next++ % pool.length]
          context.expected = entry.response
          return { ...req, headers: { ...headers, "idempotency-key": entry.key }, body: entry.body }
        },
        onResponse: (status, body, context, responseHeaders) => {
          if (status !== 201) return
          const replayed = responseHeaders["idempotent-replayed"] ?? responseHeaders["Idempotent-Replayed"]
          if (replayed !== "true" || body !== context.expected) tally.unexpected++
        }
      }]
    }
  },
  declined: {
    title: "POST /merchant/transfers/payment expired card (402, one insert)",
    expect: 402,
    requests: (ctx) => {
      const body = transferTemplate("2020-01")
      const tag = `x${Date.now().toString(36)}`
      return [{
        method: "POST",
        path: "/merchant/transfers/payment",
        headers: { "content-type": "application/json", authorization: `Bearer ${ctx.apiKey}` },
        setupRequest: (req) => ({ ...req, body: body(unique(tag)) })
      }]
    }
  },
  notModified: {
    title: "GET /merchant/transfers/payment/{id} If-None-Match (304)",
    expect: 304,
    requests: (ctx) => [{
      method: "GET",
      path: `/merchant/transfers/payment/${ctx.transferId}`,
      headers: { authorization: `Bearer ${ctx.apiKey}`, "if-none-match": ctx.etag }
    }]
  },
  // Not in the default set: what each server pays for a request that does no work (no key, no database), so
  // what is left of a scenario's CPU per request once this floor is taken off. Ask for it with --scenarios.
  health: {
    title: "GET /healthz (200, no work: the cost of the HTTP stack alone)",
    expect: 200,
    requests: () => [{ method: "GET", path: "/healthz" }]
  },
  // The large-data mode's reads (bench/large.mjs), in none of the default sets.
  balance: {
    title: "GET /merchant/balance (200, the kept balances)",
    expect: 200,
    requests: (
      ctx
    ) => [{ method: "GET", path: "/merchant/balance", headers: { authorization: `Bearer ${ctx.apiKey}` } }]
  },
  transfersPage: {
    title: "GET /merchant/transfers/payment?limit=100, from ctx.pageAfter when set (200, a page)",
    expect: 200,
    requests: (ctx) => [{
      method: "GET",
      path: `/merchant/transfers/payment?limit=100${ctx.pageAfter ? `&starting_after=${ctx.pageAfter}` : ""}`,
      headers: { authorization: `Bearer ${ctx.apiKey}` }
    }]
  },
  pendingSubscribers: {
    title: "GET /subscriptions?status=pending&limit=100, admin key (200, a page)",
    expect: 200,
    requests: (ctx) => [{
      method: "GET",
      path: "/subscriptions?status=pending&limit=100",
      headers: { authorization: `Bearer ${ctx.adminKey}` }
    }]
  },
  subscribe: {
    title: "POST /subscribe form, new address each request (200, subscription + outbox row)",
    expect: 200,
    requests: () => {
      const tag = `s${Date.now().toString(36)}`
      return [{
        method: "POST",
        path: "/subscribe",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        setupRequest: (req) => {
          const id = unique(tag)
          return { ...req, body: `name=Bench+User+${id}&email=bench.${id}%40example.com` }
        }
      }]
    }
  }
}
// Subscribe runs last on each server: the service keeps mailing its backlog after it (outbox worker).
export const scenarioOrder = ["approved", "approvedIdempotent", "replay", "declined", "notModified", "subscribe"]

// The replay scenario's keys: transfers made with an Idempotency-Key before anything is timed.
export const ReplayPoolSize = 300

// One transfer to GET, and its ETag; with `replay` among the scenarios, ReplayPoolSize transfers made with
// keys (10 at a time), and their answers, for the replay scenario to send again.
export const prepareTarget = async (target, scenarioNames = []) => {
  const created = await fetch(`${target.baseUrl}/merchant/transfers/payment`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${target.apiKey}` },
    body: transferBody(`seed-${Date.now()}`)
  })
  const body = await created.json()
  if (created.status !== 201) throw new Error(`${target.name}: seed transfer answered ${created.status}`)
  const id = body.payment_transfer.id
  const got = await fetch(`${target.baseUrl}/merchant/transfers/payment/${id}`, {
    headers: { authorization: `Bearer ${target.apiKey}` }
  })
  await got.arrayBuffer()
  const etag = got.headers.get("etag")
  const check = await fetch(`${target.baseUrl}/merchant/transfers/payment/${id}`, {
    headers: { authorization: `Bearer ${target.apiKey}`, "if-none-match": etag }
  })
  await check.arrayBuffer()
  if (check.status !== 304) throw new Error(`${target.name}: If-None-Match answered ${check.status}, not 304`)
  const ctx = { apiKey: target.apiKey, transferId: id, etag }
  if (scenarioNames.includes("replay")) ctx.replayPool = await replayPool(target)
  return ctx
}

const replayPool = async (target) => {
  const tag = `rp${Date.now().toString(36)}`
  const pool = Array.from({ length: ReplayPoolSize }, (_, i) => ({
    key: `replay-${tag}-${i}`,
    body: transferBody(`${tag}-${i}`)
  }))
  let next = 0
  const worker = async () => {
    for (let entry = pool[next++]; entry !== undefined; entry = pool[next++]) {
      const res = await fetch(`${target.baseUrl}/merchant/transfers/payment`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          authorization: `Bearer ${target.apiKey}`,
          "idempotency-key": entry.key
        },
        body: entry.body
      })
      entry.response = await res.text()
      if (res.status !== 201) throw new Error(`${target.name}: a replay-pool transfer answered ${res.status}`)
    }
  }
  await Promise.all(Array.from({ length: 10 }, worker))
  return pool
}

// Drives one scenario against a running target for `duration` seconds and measures it: throughput of the
// expected status, latency percentiles of every response (float ms), the server's peak RSS (VmHWM reset at
// the start), its CPU time, and the load generator's own CPU.
export const runScenario = async (
  target,
  scenarioName,
  ctx,
  { duration, connections, measure = true, otherPids = [] }
) => {
  const scenario = scenarios[scenarioName]
  const latencies = []
  // Several instances (service-pg-x2): CPU and peak RSS are summed over them, the connections split.
  const pids = target.pids ?? [target.pid]
  const baseUrls = target.baseUrls ?? [target.baseUrl]
  const peakReset = measure ? pids.map(resetPeakRss).every(Boolean) : false
  const sumStats = () =>
    pids.map(procStats).reduce((a, b) => ({
      hwmKb: a.hwmKb + b.hwmKb,
      rssKb: a.rssKb + b.rssKb,
      cpuS: a.cpuS + b.cpuS,
      mainCpuS: a.mainCpuS + b.mainCpuS
    }))
  const before = sumStats()
  const tally = { unexpected: 0 }
  const database = serverDatabase(target.def.database)
  const dbBefore = new Map(databasePids(target.def.database).map((pid) => [pid, procStats(pid).cpuS]))
  const clientBefore = process.cpuUsage()
  const othersBefore = otherPids.map((pid) => procStats(pid).cpuS)
  const busyBefore = machineBusyS()
  const connectsBefore = connects
  let sampledRssKb = before.rssKb
  const sampler = setInterval(() => {
    const { rssKb } = sumStats()
    if (rssKb > sampledRssKb) sampledRssKb = rssKb
  }, 200)
  const heapProbes = (target.heapProbes ?? [target.heapProbe]).filter((p) => p !== undefined)
  if (measure) await Promise.all(heapProbes.map((p) => askProbe(p, "start")))
  const started = performance.now()
  const share = (i) => Math.floor(connections / baseUrls.length) + (i < connections % baseUrls.length ? 1 : 0)
  const results = await Promise.all(baseUrls.map((url, i) =>
    new Promise((ok, fail) => {
      const instance = autocannon({
        url,
        connections: share(i),
        duration,
        pipelining: 1,
        timeout: 10,
        sampleInt: 250,
        requests: scenario.requests(ctx, tally)
      }, (error, res) => (error ? fail(error) : ok(res)))
      instance.on("response", (_client, _status, _bytes, responseTime) => latencies.push(responseTime))
    })
  ))
  const result = {
    statusCodeStats: {},
    errors: results.reduce((a, r) => a + r.errors, 0),
    timeouts: results.reduce((a, r) => a + r.timeouts, 0),
    duration: Math.max(...results.map((r) => r.duration || 0))
  }
  for (const r of results) {
    for (const [k, v] of Object.entries(r.statusCodeStats)) {
      result.statusCodeStats[k] = { count: (result.statusCodeStats[k]?.count ?? 0) + v.count }
    }
  }
  const elapsed = (performance.now() - started) / 1000
  const heap = measure && heapProbes.length > 0
    ? (await Promise.all(heapProbes.map((p) => askProbe(p, "stop")))).reduce((a, b) => ({
      bytes: a.bytes + b.bytes,
      collections: a.collections + b.collections
    }))
    : undefined
  clearInterval(sampler)
  const after = sumStats()
  let databaseCpuS = 0
  if (database) {
    // Backends that started during the run count from zero; those that ended are missed (pools keep theirs).
    for (const pid of new Set([...dbBefore.keys(), ...databasePids(target.def.database)])) {
      const cpu = procStats(pid).cpuS
      if (Number.isFinite(cpu)) databaseCpuS += cpu - (dbBefore.get(pid) ?? 0)
    }
  }
  const client = process.cpuUsage(clientBefore)
  const busy = machineBusyS() - busyBefore
  const ours = otherPids.reduce((a, pid, i) => a + (procStats(pid).cpuS - othersBefore[i]), 0)
  const reconnects = connects - connectsBefore - connections
  const statusCounts = Object.fromEntries(Object.entries(result.statusCodeStats).map(([k, v]) => [k, v.count]))
  const total = Object.values(statusCounts).reduce((a, b) => a + b, 0)
  // An expected status whose answer failed the scenario's own check (replay: header and bytes) is unexpected.
  const expected = (statusCounts[scenario.expect] ?? 0) - tally.unexpected
  latencies.sort((a, b) => a - b)
  const seconds = result.duration || elapsed
  return {
    target: target.name,
    scenario: scenarioName,
    durationS: seconds,
    connections,
    responses: total,
    expectedStatus: scenario.expect,
    expectedResponses: expected,
    unexpectedResponses: total - expected,
    statusCounts,
    ...(tally.unexpected > 0 ? { failedCheck: tally.unexpected } : {}),
    ...(pids.length > 1
      ? {
        instances: pids.length,
        responsesPerInstance: results.map((r) => Object.values(r.statusCodeStats).reduce((a, v) => a + v.count, 0))
      }
      : {}),
    errors: result.errors,
    timeouts: result.timeouts,
    // Every request written, answered or not: those still in flight when the window ends are answered after it.
    requestsSent: results.reduce((a, r) => a + r.requests.sent, 0),
    // Connections the load generator had to open again because the server closed (or reset) one.
    reconnects,
    reconnectsPerResponse: total > 0 ? reconnects / total : NaN,
    rps: expected / seconds,
    latencyMs: {
      p50: percentile(latencies, 50),
      p90: percentile(latencies, 90),
      p99: percentile(latencies, 99),
      max: latencies[latencies.length - 1] ?? NaN,
      mean: latencies.reduce((a, b) => a + b, 0) / (latencies.length || 1)
    },
    peakRssMb: (peakReset ? after.hwmKb : Math.max(sampledRssKb, after.rssKb)) / 1024,
    peakRssSource: peakReset ? "VmHWM (reset at start)" : "VmRSS sampled every 200 ms",
    peakRssSinceStartMb: after.hwmKb / 1024,
    serverCpuS: after.cpuS - before.cpuS,
    serverCpuUsPerRequest: total > 0 ? ((after.cpuS - before.cpuS) * 1e6) / total : NaN,
    serverCpuPercent: ((after.cpuS - before.cpuS) / seconds) * 100,
    mainThreadCpuUsPerRequest: total > 0 ? ((after.mainCpuS - before.mainCpuS) * 1e6) / total : NaN,
    mainThreadCpuPercent: ((after.mainCpuS - before.mainCpuS) / seconds) * 100,
    // The main thread's JavaScript heap: bytes allocated per response, and the collections in the run.
    ...(heap !== undefined && total > 0
      ? { allocatedBytesPerRequest: heap.bytes / total, collections: heap.collections }
      : {}),
    ...(database
      ? {
        databaseCpuS,
        databaseCpuUsPerRequest: total > 0 ? (databaseCpuS * 1e6) / total : NaN,
        databaseCpuPercent: (databaseCpuS / seconds) * 100
      }
      : {}),
    loadGeneratorCpuPercent: ((client.user + client.system) / 1e6 / seconds) * 100,
    // Everything else on the machine (other users' processes), in % of one core: should be near 0.
    foreignCpuPercent:
      ((busy - (after.cpuS - before.cpuS) - databaseCpuS - (client.user + client.system) / 1e6 - ours) / seconds) *
      100,
    loadAverage1m: os.loadavg()[0]
  }
}

// ---- what a target stored: rows per table, read after it stopped (SQLite) or before its database goes

export const storedCounts = async (target) => {
  const queries = {
    subscriptions: "SELECT count(*) AS n FROM subscriptions",
    mail_outbox: "SELECT count(*) AS n FROM mail_outbox",
    mail_outbox_sent: "SELECT count(*) AS n FROM mail_outbox WHERE sent_at IS NOT NULL",
    transfers_approved: "SELECT count(*) AS n FROM transfers WHERE status = 'approved'",
    transfers_declined: "SELECT count(*) AS n FROM transfers WHERE status = 'declined'",
    transfers_pending: "SELECT count(*) AS n FROM transfers WHERE status = 'pending'",
    idempotency_keys: "SELECT count(*) AS n FROM idempotency_keys",
    // The service keeps which answer a key got (answer), the references the answer itself (response_status).
    idempotency_keys_open: `SELECT count(*) AS n FROM idempotency_keys WHERE ${
      target.def.app ? "answer" : "response_status"
    } IS NULL`
  }
  if (/^postgres/.test(target.databaseUrl) && target.def.database === "postgres") {
    return withPg(target.databaseUrl, async (c) => {
      const out = {}
      for (const [k, q] of Object.entries(queries)) out[k] = Number((await c.query(q)).rows[0].n)
      return out
    })
  }
  if (/^(mysql|mariadb):/.test(target.databaseUrl) && target.def.database === "mariadb") {
    return mariadbCounts(target.databaseUrl, queries)
  }
  const file = target.def.app ? target.databaseUrl.replace(/^sqlite:/, "") : join(target.dataDir, "ref.db")
  const db = new Database(file, { readonly: true, fileMustExist: true })
  try {
    return Object.fromEntries(Object.entries(queries).map(([k, q]) => [k, db.prepare(q).get().n]))
  } finally {
    db.close()
  }
}
