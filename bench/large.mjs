// `npm run bench -- --large[=N] [--postgres]`: what the data's size costs (issue #44, decision 0053). Per database
// (SQLite, and PostgreSQL with --postgres): the Node app on a young database runs the scenarios; it stops, N
// transfers (1,000,000) and N/2 subscribers are written straight into its database (bench/lib/large-data.mjs);
// it starts again and runs the same scenarios, then exports the feed as CSV. Then each background job in turn:
// the app stops, the job's backlog is written in (N/10 expired pending signups, N/10 expired idempotency keys,
// N/100 unknown transfers), and the app starts again, which runs the job at once. A side client
// (bench/healthz-probe.mjs) sends /healthz every 10 ms throughout, and the balance too during the export.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import os from "node:os"
import { join } from "node:path"
import {
  buildApp,
  createDatabase,
  dropAllDatabases,
  dropDatabase,
  freePort,
  killAllSync,
  machineInfo,
  median,
  percentile,
  prepareTarget,
  procStats,
  root,
  runScenario,
  startProbe,
  startSmtpSink,
  startTarget,
  transferBody
} from "./lib/harness.mjs"
import { askProbe } from "./lib/heap-probe.mjs"
import {
  jobNames,
  RecipientMerchants,
  seededTransferId,
  seedJobPostgres,
  seedJobSqlite,
  seedPostgres,
  seedSqlite
} from "./lib/large-data.mjs"

export const targets = { service: "sqlite", "service-pg": "postgres" }
// Subscribe last: the outbox worker goes on mailing after it. `--scenarios` runs a subset (a partial run).
const allScenarios = [
  "approved",
  "declined",
  "replay",
  "notModified",
  "balance",
  "transfersPage",
  "pendingSubscribers",
  "subscribe"
]
let scenarioNames = allScenarios
const ProbeEveryMs = 10
const AdminKey = "bench-admin-key-0123456789"
// Issue #44's targets.
const MaxRatio = 1.2
const MaxBalanceP99Ms = 10
const MaxHealthzP99Ms = 50
const MaxExportGrowthMb = 64
// Each job's backlog for N transfers.
const jobRowsFor = (transfers) => ({
  purge: Math.floor(transfers / 10),
  prune: Math.floor(transfers / 10),
  reconcile: Math.floor(transfers / 100)
})
// The reconciler's batch (ReconcileBatch, core/payments/Reconciler.ts): it logs each transfer, not its claims.
const ReconcileBatch = 8
const JobTimeoutMs = 10 * 60_000

const p99 = (xs) => percentile([...xs].sort((a, b) => a - b), 99)
const fmt = (x) => (!Number.isFinite(x) ? "-" : x < 10 ? x.toFixed(2) : x < 100 ? x.toFixed(1) : x.toFixed(0))

// Each scenario `options.rounds` times in a row (after a warm-up; subscribe still last, since the outbox worker goes
// on mailing after it), and per scenario the median of its rounds: one 5 s run's p99 moves by a quarter from one
// run to the next.
const phase = async (target, ctx, probe, options) => {
  const rounds = Object.fromEntries(scenarioNames.map((s) => [s, []]))
  for (const scenario of scenarioNames) {
    for (let round = 1; round <= options.rounds; round++) {
      rounds[scenario].push(await phaseRun(target, ctx, probe, options, scenario, round))
    }
  }
  const mid = (xs) => median(xs.filter((x) => x !== undefined))
  return Object.fromEntries(
    Object.entries(rounds).map(([scenario, rs]) => [scenario, {
      p50Ms: mid(rs.map((r) => r.p50Ms)),
      p99Ms: mid(rs.map((r) => r.p99Ms)),
      rps: mid(rs.map((r) => r.rps)),
      mainThreadCpuUsPerRequest: mid(rs.map((r) => r.mainThreadCpuUsPerRequest)),
      ...(rs[0].databaseCpuUsPerRequest === undefined
        ? {}
        : { databaseCpuUsPerRequest: mid(rs.map((r) => r.databaseCpuUsPerRequest)) }),
      unexpectedResponses: rs.reduce((n, r) => n + r.unexpectedResponses, 0),
      foreignCpuPercent: Math.max(...rs.map((r) => r.foreignCpuPercent)),
      healthz: {
        count: rs.reduce((n, r) => n + r.healthz.count, 0),
        p99Ms: mid(rs.map((r) => r.healthz.p99Ms)),
        maxMs: Math.max(...rs.map((r) => r.healthz.maxMs)),
        late: rs.reduce((n, r) => n + r.healthz.late, 0)
      },
      rounds: rs
    }])
  )
}

// One run of a scenario (after a warm-up before its first), with the probe's latencies of the same window.
const phaseRun = async (target, ctx, probe, options, scenario, round) => {
  if (round === 1) await runScenario(target, scenario, ctx, { ...options, duration: options.warmupS, measure: false })
  await probe.take()
  const run = await runScenario(target, scenario, ctx, { ...options, duration: options.durationS })
  const { byPath, late } = await probe.take()
  const healthz = byPath["/healthz"] ?? []
  const result = {
    p50Ms: run.latencyMs.p50,
    p99Ms: run.latencyMs.p99,
    rps: run.rps,
    mainThreadCpuUsPerRequest: run.mainThreadCpuUsPerRequest,
    ...(run.databaseCpuUsPerRequest === undefined ? {} : { databaseCpuUsPerRequest: run.databaseCpuUsPerRequest }),
    unexpectedResponses: run.unexpectedResponses,
    foreignCpuPercent: run.foreignCpuPercent,
    healthz: { count: healthz.length, p99Ms: p99(healthz), maxMs: Math.max(...healthz), late }
  }
  console.log(
    `    ${round} ${scenario.padEnd(19)} p99 ${fmt(run.latencyMs.p99).padStart(6)} ms  ${
      Math.round(run.rps).toString().padStart(6)
    } req/s  main ${Math.round(run.mainThreadCpuUsPerRequest)} us/req${
      run.databaseCpuUsPerRequest === undefined ? "" : ` + database ${Math.round(run.databaseCpuUsPerRequest)}`
    }  /healthz p99 ${fmt(p99(healthz))} ms (${healthz.length})${
      run.unexpectedResponses > 0 ? `  !! ${run.unexpectedResponses} unexpected answers` : ""
    }  others ${Math.round(run.foreignCpuPercent)}% CPU`
  )
  return result
}

// The default feed as CSV, alone, the probe asking /healthz and the balance; the app's RSS every 10 ms.
const exportFeed = async (target, ctx) => {
  const probe = startProbe(target.baseUrl, ProbeEveryMs, [
    { path: "/healthz" },
    { path: "/merchant/balance", headers: { authorization: `Bearer ${ctx.apiKey}` } }
  ])
  try {
    await new Promise((r) => setTimeout(r, 500))
    await probe.take()
    const before = procStats(target.pid).rssKb / 1024
    let peak = before
    const sampler = setInterval(() => (peak = Math.max(peak, procStats(target.pid).rssKb / 1024)), 10)
    const started = performance.now()
    const res = await fetch(`${target.baseUrl}/subscriptions?feed=default`, {
      headers: { accept: "text/csv", authorization: `Bearer ${AdminKey}` }
    })
    let bytes = 0
    let lines = 0
    for await (const chunk of res.body) {
      bytes += chunk.length
      for (const b of chunk) if (b === 10) lines++
    }
    const ms = performance.now() - started
    clearInterval(sampler)
    const { byPath, late } = await probe.take()
    const [healthz, balance] = [byPath["/healthz"] ?? [], byPath["/merchant/balance"] ?? []]
    return {
      status: res.status,
      rows: lines - 1,
      mb: bytes / 1e6,
      ms,
      rssBeforeMb: before,
      rssGrowthMb: peak - before,
      healthz: { count: healthz.length, p99Ms: p99(healthz), maxMs: Math.max(...healthz), late },
      balance: { count: balance.length, p99Ms: p99(balance), maxMs: Math.max(...balance) }
    }
  } finally {
    probe.stop()
  }
}

// What the app logs (LOG_FORMAT=json) when a job's pass is over: the purge and the pruner one line per pass, with
// the rows deleted, the batches and the milliseconds; the reconciler one line per transfer. Resolves with
// { rows, batches, ms } once the backlog of `count` rows is worked through.
const jobWatch = (job, count) => {
  let rest = ""
  let reconciled = 0
  let first
  let resolve
  const done = new Promise((r) => (resolve = r))
  const onLine = (line) => {
    if (!line.startsWith("{")) return
    let entry
    try {
      entry = JSON.parse(line)
    } catch {
      return
    }
    const [message, fields] = Array.isArray(entry.message) ? entry.message : [entry.message, {}]
    if (job === "purge" && message === "expired pending signups purged") {
      resolve({ rows: fields.count, batches: fields.batches, ms: fields.ms })
    } else if (job === "prune" && message === "expired idempotency keys pruned") {
      resolve({ rows: fields.deleted, batches: fields.batches, ms: fields.ms })
    } else if (job === "reconcile" && message === "transfer reconciled") {
      const at = Date.parse(entry.timestamp)
      first ??= at
      if (++reconciled === count) {
        resolve({ rows: reconciled, batches: Math.ceil(reconciled / ReconcileBatch), ms: at - first })
      }
    }
  }
  const onOutput = (chunk) => {
    const lines = (rest + chunk).split("\n")
    rest = lines.pop()
    for (const line of lines) onLine(line)
  }
  return { onOutput, done }
}

// One job on the large database: its backlog written in while the app is stopped, then the app started again
// with the probe already sending (requests before the app listens are refused, not timed); RSS every 10 ms from
// the process's start until the job logs its end.
const runJob = async (name, job, count, startOptions, started) => {
  const port = await freePort()
  const probe = startProbe(`http://127.0.0.1:${port}`, ProbeEveryMs)
  const watch = jobWatch(job, count)
  let pid
  let peak = 0
  const sampler = setInterval(() => {
    if (pid !== undefined) peak = Math.max(peak, procStats(pid).rssKb / 1024 || 0)
  }, 10)
  try {
    const spawnedAt = performance.now()
    const target = await startTarget(name, {
      ...startOptions,
      port,
      onSpawn: (p) => (pid = p),
      onOutput: watch.onOutput
    })
    started(target)
    const readyMs = performance.now() - spawnedAt
    const rssReadyMb = procStats(target.pid).rssKb / 1024
    // The event loop's delays from here on (the app's start-up, before it answered, is not the job's).
    await askProbe(target.heapProbe, "loop")
    let timer
    const outcome = await Promise.race([
      watch.done,
      new Promise((_, fail) => {
        timer = setTimeout(() => fail(new Error(`${name}: the ${job} job did not end within 10 minutes`)), JobTimeoutMs)
      })
    ]).finally(() => clearTimeout(timer))
    const doneMs = performance.now() - spawnedAt
    const loop = await askProbe(target.heapProbe, "loop")
    const rssEndMb = procStats(target.pid).rssKb / 1024
    const { byPath, failed, late } = await probe.take()
    const healthz = byPath["/healthz"] ?? []
    return {
      ...outcome,
      readyMs: Math.round(readyMs),
      doneMs: Math.round(doneMs),
      rssReadyMb,
      rssPeakMb: peak,
      rssEndMb,
      rssGrowthMb: peak - rssReadyMb,
      loopDelayMs: { max: loop.maxMs, p99: loop.p99Ms },
      healthz: { count: healthz.length, p99Ms: p99(healthz), maxMs: Math.max(...healthz), late, refused: failed }
    }
  } finally {
    clearInterval(sampler)
    probe.stop()
  }
}

const dataDirs = new Set()
const largeOne = async (name, sink, options) => {
  const kind = targets[name]
  const dataDir = mkdtempSync(join(os.tmpdir(), `paysub-large-${name}-`))
  dataDirs.add(dataDir)
  const databaseUrl = kind === "postgres" ? await createDatabase("postgres") : undefined
  const env = { ADMIN_API_KEY: AdminKey }
  const result = { target: name, database: kind }
  let target
  let probe
  try {
    target = await startTarget(name, { dataDir, smtpPort: sink.port, databaseUrl, env })
    const ctx = { ...(await prepareTarget(target, scenarioNames)), adminKey: AdminKey }
    // A full page of pending subscribers on the young database too: the page compared is the same size.
    for (let i = 0; i < 101; i++) {
      const res = await fetch(`${target.baseUrl}/subscribe`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: `name=Young+${i}&email=young.${i}%40example.com`
      })
      await res.arrayBuffer()
      if (res.status !== 200) throw new Error(`${name}: a signup answered ${res.status}`)
    }
    // The seeded recipient merchants on the young database too, a transfer each: the balance compared lists the
    // same merchants (the scenarios pay m-42 only), so its answer is the same size.
    for (let i = 0; i < RecipientMerchants; i++) {
      const res = await fetch(`${target.baseUrl}/merchant/transfers/payment`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${target.apiKey}` },
        body: transferBody(`young-merchant-${i}`).replace("\"merchant_id\":\"m-42\"", `"merchant_id":"m-${i}"`)
      })
      await res.arrayBuffer()
      if (res.status !== 201) throw new Error(`${name}: a transfer to m-${i} answered ${res.status}`)
    }
    console.log(`  ${name}: young database`)
    probe = startProbe(target.baseUrl, ProbeEveryMs)
    result.young = await phase(target, ctx, probe, options)
    probe.stop()
    await target.stop()

    const seedStarted = performance.now()
    const size = { transfers: options.transfers, subscribers: options.subscribers }
    if (kind === "postgres") await seedPostgres(databaseUrl, size)
    else seedSqlite(join(dataDir, "paysub.db"), size)
    result.seedS = (performance.now() - seedStarted) / 1000
    console.log(
      `  ${name}: seeded ${options.transfers} transfers and ${options.subscribers} subscribers in ${
        result.seedS.toFixed(1)
      } s`
    )
    const startedAt = performance.now()
    target = await startTarget(name, { dataDir, smtpPort: sink.port, databaseUrl, env, apiKey: target.apiKey })
    result.largeStartupMs = Math.round(performance.now() - startedAt)
    // The list's page from the middle of the year: the rows newer than it are passed by the index, not read.
    ctx.pageAfter = seededTransferId(Math.ceil(options.transfers / 2))
    console.log(`  ${name}: large database (started in ${result.largeStartupMs} ms)`)
    probe = startProbe(target.baseUrl, ProbeEveryMs)
    result.large = await phase(target, ctx, probe, options)
    probe.stop()
    result.export = await exportFeed(target, ctx)
    const e = result.export
    console.log(
      `    export              ${e.rows} rows, ${e.mb.toFixed(1)} MB in ${(e.ms / 1000).toFixed(1)} s, RSS +${
        e.rssGrowthMb.toFixed(0)
      } MB; /healthz p99 ${fmt(e.healthz.p99Ms)} ms (${e.healthz.count}), balance p99 ${
        fmt(e.balance.p99Ms)
      } ms (${e.balance.count})`
    )
    result.jobs = {}
    const counts = jobRowsFor(options.transfers)
    for (const job of jobNames) {
      await target.stop()
      target = undefined
      const seedStarted = performance.now()
      if (kind === "postgres") await seedJobPostgres(databaseUrl, job, counts[job])
      else seedJobSqlite(join(dataDir, "paysub.db"), job, counts[job])
      const seedS = (performance.now() - seedStarted) / 1000
      const startOptions = {
        dataDir,
        smtpPort: sink.port,
        databaseUrl,
        env: { ...env, LOG_FORMAT: "json", BENCH_LOOP_DELAY: "on" },
        apiKey: ctx.apiKey
      }
      const j = {
        seeded: counts[job],
        seedS,
        ...(await runJob(name, job, counts[job], startOptions, (t) => (target = t)))
      }
      result.jobs[job] = j
      console.log(
        `    ${job.padEnd(19)} ${j.rows} rows in ${j.batches} batches, ${(j.ms / 1000).toFixed(1)} s (ended ${
          ((j.doneMs - j.readyMs) / 1000).toFixed(1)
        } s after the app answered); RSS ${j.rssReadyMb.toFixed(0)} MB at start, peak +${
          j.rssGrowthMb.toFixed(0)
        } MB; event loop delayed at most ${fmt(j.loopDelayMs.max)} ms; /healthz p99 ${
          fmt(j.healthz.p99Ms)
        } ms (${j.healthz.count})`
      )
    }
    result.verdict = verdict(result)
    return result
  } finally {
    probe?.stop()
    await target?.stop()
    if (databaseUrl !== undefined) await dropDatabase(databaseUrl).catch(() => {})
    rmSync(dataDir, { recursive: true, force: true })
    dataDirs.delete(dataDir)
  }
}

// Issue #44's targets against one database's figures.
const verdict = ({ young, large, export: e, jobs }) => {
  const scenarios = Object.fromEntries(
    scenarioNames.map((s) => {
      const ratio = large[s].p99Ms / young[s].p99Ms
      return [s, { ratio, pass: ratio <= MaxRatio }]
    })
  )
  const healthzP99Ms = Math.max(...Object.values(large).map((r) => r.healthz.p99Ms), e.healthz.p99Ms)
  return {
    scenarios,
    foreignCpuPercentMax: Math.max(
      ...[...Object.values(young), ...Object.values(large)].map((r) => r.foreignCpuPercent)
    ),
    balanceP99Ms: large.balance?.p99Ms ?? NaN,
    balancePass: large.balance === undefined || large.balance.p99Ms < MaxBalanceP99Ms,
    healthzP99Ms,
    healthzPass: healthzP99Ms < MaxHealthzP99Ms,
    exportPass: e.status === 200 && e.rssGrowthMb < MaxExportGrowthMb && e.healthz.p99Ms < MaxHealthzP99Ms &&
      e.balance.p99Ms < MaxHealthzP99Ms,
    // Each job: its whole backlog, /healthz answered within the bound while it ran, memory as for the export.
    jobsPass: Object.values(jobs).every((j) =>
      j.rows === j.seeded && j.healthz.p99Ms < MaxHealthzP99Ms && j.rssGrowthMb < MaxExportGrowthMb
    )
  }
}

const report = (results) => {
  for (const r of results) {
    console.log(
      `\n${r.target} (${r.database}): p99 ms young / large, ratio (target <= ${MaxRatio}); main-thread us/req young / ` +
        `large; /healthz p99 young / large`
    )
    for (const s of scenarioNames) {
      const v = r.verdict.scenarios[s]
      console.log(
        `  ${s.padEnd(19)} ${fmt(r.young[s].p99Ms).padStart(6)} / ${fmt(r.large[s].p99Ms).padStart(6)}  ${
          v.ratio.toFixed(2)
        } ${v.pass ? "ok" : "!! over"}  ${Math.round(r.young[s].mainThreadCpuUsPerRequest)} / ${
          Math.round(r.large[s].mainThreadCpuUsPerRequest)
        }  /healthz ${fmt(r.young[s].healthz.p99Ms)} / ${fmt(r.large[s].healthz.p99Ms)}`
      )
    }
    const v = r.verdict
    console.log(
      `  balance p99 ${fmt(v.balanceP99Ms)} ms (< ${MaxBalanceP99Ms}: ${v.balancePass ? "ok" : "!! over"}); ` +
        `/healthz p99 at most ${fmt(v.healthzP99Ms)} ms (< ${MaxHealthzP99Ms}: ${v.healthzPass ? "ok" : "!! over"}); ` +
        `export ${v.exportPass ? "ok" : "!! over"}; jobs ${v.jobsPass ? "ok" : "!! over"}; seeding ${
          r.seedS.toFixed(1)
        } s; other processes up to ${Math.round(v.foreignCpuPercentMax)}% of a core`
    )
  }
}

export const large = async ({ transfers, postgres, durationS, warmupS, connections, rounds, scenarios }) => {
  if (scenarios !== undefined) scenarioNames = allScenarios.filter((s) => scenarios.includes(s))
  const partial = scenarioNames.length < allScenarios.length
  const names = ["service", ...(postgres ? ["service-pg"] : [])]
  const options = {
    transfers,
    subscribers: Math.floor(transfers / 2),
    durationS,
    warmupS,
    connections,
    rounds,
    scenarios: scenarioNames
  }
  const results = {
    startedAt: new Date().toISOString(),
    options,
    machine: machineInfo(),
    notes: [
      "Per database: the scenarios on a young database, then on the same database with the rows written straight " +
      "into it (bench/lib/large-data.mjs) and the app started again; p99 of every response (autocannon); /healthz " +
      `sent every ${ProbeEveryMs} ms by bench/healthz-probe.mjs (another process), timed from when it was due.`
    ],
    databases: []
  }
  const stop = () => {
    killAllSync()
    for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true })
    dropAllDatabases().finally(() => process.exit(130))
  }
  process.once("SIGINT", stop)
  process.once("SIGTERM", stop)
  console.log(
    `bench --large: ${names.join(", ")}; ${transfers} transfers, ${options.subscribers} subscribers; ` +
      `${durationS} s per scenario (+${warmupS} s warm-up), ${rounds} rounds (the median of each), ${connections} connections`
  )
  buildApp()
  const sink = await startSmtpSink()
  try {
    for (const name of names) results.databases.push(await largeOne(name, sink, options))
  } finally {
    sink.stop()
    killAllSync()
    await dropAllDatabases()
  }
  results.finishedAt = new Date().toISOString()
  report(results.databases)
  const dir = join(root, "bench/results")
  mkdirSync(dir, { recursive: true })
  const file = join(
    dir,
    `large-${results.startedAt.replace(/[:.]/g, "-")}${transfers === 1_000_000 ? "" : `-${transfers}`}${
      partial ? "-partial" : ""
    }.json`
  )
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`)
  console.log(`\nresults: ${file.replace(`${root}/`, "")}`)
  return results.databases.every((r) =>
    Object.values(r.verdict.scenarios).every((s) => s.pass) && r.verdict.balancePass && r.verdict.healthzPass &&
    r.verdict.exportPass && r.verdict.jobsPass
  )
}
