// `npm run bench [-- --quick] [-- --deno] [-- --postgres] [-- --mariadb]`: the service against two references that do the
// same work at the same durability (bench/lib/reference.mjs), one server at a time, over several rounds.
// See bench/README.md for what is measured and how to read it.
//
//   --quick                 2 s per scenario, 1 round, short warm-up (a smoke test)
//   --deno                  also the Deno app (SQLite through node:sqlite)
//   --postgres              also the Node app on PostgreSQL (service-pg), its references (ref-pg: node:http + pg;
//                           ref2-pg: Fastify + pg) and two processes of the app on one database (service-pg-x2);
//                           a throwaway database per start, dropped after
//   --mariadb               also the Node app on MariaDB (service-mariadb) and its references (ref-mariadb: node:http
//                           + mysql2; ref2-mariadb: Fastify + mysql2); a throwaway database per start, dropped after
//   --scaleout              only service-pg-x2 of the PostgreSQL targets, with service-pg to compare it with
//   --duration=S --rounds=N --connections=C --warmup=S   override the defaults (10 s, 3, 50, 1 s)
//   --scenarios=a,b         a subset of approved,approvedIdempotent,replay,declined,notModified,subscribe
//   --targets=a,b           a subset of the targets the other flags chose (service, ref1, ref2, deno,
//                           service-pg, ref-pg, ref2-pg, service-pg-x2, service-mariadb, ref-mariadb, ref2-mariadb),
//                           or service-hooks: the service with one webhook endpoint (e.g. --targets=service,service-hooks --scenarios=approved), or baseline:
//                           the Node app of the checkout at BENCH_BASELINE, built there (a change against main;
//                           baseline-hooks, and baseline-pg with --postgres, baseline-mariadb with --mariadb, likewise)
//   --soak[=S]              instead of the rounds: the memory budget over S seconds (600) of every scenario in
//                           turn, on the Node app (and the Deno app with --deno): bench/soak.mjs
//   --large[=N]             instead of the rounds: the scenarios on a young database, then with N transfers
//                           (1,000,000) and N/2 subscribers written into it, and its export; SQLite, and
//                           PostgreSQL with --postgres (--duration 5, --connections 10), then the background
//                           jobs on backlogs written into it; --scenarios=a,b a subset (a partial run): bench/large.mjs
//   --pin                   every target on the first CPU, this process (the load generator) and the sinks on
//                           the others (taskset), so a webhook receiver does not share the service's core
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import os from "node:os"
import { join, relative } from "node:path"
import { denoStartCommand, nodeStartCommand } from "../scripts/start-commands.mjs"
import { compareConformance, runConformance } from "./lib/conformance.mjs"
import {
  buildApp,
  createDatabase,
  databasePids,
  dropAllDatabases,
  dropDatabase,
  killAllSync,
  machineInfo,
  median,
  pinProcess,
  postgresAvailable,
  prepareTarget,
  procStats,
  root,
  runScenario,
  scenarioOrder,
  scenarios,
  serverDatabase,
  sleep,
  startSmtpSink,
  startTarget,
  startWebhookSink,
  storedCounts,
  targetDefinitions,
  waitForQuiet
} from "./lib/harness.mjs"
import { mariadbAvailable, mariadbSettings } from "./lib/mariadb.mjs"

// ---- options

const argv = process.argv.slice(2)
const flag = (name) => argv.includes(`--${name}`)
const value = (name) => argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1]
const known = [
  "quick",
  "deno",
  "postgres",
  "mariadb",
  "scaleout",
  "duration",
  "rounds",
  "connections",
  "warmup",
  "scenarios",
  "targets",
  "pin",
  "soak",
  "large"
]
for (const a of argv) {
  if (!known.includes(a.replace(/^--/, "").split("=")[0])) {
    console.error(`unknown option ${a}; options: ${known.map((k) => `--${k}`).join(" ")}`)
    process.exit(2)
  }
}
if (argv.some((a) => a === "--soak" || a.startsWith("--soak="))) {
  const { soak } = await import("./soak.mjs")
  const results = await soak({
    seconds: Number(value("soak") ?? 600),
    deno: flag("deno"),
    connections: Number(value("connections") ?? 50),
    only: value("targets")?.split(",")
  })
  process.exit(results.every((r) => r.flat && r.withinBudget && r.unexpected === 0) ? 0 : 1)
}
if (argv.some((a) => a === "--large" || a.startsWith("--large="))) {
  const { large } = await import("./large.mjs")
  const passed = await large({
    transfers: Number(value("large") ?? 1_000_000),
    postgres: flag("postgres"),
    durationS: Number(value("duration") ?? 5),
    warmupS: Number(value("warmup") ?? 1),
    connections: Number(value("connections") ?? 10),
    rounds: Number(value("rounds") ?? 3),
    scenarios: value("scenarios")?.split(",")
  })
  process.exit(passed ? 0 : 1)
}
const quick = flag("quick")
const options = {
  quick,
  durationS: Number(value("duration") ?? (quick ? 2 : 10)),
  rounds: Number(value("rounds") ?? (quick ? 1 : 3)),
  connections: Number(value("connections") ?? 50),
  warmupS: Number(value("warmup") ?? (quick ? 0.5 : 1)),
  // Subscribe runs last whatever the order asked: the service goes on sending its mail after it.
  scenarios: (value("scenarios")?.split(",") ?? scenarioOrder).sort((a, b) =>
    (a === "subscribe") - (b === "subscribe")
  ),
  deno: flag("deno"),
  postgres: flag("postgres") || flag("scaleout"),
  scaleout: flag("scaleout"),
  mariadb: flag("mariadb"),
  targets: value("targets")?.split(","),
  pin: flag("pin")
}
if (options.pin && (os.availableParallelism?.() ?? os.cpus().length) < 2) {
  console.error("--pin needs at least two CPUs")
  process.exit(2)
}
for (const s of options.scenarios) {
  if (!scenarios[s]) {
    console.error(`unknown scenario ${s}`)
    process.exit(2)
  }
}
const targetNames = [
  "service",
  "ref1",
  "ref2",
  ...(options.deno ? ["deno"] : []),
  ...(options.postgres
    ? ["service-pg", ...(options.scaleout ? [] : ["ref-pg", "ref2-pg"]), "service-pg-x2", "baseline-pg"].filter((t) =>
      t !== "baseline-pg" || options.targets?.includes(t)
    )
    : []),
  ...(options.mariadb
    ? ["service-mariadb", "ref-mariadb", "ref2-mariadb", "baseline-mariadb"].filter((t) =>
      t !== "baseline-mariadb" || options.targets?.includes(t)
    )
    : []),
  ...["service-hooks", "service-1t", "service-hooks-1t", "baseline", "baseline-hooks"].filter((t) =>
    options.targets?.includes(t)
  )
].filter((t) => options.targets === undefined || options.targets.includes(t))
for (const t of options.targets ?? []) {
  if (!targetDefinitions[t]) {
    console.error(`unknown target ${t}`)
    process.exit(2)
  }
  if (!targetNames.includes(t)) {
    console.error(`target ${t} needs its flag (--deno, --postgres, --mariadb)`)
    process.exit(2)
  }
}
// The req/s ratios printed: each app against the SQLite references; the app on PostgreSQL against ref-pg and
// ref2-pg too, on MariaDB against ref-mariadb and ref2-mariadb; two instances against one.
const ratioPairs = [
  ...["service", "deno", "service-pg", "service-mariadb"].flatMap((app) => ["ref1", "ref2"].map((ref) => [app, ref])),
  ["service-pg", "ref-pg"],
  ["service-pg", "ref2-pg"],
  ["service-mariadb", "ref-mariadb"],
  ["service-mariadb", "ref2-mariadb"],
  ["service-mariadb", "baseline-mariadb"],
  ["service-pg-x2", "service-pg"],
  ["service-pg-x2", "ref-pg"],
  ["service-hooks", "service"],
  ["service-1t", "service"],
  ["service-hooks-1t", "service-1t"],
  ["service-hooks-1t", "service-hooks"],
  ["service", "baseline"],
  ["service-hooks", "baseline-hooks"],
  ["baseline-hooks", "baseline"],
  ["service-pg", "baseline-pg"]
].filter(([a, b]) => targetNames.includes(a) && targetNames.includes(b))
const ratioNames = ratioPairs.map(([a, b]) => `${a}/${b}`)
// A target with a webhook endpoint and its twin without one: the CPU per delivered event.
const eventPairs = [["service-hooks", "service"], ["service-hooks-1t", "service-1t"], ["baseline-hooks", "baseline"]]
  .filter(([a, b]) => targetNames.includes(a) && targetNames.includes(b))

// ---- cleanup on every exit path

let cleaningUp = false
const dataDirs = new Set()
const cleanup = async () => {
  if (cleaningUp) return
  cleaningUp = true
  killAllSync()
  for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true })
  await dropAllDatabases()
}
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.once(signal, () => {
    console.error(`\n${signal}: stopping every server and dropping the throwaway databases`)
    cleanup().finally(() => process.exit(130))
  })
}
// Bounded in time whatever happens: twice the planned load time plus five minutes, then everything stops.
// (A subscribe run may add up to MailCatchUpMaxS while the mail catches up.)
const MailCatchUpMaxS = 30
const plannedS = options.rounds * targetNames.length * options.scenarios.length *
    (options.durationS + options.warmupS) +
  (options.scenarios.includes("subscribe") || targetNames.some((t) => targetDefinitions[t].webhooks)
    ? options.rounds * targetNames.length * options.scenarios.length * MailCatchUpMaxS
    : 0)
const watchdog = setTimeout(() => {
  console.error(`\nwatchdog: the run took more than ${Math.round(2 * plannedS + 300)} s; stopping`)
  cleanup().finally(() => process.exit(124))
}, (2 * plannedS + 300) * 1000)
watchdog.unref()

// What a sink received after a run: how many more arrived once the load stopped, and how long after its end
// the last one did (the count still for 1.5 s, or MailCatchUpMaxS).
// With `cpu` (the target's CPU seconds), also what the target spent until the last arrival: its CPU with nothing
// to do but deliver.
const catchUp = async (sink, cpu = () => NaN) => {
  const end = Date.now()
  const cpuAtEnd = cpu()
  const atEnd = await sink.count()
  let last = atEnd
  let lastAt = end
  let cpuAtLast = cpuAtEnd
  while (Date.now() - lastAt < 1500 && Date.now() - end < MailCatchUpMaxS * 1000) {
    await sleep(100)
    const count = await sink.count()
    if (count !== last) [last, lastAt, cpuAtLast] = [count, Date.now(), cpu()]
  }
  return { after: last - atEnd, seconds: (lastAt - end) / 1000, cpuS: cpuAtLast - cpuAtEnd }
}
// CPU seconds (user + system, every thread) of a target's processes.
const cpuOf = (target) => (target.pids ?? [target.pid]).reduce((a, pid) => a + procStats(pid).cpuS, 0)
// The database server's processes' CPU seconds (PostgreSQL or MariaDB: `kind`), by pid; and what they spent
// since (a PostgreSQL backend that ended is missed).
const databaseCpu = (kind) => new Map(databasePids(kind).map((pid) => [pid, procStats(pid).cpuS]))
const databaseCpuSince = (kind, before) =>
  [...databaseCpu(kind)].reduce((a, [pid, cpu]) => a + (Number.isFinite(cpu) ? cpu - (before.get(pid) ?? 0) : 0), 0)

// ---- formatting

const fmtInt = (n) => (Number.isFinite(n) ? Math.round(n).toLocaleString("en-US") : "-")
const fmtMs = (x) => (!Number.isFinite(x) ? "-" : x < 10 ? x.toFixed(2) : x < 100 ? x.toFixed(1) : x.toFixed(0))
const fmtKb = (bytes) => (Number.isFinite(bytes) ? (bytes / 1024).toFixed(1) : "-")
const fmtRatio = (x) => (!Number.isFinite(x) ? "-" : x < 0.1 ? x.toFixed(3) : x.toFixed(2))
const spread = (xs, fmt) => {
  const v = xs.filter(Number.isFinite)
  if (v.length === 0) return "-"
  if (v.length === 1) return fmt(v[0])
  return `${fmt(median(v))} [${fmt(Math.min(...v))}-${fmt(Math.max(...v))}]`
}
const label = (t) => targetDefinitions[t].label
const line = (cells, widths) => cells.map((c, i) => String(c).padEnd(widths[i])).join("  ").trimEnd()

// ---- the run

const results = {
  startedAt: new Date().toISOString(),
  options,
  machine: machineInfo(),
  notes: [
    "One server process at a time; autocannon runs in the harness process on the same machine (loopback).",
    "Scenario order per server start: approved, approvedIdempotent, replay, declined, notModified, (health,) subscribe " +
    "(the service's outbox worker keeps sending mail after subscribe, so it runs last).",
    "rps counts only responses with the expected status; latency percentiles cover every response.",
    "allocatedBytesPerRequest (Node targets): bytes allocated on the main thread's JavaScript heap over the run, per " +
    "response: the heap's growth plus what each collection freed (bench/lib/heap-probe.mjs).",
    "peakRssMb: VmHWM of the server process, reset at the start of each measured scenario (clear_refs).",
    "Every target sends its confirmation mails (the references through bench/lib/outbox.mjs).",
    "cpuUsPerSignupWithMail: the target's CPU (all threads, /proc/PID/stat) from the warm-up's start until its " +
    "mail stopped arriving, per signup request written in the warm-up and the run (those in flight at their end are " +
    "answered after it); databaseCpuUsPerSignupWithMail: the database server's (PostgreSQL, MariaDB) in the same window.",
    "cpuUsPerEvent (a target with a webhook endpoint against its twin without): the same window's CPU less what " +
    "the twin spent per request, per webhook delivered in the window. webhookCatchUpCpuUsPerEvent: the target's " +
    "CPU from the run's end to the last delivery after it, per delivery after it (deliveries alone).",
    ...(options.pin ? ["--pin: every target on CPU 0, the load generator and the sinks on the others (taskset)."] : []),
    `The Node app (service, service-pg, service-mariadb) runs as npm start runs it: node ${
      [...nodeStartCommand().flags, relative(root, nodeStartCommand().entry)].join(" ")
    } (the esbuild bundle scripts/build.mjs makes at the start of the run).`,
    ...(options.deno
      ? [
        `The Deno app runs as npm run start:deno runs it: ${
          denoStartCommand().map((a) => a.startsWith(root) ? relative(root, a) : a).join(" ")
        }.`
      ]
      : []),
    ...(targetNames.includes("service-pg-x2")
      ? [
        `service-pg-x2: two processes of the bundle on one PostgreSQL database, each sent half the connections by ` +
        `its own autocannon instance (both in the harness process); req/s, CPU and peak RSS are summed. All ` +
        `processes (both app instances, PostgreSQL, the load generator) share the machine's ${
          os.availableParallelism?.() ?? os.cpus().length
        } cores.`
      ]
      : [])
  ],
  targets: Object.fromEntries(targetNames.map((t) => [t, targetDefinitions[t].label])),
  scenarios: Object.fromEntries(options.scenarios.map((s) => [s, scenarios[s].title])),
  starts: [],
  conformance: {},
  runs: [],
  ratiosByRound: [],
  summary: {}
}

// At most this long, over the whole run, waiting for other processes to leave the CPUs alone.
let quietBudgetMs = options.quick ? 5_000 : 45_000

const main = async () => {
  if (options.postgres && !(await postgresAvailable())) {
    throw new Error("--postgres: no PostgreSQL answers (PGHOST/PGPORT/PGUSER/PGDATABASE or POSTGRES_ADMIN_URL)")
  }
  if (options.mariadb) {
    if (!(await mariadbAvailable())) throw new Error("--mariadb: no MariaDB answers (MARIADB_ADMIN_URL)")
    const m = results.machine.mariadb = await mariadbSettings()
    console.log(
      `bench: MariaDB ${m.version}, innodb_flush_log_at_trx_commit=${m.innodbFlushLogAtTrxCommit}${
        m.innodbFlushLogAtTrxCommit === 1 ? " (every commit flushed)" : " (!! commits are not durable)"
      }, binary log ${m.logBin === 1 ? `on, sync_binlog=${m.syncBinlog}` : "off"}`
    )
  }
  const m = results.machine
  console.log(
    `bench: ${m.cpuModel} x${m.cpuCount}, ${m.totalMemoryGiB} GiB, ${m.platform}, node ${m.node}, SQLite ${m.sqlite}`
  )
  console.log(
    `bench: targets ${targetNames.join(", ")}; scenarios ${
      options.scenarios.join(", ")
    }; ${options.rounds} round(s) x ` +
      `${options.durationS} s (+${options.warmupS} s warm-up), ${options.connections} connections; planned load time ` +
      `${Math.round(plannedS)} s`
  )
  if (targetNames.includes("service-pg-x2")) {
    console.log(
      `bench: service-pg-x2 runs two app processes on one database, half the connections each; note that all ` +
        `processes (both instances, PostgreSQL, the load generator) share the machine's ${m.cpuCount} cores`
    )
  }
  // The Node app runs as `npm start` runs it: the bundle, built once here (not inside any start-up time).
  if (targetNames.some((t) => targetDefinitions[t].bundle)) buildApp()
  // Before the sinks start, so that they inherit it.
  if (options.pin) pinProcess(process.pid, `1-${m.cpuCount - 1}`)
  const sink = await startSmtpSink()
  const hookSink = targetNames.some((t) => targetDefinitions[t].webhooks) ? await startWebhookSink() : undefined
  try {
    for (let round = 1; round <= options.rounds; round++) {
      console.log(`\n-- round ${round}/${options.rounds}`)
      const roundRuns = {}
      for (const name of targetNames) {
        const dataDir = mkdtempSync(join(os.tmpdir(), `paysub-bench-${name}-`))
        dataDirs.add(dataDir)
        const kind = targetDefinitions[name].database
        const databaseUrl = serverDatabase(kind) ? await createDatabase(kind) : undefined
        const startedAt = performance.now()
        let target
        const start = { round, target: name }
        try {
          target = await startTarget(name, {
            dataDir,
            smtpPort: sink.port,
            databaseUrl,
            webhookPort: hookSink?.port,
            cpus: options.pin ? "0" : undefined
          })
          start.startupMs = Math.round(performance.now() - startedAt)
          const commit = /synchronous_commit=(\w+)/.exec(target.output())?.[1]
          if (commit !== undefined) start.synchronousCommit = commit
          const flush = /innodb_flush_log_at_trx_commit=(\w+)/.exec(target.output())?.[1]
          if (flush !== undefined) start.innodbFlushLogAtTrxCommit = flush
          const ctx = await prepareTarget(target, options.scenarios)
          start.idleRssMb = procStats(target.pid).rssKb / 1024
          if (round === 1) {
            const answers = await runConformance(target, ctx)
            results.conformance[name] = { answers }
          }
          const usesServer = serverDatabase(kind)
          for (const scenario of options.scenarios) {
            let quiet
            // The window for the CPU per signup with its mail, and per delivered event: from the warm-up's start
            // until the sinks stop receiving.
            const windowStart = {
              cpuS: cpuOf(target),
              databaseCpu: usesServer ? databaseCpu(kind) : undefined,
              mails: await sink.count(),
              hooks: await hookSink?.count()
            }
            let warmedUp = 0
            if (options.warmupS > 0) {
              const warm = await runScenario(target, scenario, ctx, {
                duration: options.warmupS,
                connections: options.connections,
                measure: false,
                otherPids: [sink.pid]
              })
              warmedUp = warm.requestsSent
              // A busy machine (someone else's processes) during the warm-up: wait a little for it to calm.
              if (warm.foreignCpuPercent > 25 && quietBudgetMs > 0) {
                quiet = await waitForQuiet({
                  ownPids: [...(target.pids ?? [target.pid]), sink.pid, ...databasePids(kind)],
                  maxMs: Math.min(10_000, quietBudgetMs)
                })
                quietBudgetMs -= quiet.waitedMs
              }
            }
            const mailsBefore = await sink.count()
            const hooksBefore = await hookSink?.count()
            const run = await runScenario(target, scenario, ctx, {
              duration: options.durationS,
              connections: options.connections,
              otherPids: [sink.pid]
            })
            run.round = round
            if (quiet !== undefined) run.waitedForQuietMachine = quiet
            run.mailsDeliveredDuringRun = (await sink.count()) - mailsBefore
            if (targetDefinitions[name].webhooks) {
              run.webhooksDeliveredDuringRun = (await hookSink.count()) - hooksBefore
            }
            if (scenario === "subscribe") {
              const mail = await catchUp(sink)
              Object.assign(run, {
                mailsPerSignupDuringRun: run.mailsDeliveredDuringRun / run.expectedResponses,
                mailBacklogAfterRun: mail.after,
                mailCatchUpS: mail.seconds
              })
            }
            if (targetDefinitions[name].webhooks) {
              const hooks = await catchUp(hookSink, () => cpuOf(target))
              Object.assign(run, {
                webhookBacklogAfterRun: hooks.after,
                webhookCatchUpS: hooks.seconds,
                webhookCatchUpCpuUsPerEvent: hooks.after > 0 ? (hooks.cpuS * 1e6) / hooks.after : NaN
              })
            }
            const requests = warmedUp + run.requestsSent
            run.window = {
              cpuS: cpuOf(target) - windowStart.cpuS,
              requests,
              mails: (await sink.count()) - windowStart.mails,
              ...(usesServer ? { databaseCpuS: databaseCpuSince(kind, windowStart.databaseCpu) } : {}),
              ...(hookSink !== undefined ? { webhooks: (await hookSink.count()) - windowStart.hooks } : {})
            }
            // Per request written: one still in flight when the warm-up or the run ended was answered after it,
            // and its signup mailed.
            if (scenario === "subscribe") {
              run.cpuUsPerSignupWithMail = (run.window.cpuS * 1e6) / requests
              if (usesServer) run.databaseCpuUsPerSignupWithMail = (run.window.databaseCpuS * 1e6) / requests
            }
            results.runs.push(run)
            ;(roundRuns[scenario] ??= {})[name] = run
            const odd = (run.unexpectedResponses > 0 ? `  !! ${run.unexpectedResponses} unexpected answers` : "") +
              (run.errors > 0 ? `  ${run.errors} socket errors` : "") +
              (run.reconnects > 0 ? `  ${run.reconnects} reconnects` : "") +
              (run.responsesPerInstance ? `  (responses per instance ${run.responsesPerInstance.join(" + ")})` : "") +
              (run.foreignCpuPercent > 10 ? `  !! other processes used ${fmtInt(run.foreignCpuPercent)}% CPU` : "") +
              (quiet !== undefined ? `  (waited ${(quiet.waitedMs / 1000).toFixed(1)} s for a quieter machine)` : "")
            console.log(
              `  ${name.padEnd(13)} ${scenario.padEnd(18)} ${fmtInt(run.rps).padStart(7)} req/s  p50 ${
                fmtMs(run.latencyMs.p50)
              } ms  p99 ${fmtMs(run.latencyMs.p99)} ms  RSS ${fmtInt(run.peakRssMb)} MB  CPU ${
                fmtInt(run.serverCpuUsPerRequest)
              } us/req (main thread ${fmtInt(run.mainThreadCpuUsPerRequest)}${
                run.allocatedBytesPerRequest !== undefined
                  ? `, allocates ${fmtKb(run.allocatedBytesPerRequest)} KB/req`
                  : ""
              }; server ${fmtInt(run.serverCpuPercent)}%, main thread ${fmtInt(run.mainThreadCpuPercent)}%, load gen ${
                fmtInt(run.loadGeneratorCpuPercent)
              }%${
                run.databaseCpuUsPerRequest !== undefined
                  ? `, ${kind} ${fmtInt(run.databaseCpuUsPerRequest)} us/req ${fmtInt(run.databaseCpuPercent)}%`
                  : ""
              })${
                run.mailsPerSignupDuringRun !== undefined
                  ? `  mails ${run.mailsDeliveredDuringRun} (${
                    run.mailsPerSignupDuringRun.toFixed(2)
                  } of the signups; the rest ${
                    run.mailBacklogAfterRun === 0
                      ? "none"
                      : `${run.mailBacklogAfterRun} in ${run.mailCatchUpS.toFixed(1)} s`
                  }); CPU ${fmtInt(run.cpuUsPerSignupWithMail)} us per signup with its mail`
                  : ""
              }${
                run.webhooksDeliveredDuringRun !== undefined
                  ? `  webhooks ${run.webhooksDeliveredDuringRun} (the rest ${
                    run.webhookBacklogAfterRun === 0
                      ? "none"
                      : `${run.webhookBacklogAfterRun} in ${run.webhookCatchUpS.toFixed(1)} s, ${
                        fmtInt(run.webhookCatchUpCpuUsPerEvent)
                      } us of CPU each`
                  })`
                  : ""
              }${odd}`
            )
          }
        } finally {
          if (target !== undefined) {
            start.exit = await target.stop()
            try {
              start.stored = await storedCounts(target)
            } catch (e) {
              start.storedError = String(e)
            }
          }
          results.starts.push(start)
          if (databaseUrl !== undefined) await dropDatabase(databaseUrl).catch(() => {})
          rmSync(dataDir, { recursive: true, force: true })
          dataDirs.delete(dataDir)
        }
      }
      // Ratios within this round: each app against each reference, per scenario; and the CPU per delivered
      // event of a target with a webhook endpoint, against its twin without one.
      const ratios = { round, rps: {}, mainCpu: {}, cpuUsPerEvent: {} }
      for (const scenario of options.scenarios) {
        const rs = roundRuns[scenario] ?? {}
        for (const [a, b] of ratioPairs) {
          if (!rs[a] || !rs[b]) continue
          ;(ratios.rps[scenario] ??= {})[`${a}/${b}`] = rs[a].rps / rs[b].rps
          ;(ratios.mainCpu[scenario] ??= {})[`${a}/${b}`] = rs[a].mainThreadCpuUsPerRequest /
            rs[b].mainThreadCpuUsPerRequest
        }
        for (const [a, b] of eventPairs) {
          const [hooks, twin] = [rs[a]?.window, rs[b]?.window]
          if (hooks === undefined || twin === undefined || !(hooks.webhooks > 0)) continue
          const extraS = hooks.cpuS - (twin.cpuS / twin.requests) * hooks.requests
          ;(ratios.cpuUsPerEvent[scenario] ??= {})[`${a}/${b}`] = (extraS * 1e6) / hooks.webhooks
        }
        const text = [
          ...Object.entries(ratios.rps[scenario] ?? {}).map(([k, v]) => `${k} ${fmtRatio(v)}`),
          ...Object.entries(ratios.cpuUsPerEvent[scenario] ?? {}).map(([k, v]) =>
            `${k} CPU per delivered event ${fmtInt(v)} us`
          )
        ].join(", ")
        console.log(`  round ${round} ${scenario}: ${text}`)
      }
      results.ratiosByRound.push(ratios)
    }
    // The baseline: the service, or (--targets without it) the first app that answered.
    const baseline = targetNames.find((t) => targetDefinitions[t].app && results.conformance[t])
    if (baseline !== undefined) {
      results.conformanceBaseline = baseline
      for (const name of targetNames.filter((t) => t !== baseline)) {
        const c = results.conformance[name]
        if (c) Object.assign(c, compareConformance(results.conformance[baseline].answers, c.answers))
      }
    }
  } finally {
    sink.stop()
    hookSink?.stop()
  }
}

const summarise = () => {
  for (const scenario of options.scenarios) {
    const s = { title: scenarios[scenario].title, targets: {}, ratios: {} }
    for (const name of targetNames) {
      const runs = results.runs.filter((r) => r.scenario === scenario && r.target === name)
      const stat = (f) => {
        const xs = runs.map(f)
        return { median: median(xs), min: Math.min(...xs), max: Math.max(...xs), values: xs }
      }
      s.targets[name] = {
        rps: stat((r) => r.rps),
        p50Ms: stat((r) => r.latencyMs.p50),
        p99Ms: stat((r) => r.latencyMs.p99),
        peakRssMb: stat((r) => r.peakRssMb),
        serverCpuUsPerRequest: stat((r) => r.serverCpuUsPerRequest),
        mainThreadCpuUsPerRequest: stat((r) => r.mainThreadCpuUsPerRequest),
        allocatedBytesPerRequest: stat((r) => r.allocatedBytesPerRequest ?? NaN),
        databaseCpuUsPerRequest: stat((r) => r.databaseCpuUsPerRequest ?? NaN),
        loadGeneratorCpuPercent: stat((r) => r.loadGeneratorCpuPercent),
        reconnectsPerResponse: stat((r) => Math.max(0, r.reconnectsPerResponse)),
        foreignCpuPercent: stat((r) => r.foreignCpuPercent),
        unexpectedResponses: runs.reduce((a, r) => a + r.unexpectedResponses, 0),
        ...(targetDefinitions[name].webhooks
          ? { webhookCatchUpCpuUsPerEvent: stat((r) => r.webhookCatchUpCpuUsPerEvent) }
          : {}),
        ...(scenario === "subscribe"
          ? {
            cpuUsPerSignupWithMail: stat((r) => r.cpuUsPerSignupWithMail),
            databaseCpuUsPerSignupWithMail: stat((r) => r.databaseCpuUsPerSignupWithMail ?? NaN),
            mailsPerSignupDuringRun: stat((r) => r.mailsPerSignupDuringRun),
            mailCatchUpS: stat((r) => r.mailCatchUpS)
          }
          : {})
      }
    }
    const overRounds = (key, pair) => {
      const xs = results.ratiosByRound.map((r) => r[key][scenario]?.[pair]).filter(Number.isFinite)
      return { median: median(xs), min: Math.min(...xs), max: Math.max(...xs), values: xs }
    }
    for (const pair of ratioNames) s.ratios[pair] = overRounds("rps", pair)
    s.mainCpuRatios = Object.fromEntries(ratioNames.map((pair) => [pair, overRounds("mainCpu", pair)]))
    if (eventPairs.length > 0) {
      s.cpuUsPerEvent = Object.fromEntries(
        eventPairs.map(([a, b]) => [`${a}/${b}`, overRounds("cpuUsPerEvent", `${a}/${b}`)])
      )
    }
    results.summary[scenario] = s
  }
}

const printTable = () => {
  const widths = [targetNames.includes("service-pg-x2") ? 37 : 27, 24, 21, 21, 16, 11, 12, 10, 12]
  const out = []
  out.push("")
  out.push(
    `== Results: median [min-max] over ${options.rounds} round(s); ${options.durationS} s per scenario, ${options.connections} connections, loopback; fsync ${results.machine.fsyncMicros} us`
  )
  for (const scenario of options.scenarios) {
    const s = results.summary[scenario]
    out.push("")
    out.push(`${scenario}: ${s.title}`)
    out.push(
      line(
        [
          "target",
          "req/s",
          "p50 ms",
          "p99 ms",
          "peak RSS MB",
          "CPU us/req",
          "main us/req",
          "reconn/req",
          "alloc KB/req"
        ],
        widths
      )
    )
    for (const name of targetNames) {
      const t = s.targets[name]
      out.push(
        line([
          label(name),
          spread(t.rps.values, fmtInt),
          spread(t.p50Ms.values, fmtMs),
          spread(t.p99Ms.values, fmtMs),
          spread(t.peakRssMb.values, fmtInt),
          fmtInt(t.serverCpuUsPerRequest.median),
          fmtInt(t.mainThreadCpuUsPerRequest.median),
          fmtRatio(t.reconnectsPerResponse.median),
          fmtKb(t.allocatedBytesPerRequest.median)
        ], widths) + (t.unexpectedResponses > 0 ? `  (!! ${t.unexpectedResponses} unexpected answers)` : "")
      )
    }
    for (const [pair, r] of Object.entries(s.ratios)) {
      out.push(line([`req/s ratio ${pair}`, spread(r.values, fmtRatio)], widths))
    }
    // The main thread's CPU per request, the ratio within each round: it moves less between runs than req/s.
    for (const [pair, r] of Object.entries(s.mainCpuRatios)) {
      if (r.values.length > 0) out.push(line([`main-thread CPU ratio ${pair}`, spread(r.values, fmtRatio)], widths))
    }
    for (const [pair, r] of Object.entries(s.cpuUsPerEvent ?? {})) {
      if (r.values.length > 0) out.push(`CPU per delivered event ${pair}: ${spread(r.values, fmtInt)} us (all threads)`)
    }
    for (const name of targetNames) {
      const values = s.targets[name].webhookCatchUpCpuUsPerEvent?.values.filter(Number.isFinite) ?? []
      if (values.length > 0) out.push(`CPU per event delivered after the run, ${name}: ${spread(values, fmtInt)} us`)
    }
    if (scenario === "subscribe") {
      out.push("with its mail: CPU per signup (all threads, until the mail stopped), mails during the run per signup")
      for (const name of targetNames) {
        const t = s.targets[name]
        out.push(
          `  ${label(name).padEnd(widths[0] - 2)}  ${spread(t.cpuUsPerSignupWithMail.values, fmtInt)} us${
            t.databaseCpuUsPerSignupWithMail.values.some(Number.isFinite)
              ? ` (+ ${targetDefinitions[name].database} ${spread(t.databaseCpuUsPerSignupWithMail.values, fmtInt)} us)`
              : ""
          }  ${spread(t.mailsPerSignupDuringRun.values, fmtRatio)} (the rest within ${
            spread(t.mailCatchUpS.values, (x) => x.toFixed(1))
          } s)`
        )
      }
    }
    const busy = Object.entries(s.targets).filter(([, t]) => t.foreignCpuPercent.max > 10)
    for (const [name, t] of busy) {
      out.push(
        `  !! other processes on the machine used up to ${fmtInt(t.foreignCpuPercent.max)}% of a core during ${name}`
      )
    }
  }
  if (targetNames.includes("service-pg-x2")) {
    out.push("")
    out.push(
      `service-pg-x2: two processes on one database, req/s/CPU/RSS summed; all processes share the machine's ${results.machine.cpuCount} cores.`
    )
  }
  const baseline = results.conformanceBaseline
  const conformance = Object.entries(results.conformance).filter(([name, c]) => name !== baseline && c.differences)
  if (conformance.length > 0) {
    out.push("")
    out.push(
      `conformance vs ${baseline} (${
        Object.keys(results.conformance[baseline].answers).length
      } requests: status, error code/type/param, body shape, headers, replayed bytes):`
    )
    for (const [name, c] of conformance) {
      out.push(
        `  ${label(name)}: ${c.differences.length === 0 ? "same" : `${c.differences.length} difference(s)`}; ` +
          `${c.messageDifferences} message text(s) differ`
      )
      for (const d of c.differences.slice(0, 10)) {
        out.push(`    ${d.case}: ${d.field} ${baseline}=${d.baseline} ${name}=${d.target}`)
      }
    }
  }
  const stored = results.starts.filter((s) => s.stored)
  if (stored.length > 0) {
    out.push("")
    out.push(
      "rows stored per server start (an outbox row per new subscription, +1 for the conformance re-subscribe; no transfer left pending):"
    )
    for (const s of stored) {
      const st = s.stored
      const ok = st.mail_outbox >= st.subscriptions && st.transfers_pending === 0
      out.push(
        `  round ${s.round} ${
          s.target.padEnd(13)
        } subscriptions ${st.subscriptions}, outbox ${st.mail_outbox} (sent ${st.mail_outbox_sent}), ` +
          `transfers approved ${st.transfers_approved}, declined ${st.transfers_declined}, pending ${st.transfers_pending}, ` +
          `idempotency keys ${st.idempotency_keys} (open ${st.idempotency_keys_open})${ok ? "" : "  !!"}${
            st.idempotency_keys_open > 0 ? "  (open keys: requests cut off when a window ended)" : ""
          }`
      )
    }
  }
  console.log(out.join("\n"))
}

let failed
try {
  await main()
} catch (e) {
  failed = e
  console.error(`\nbench failed: ${e?.stack ?? e}`)
} finally {
  await cleanup()
}
results.finishedAt = new Date().toISOString()
if (failed) results.error = String(failed?.stack ?? failed)
if (results.runs.length > 0) {
  summarise()
  printTable()
}
const dir = join(root, "bench/results")
mkdirSync(dir, { recursive: true })
const file = join(dir, `${results.startedAt.replace(/[:.]/g, "-")}${options.quick ? "-quick" : ""}.json`)
writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`)
console.log(`\nresults: ${file.replace(`${root}/`, "")}`)
clearTimeout(watchdog)
process.exit(failed ? 1 : 0)
