// Where the service's time goes: runs the Node app as `npm start` runs it, under
// `node --cpu-prof dist/node/main.mjs` (the bundle, built first), drives one scenario (approved transfers by
// default) with the benchmark's load, stops the app gracefully (so node writes the profile) and prints the top
// self-time functions and packages for the load window only (start-up and warm-up excluded). Locations are
// mapped back to the original files through the bundle's source map (bench/cpuprofile-summary.mjs).
//
//   node bench/profile.mjs [--scenario=approved] [--duration=10] [--connections=50] [--top=10] [--target=service]
//                          [--perf]
//
// The .cpuprofile (open it in Chrome DevTools > Performance, or speedscope) and a JSON summary are kept
// under bench/results/profiles/.
import { execFileSync, spawn } from "node:child_process"
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import os from "node:os"
import { join } from "node:path"
import { format, summarise } from "./cpuprofile-summary.mjs"
import {
  buildApp,
  createDatabase,
  dropDatabase,
  killAllSync,
  machineInfo,
  prepareTarget,
  root,
  runScenario,
  scenarios,
  serverDatabase,
  startSmtpSink,
  startTarget,
  startWebhookSink,
  targetDefinitions
} from "./lib/harness.mjs"

const args = process.argv.slice(2)
const opt = (name, fallback) => args.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? fallback
const scenario = opt("scenario", "approved")
const duration = Number(opt("duration", 10))
const connections = Number(opt("connections", 50))
const top = Number(opt("top", 10))
const targetName = opt("target", "service")
if (!scenarios[scenario]) {
  console.error(`unknown scenario ${scenario}`)
  process.exit(2)
}
const profiled = [
  "service",
  "service-pg",
  "service-mariadb",
  "service-hooks",
  "ref1",
  "ref2",
  "ref-pg",
  "ref2-pg",
  "ref-mariadb",
  "ref2-mariadb"
]
if (!profiled.includes(targetName)) {
  console.error(`--target: ${profiled.join(", ")} (a Node process; --cpu-prof is a node flag)`)
  process.exit(2)
}

// --perf: Linux perf instead of V8's profiler, the app run with --perf-basic-prof so that perf names its
// JavaScript frames. V8's sampler charges the kernel's work at the top JavaScript frame: on this kind of
// virtual machine, where a loopback write wakes the reader in the writer's system call, it put 24% of a 304's
// time in one SQLite read, and perf found 3% in all of SQLite.
const perf = args.includes("--perf")
const stamp = new Date().toISOString().replace(/[:.]/g, "-")
const outDir = join(root, "bench/results/profiles")
const profileDir = join(outDir, `${stamp}-${scenario}`)
mkdirSync(profileDir, { recursive: true })
const dataDir = join(os.tmpdir(), `paysub-profile-${process.pid}`)
mkdirSync(dataDir, { recursive: true })
for (const signal of ["SIGINT", "SIGTERM"]) process.once(signal, () => (killAllSync(), process.exit(130)))

const perfData = join(profileDir, "perf.data")
const perfRecord = (pid, seconds) =>
  new Promise((resolve, reject) => {
    const child = spawn("perf", [
      "record",
      "-F",
      "999",
      "-g",
      "-p",
      String(pid),
      "-o",
      perfData,
      "--",
      "sleep",
      String(seconds)
    ], {
      stdio: "ignore"
    })
    child.on("error", (e) => reject(new Error(`--perf needs Linux perf (apt-get install linux-perf): ${e.message}`)))
    child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`perf record exited with ${code}`))))
  })
const perfReport = (lines) =>
  [["dso", 8], ["dso,sym", lines]].map(([sort, n]) =>
    `by ${sort === "dso" ? "binary" : "function"}:\n${
      execFileSync("perf", ["report", "-i", perfData, "--no-children", "--sort", sort, "-g", "none", "--stdio"], {
        encoding: "utf8",
        maxBuffer: 64 * 2 ** 20,
        stdio: ["ignore", "pipe", "ignore"]
      }).split("\n").filter((l) => l.trim() !== "" && !l.startsWith("#")).slice(0, n).join("\n")
    }`
  ).join("\n\n")

// What --perf-basic-prof wrote: the symbol map perf report has read, and V8's logs in the app's directory.
const removePerfFiles = (pid) => {
  rmSync(`/tmp/perf-${pid}.map`, { force: true })
  for (const f of readdirSync(root).filter((f) => f.startsWith("isolate-") && f.endsWith(`-${pid}-v8.log`))) {
    rmSync(join(root, f))
  }
}

// The load window's part of the .cpuprofile the app wrote as it stopped, printed and kept as summary.json.
const summariseCpuProfile = (exit, run, from, to) => {
  const file = readdirSync(profileDir).find((f) => f.endsWith(".cpuprofile"))
  if (file === undefined) throw new Error(`no .cpuprofile written (the app exited with ${JSON.stringify(exit)})`)
  const profile = JSON.parse(readFileSync(join(profileDir, file), "utf8"))
  const summary = summarise(profile, { top, from, to, root })
  console.log(`\n${format(summary)}`)
  const summaryFile = join(profileDir, "summary.json")
  writeFileSync(
    summaryFile,
    `${
      JSON.stringify({ scenario, duration, connections, machine: machineInfo(), run, profile: file, summary }, null, 2)
    }\n`
  )
  console.log(
    `\nprofile: ${join(profileDir, file).replace(`${root}/`, "")}\nsummary: ${summaryFile.replace(`${root}/`, "")}`
  )
}

let sink
let hookSink
let target
let databaseUrl
try {
  buildApp()
  sink = await startSmtpSink()
  hookSink = targetDefinitions[targetName].webhooks ? await startWebhookSink() : undefined
  // service-pg and service-mariadb run on a throwaway database, as in the benchmark.
  const kind = targetDefinitions[targetName].database
  databaseUrl = serverDatabase(kind) ? await createDatabase(kind) : undefined
  target = await startTarget(targetName, {
    dataDir,
    smtpPort: sink.port,
    databaseUrl,
    webhookPort: hookSink?.port,
    extraNodeArgs: perf ? ["--perf-basic-prof"] : ["--cpu-prof", `--cpu-prof-dir=${profileDir}`]
  })
  const ctx = await prepareTarget(target, [scenario])
  console.log(`profile: ${target.def.label} pid ${target.pid}, warm-up 1 s, then ${scenario} for ${duration} s`)
  await runScenario(target, scenario, ctx, { duration: 1, connections, measure: false })
  const from = Number(process.hrtime.bigint() / 1000n)
  const recording = perf ? perfRecord(target.pid, duration) : undefined
  const run = await runScenario(target, scenario, ctx, { duration, connections, otherPids: [sink.pid] })
  const to = Number(process.hrtime.bigint() / 1000n)
  console.log(
    `load: ${Math.round(run.rps)} req/s, p50 ${run.latencyMs.p50.toFixed(1)} ms, p99 ${
      run.latencyMs.p99.toFixed(1)
    } ms, server CPU ${Math.round(run.serverCpuUsPerRequest)} us/request, ${run.reconnects} reconnects`
  )
  if (recording !== undefined) {
    await recording
    console.log(`\n${perfReport(top)}\nperf data: ${perfData.replace(`${root}/`, "")}`)
  }
  const pid = target.pid
  const exit = await target.stop(30_000)
  target = undefined
  if (perf) removePerfFiles(pid)
  else summariseCpuProfile(exit, run, from, to)
} finally {
  if (target !== undefined) await target.stop()
  if (databaseUrl !== undefined) await dropDatabase(databaseUrl).catch(() => {})
  sink?.stop()
  hookSink?.stop()
  killAllSync()
  rmSync(dataDir, { recursive: true, force: true })
}
