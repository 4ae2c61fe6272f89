// `npm test`: type checks (tsc, deno check), lint (formatting included), the Node app's bundle
// (scripts/build.mjs, what the black-box suites start), the OpenAPI document's two linters, every suite on the
// embedded SQLite, the core and node:sqlite tests under Deno, the black-box suites against the Deno app, on
// memory:, then against PostgreSQL and MariaDB. Each step is a separate command, and every step runs even after
// one failed; the summary at the end names each failed step and test, and the exit status is non-zero if any did.
//
// PostgreSQL (PGHOST/PGPORT, default 127.0.0.1:5432, user postgres, trust auth) and MariaDB (MYSQL_HOST/MYSQL_PORT,
// default 127.0.0.1:3306, user root, no password) are optional on a laptop: without one, its suites are skipped
// with a line saying so. With CI=true both are required.
import { spawnSync } from "node:child_process"
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { createConnection } from "node:net"
import { availableParallelism, tmpdir } from "node:os"
import { join, relative } from "node:path"

// The failed tests of a vitest step, as "file › describe › test", from its JSON report (none if it wrote none:
// vitest itself failed before any test ran).
const failedTests = (report) => {
  if (!existsSync(report)) return []
  const { testResults } = JSON.parse(readFileSync(report, "utf8"))
  return testResults.flatMap((file) => {
    const where = relative(process.cwd(), file.name)
    const failed = file.assertionResults.filter((t) => t.status === "failed")
    return failed.length === 0 && file.status === "failed"
      ? [`${where} (${file.message ?? "the file failed to run"})`]
      : failed.map((t) =>
        // The test's name, then the first lines of its failure (CI's log keeps only the end of the run).
        [
          [where, ...t.ancestorTitles, t.title].join(" › "),
          ...(t.failureMessages ?? []).join("\n").split("\n").slice(0, 6).map((line) => `    ${line}`)
        ].join("\n")
      )
  })
}

const coreFiles = readdirSync("core", { recursive: true }).filter((f) => f.endsWith(".ts")).map((f) => `core/${f}`)

const pgHost = process.env.PGHOST ?? "127.0.0.1"
const pgPort = Number(process.env.PGPORT ?? 5432)
const reachable = (host, port, timeout) =>
  new Promise((resolve) => {
    const socket = createConnection({ host, port, timeout })
    socket.once("connect", () => (socket.destroy(), resolve(true)))
    socket.once("error", () => resolve(false))
    socket.once("timeout", () => (socket.destroy(), resolve(false)))
  })
const postgresUp = await reachable(pgHost, pgPort, 2000)
if (!postgresUp && process.env.CI === "true") {
  console.error(`=== CI=true but no PostgreSQL answers at ${pgHost}:${pgPort}: the PostgreSQL suites cannot run.`)
  process.exit(1)
}
// Redis (REDIS_URL, default 127.0.0.1:6379) holds the shared rate limits in one scale-out case: optional on a
// laptop (that case is skipped, and said below), required with CI=true (the case then runs and fails).
const redis = new URL(process.env.REDIS_URL ?? "redis://127.0.0.1:6379")
const redisHost = redis.hostname
const redisPort = Number(redis.port || 6379)
const pgEnv = { POSTGRES_TESTS: postgresUp ? "on" : "off" }
const mysqlHost = process.env.MYSQL_HOST ?? "127.0.0.1"
const mysqlPort = Number(process.env.MYSQL_PORT ?? 3306)
const mariadbUp = await reachable(mysqlHost, mysqlPort, 2000)
if (!mariadbUp && process.env.CI === "true") {
  console.error(`=== CI=true but no MariaDB answers at ${mysqlHost}:${mysqlPort}: the MariaDB suites cannot run.`)
  process.exit(1)
}
const mariadbEnv = { MARIADB_TESTS: mariadbUp ? "on" : "off" }
// The browser suites (test/browser) drive Debian's Chromium; without it they skip (and say so below), unless
// CI=true: then they fail (.ci/run installs it).
const chromium = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium"
const chromiumMissing = !existsSync(chromium) && process.env.CI !== "true"
// The black-box suites start the app's bundle (dist/, `npm run build`): built once by the step below, so the
// vitest runs skip their own build (test/support/globalSetup.ts).
const built = { PAYSUB_BUNDLE_BUILT: "1" }

// Which suites run on which runtime and database (docs/testing.md, "What runs where"). Every suite runs on Node
// with SQLite. In-process suites start no app, so the runtime under test does not change them: they run once.
const inProcess = [
  "test/http/DecodeErrors.test.ts",
  "test/http/JsonDepth.test.ts",
  "test/http/KnownBodies.test.ts",
  "test/http/PerRequest.test.ts"
]
// Black-box suites about HTTP itself (framing, hosts, upgrades, decoding, limits, fuzzing) and the clients built
// from the document: the database behind the pipeline does not change an answer of theirs, so they run on each
// runtime (SQLite) but not again on PostgreSQL and MariaDB, whose stores the contracts and the other black-box
// suites cover.
const storageBlind = [
  "test/http/BadHost.http.test.ts",
  "test/http/Fuzz.http.test.ts",
  "test/http/HttpSemantics.limits.http.test.ts",
  "test/http/RealSenders.http.test.ts",
  "test/http/Upgrades.http.test.ts",
  "test/http/Client.http.test.ts",
  "test/client/CodeSamples.http.test.ts",
  "test/client/GeneratedClient.http.test.ts"
]
const exclude = (files) => files.flatMap((file) => ["--exclude", file])
// vitest runs one test file at a time on two cores (its default is one fewer than the cores); most files wait on
// an app process, a mail or a browser, so two at a time on such a machine. Not on PostgreSQL and MariaDB: two
// files of several app instances each, with their pools, once left a CLI unable to connect to the shared server.
const workers = availableParallelism() <= 2 ? ["--maxWorkers=2"] : []

const steps = [
  ["type check", "tsc", ["--noEmit", "-p", "."], {}],
  ["lint and format check", "eslint", ["."], {}],
  ["type check for Deno (core and the Deno app)", "deno", ["check", "apps/deno/main.ts", ...coreFiles], {}],
  ["build (the bundles the black-box suites start)", "node", ["scripts/build.mjs"], {}],
  // The OpenAPI document as the service serves it, linted by the two common linters (0 errors, 0 warnings), and
  // the client types generated from it (test/client/paysub.d.ts) checked up to date.
  ["OpenAPI document, and the generated client's types up to date", "tsx", ["scripts/openapi.ts", "--check"], {}],
  ["OpenAPI lint: Spectral (spectral:oas)", "spectral", [
    "lint",
    "--fail-severity",
    "warn",
    "-r",
    ".spectral.yaml",
    "dist/openapi.json"
  ], {}],
  ["OpenAPI lint: Redocly (recommended)", "redocly", ["lint", "--config", "redocly.yaml", "dist/openapi.json"], {}],
  ["tests (SQLite; PostgreSQL and MariaDB storage contracts)", "vitest", [
    "run",
    "--exclude",
    "test/faults/**",
    ...workers,
    ...process.argv.slice(2)
  ], {
    ...pgEnv,
    ...mariadbEnv,
    ...built
  }],
  // The fault suites one file at a time: each loads the machine with a throwaway database, an app and 16 clients,
  // and measures how soon the service recovers.
  ["fault suites (throwaway databases, one file at a time)", "vitest", ["run", "test/faults", "--maxWorkers=1"], {
    ...pgEnv,
    ...mariadbEnv,
    ...built
  }],
  // Under Deno: the core's property tests (the core runs unchanged there) and the storage contracts on
  // Deno's node:sqlite, the driver the Deno app stores through.
  ["core and node:sqlite storage tests under Deno", "deno", [
    "run",
    "-A",
    "node_modules/vitest/vitest.mjs",
    "run",
    "test/core",
    "test/storage/NodeSqliteStore.test.ts"
  ], {}],
  ["black-box suites on the Deno app", "vitest", [
    "run",
    "test/http",
    "test/client",
    "test/reliability",
    "test/browser",
    ...exclude(inProcess),
    ...workers
  ], {
    ...built,
    APP_RUNTIME: "deno"
  }],
  // DATABASE_URL=memory: the suites that need no other process's view of the app's data (the others create
  // clients with the CLI, read the database's rows, or restart the app: docs/decisions/0045).
  ["black-box suites in memory (DATABASE_URL=memory:)", "vitest", [
    "run",
    "test/http/HttpSemantics.http.test.ts",
    "test/http/StartConfig.http.test.ts",
    "test/http/Console.http.test.ts",
    "test/http/ConsoleCharts.http.test.ts",
    ...workers
  ], {
    ...built,
    TEST_DATABASE: "memory"
  }],
  ...(postgresUp
    ? [["black-box suites on PostgreSQL", "vitest", [
      "run",
      "test/http",
      "test/client",
      "test/reliability",
      "test/scaleout",
      "test/browser/Console.browser.test.ts",
      ...exclude([...inProcess, ...storageBlind]),
      "--maxWorkers=1"
    ], {
      ...pgEnv,
      ...built,
      TEST_DATABASE: "postgres"
    }]]
    : []),
  ...(mariadbUp
    ? [["black-box suites on MariaDB", "vitest", [
      "run",
      "test/http",
      "test/client",
      "test/reliability",
      "test/scaleout",
      ...exclude([...inProcess, ...storageBlind]),
      "--maxWorkers=1"
    ], {
      ...mariadbEnv,
      ...built,
      TEST_DATABASE: "mariadb"
    }]]
    : [])
]

// Every step runs, whatever failed before it, so that one run shows every failure; the summary at the end names
// each failed step and, for the vitest steps, each failed test (from vitest's JSON report).
const reports = mkdtempSync(join(tmpdir(), "paysub-test-"))
const failures = []
const timings = []
for (const [index, [name, command, args, env]] of steps.entries()) {
  const report = join(reports, `step-${index}.json`)
  const vitest = command === "vitest" || args.includes("node_modules/vitest/vitest.mjs")
  const fullArgs = vitest ? [...args, "--reporter=default", "--reporter=json", `--outputFile.json=${report}`] : args
  console.log(`\n=== ${name}: ${command} ${args.join(" ")}`)
  const bin = command === "node" ? process.execPath : `node_modules/.bin/${command}`
  const started = Date.now()
  const result = spawnSync(bin, fullArgs, { stdio: "inherit", env: { ...process.env, ...env } })
  timings.push([name, Date.now() - started])
  if (result.status !== 0) {
    console.error(`\n=== ${name} failed (exit ${result.status ?? result.signal})`)
    failures.push([name, result.status ?? result.signal, vitest ? failedTests(report) : []])
  }
}
rmSync(reports, { recursive: true, force: true })

if (!postgresUp) {
  console.log(
    `\n=== SKIPPED: the PostgreSQL suites (storage contracts, black-box suites, scale-out): no server at ${pgHost}:${pgPort}`
  )
}
if (!mariadbUp) {
  console.log(
    `\n=== SKIPPED: the MariaDB suites (storage contracts, black-box suites, scale-out): no server at ${mysqlHost}:${mysqlPort}`
  )
}
if ((postgresUp || mariadbUp) && !(await reachable(redisHost, redisPort, 1000))) {
  console.log(`\n=== SKIPPED: the shared rate limits in Redis (scale-out): no Redis at ${redisHost}:${redisPort}`)
}
if (chromiumMissing) {
  console.log(`\n=== SKIPPED: the browser suites (test/browser): no Chromium at ${chromium} (apt-get install chromium)`)
}
const minutes = (ms) => `${(ms / 60_000).toFixed(1)} min`
console.log(`\n=== time per step\n${timings.map(([name, ms]) => `  ${minutes(ms).padStart(9)}  ${name}`).join("\n")}`)
console.log(`  ${minutes(timings.reduce((sum, [, ms]) => sum + ms, 0)).padStart(9)}  in all`)
if (failures.length > 0) {
  console.error(`\n=== ${failures.length} of ${steps.length} steps failed:`)
  for (const [name, exit, tests] of failures) {
    console.error(`  ${name} (exit ${exit})`)
    for (const test of tests) console.error(`    ${test}`)
  }
  process.exit(1)
}
console.log("\n=== all steps passed")
