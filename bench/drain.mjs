// Delivery throughput and the drain after an outage, for the confirmation mails (bench/smtp-sink.mjs) and the
// webhooks (bench/webhook-sink.mjs) of one service (the service-hooks target: one webhook endpoint).
//
//   node bench/drain.mjs [--load=20] [--connections=32] [--outage=60] [--backlog=200] [--cpu-prof=DIR]
//
// 1. Load: --load seconds of signups and approved transfers, half each, over --connections connections; prints
//    the write rate, what was delivered during the load, and how long the rest took after it.
// 2. Outage: both sinks stop; --backlog signups and --backlog transfers are made; after --outage seconds the
//    sinks start again on the same ports; prints when 50%, 99% and 100% of each backlog had arrived, counted
//    from the sinks' return. Results are saved under bench/results/ (-drain.json).
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs"
import os from "node:os"
import { join } from "node:path"
import {
  buildApp,
  freePort,
  root,
  sleep,
  startSmtpSink,
  startTarget,
  startWebhookSink,
  transferBody
} from "./lib/harness.mjs"

const value = (name, fallback) =>
  Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? fallback)
const options = {
  loadS: value("load", 20),
  connections: value("connections", 32),
  outageS: value("outage", 60),
  backlog: value("backlog", 200)
}
// --cpu-prof=DIR: the service runs under node --cpu-prof, its profile written to DIR when it stops.
const profileDir = process.argv.find((a) => a.startsWith("--cpu-prof="))?.split("=")[1]

let sequence = 0
const write = (target, i) =>
  i % 2 === 0
    ? fetch(`${target.baseUrl}/subscribe`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        name: "Bench Reader",
        email: `r${Date.now().toString(36)}.${++sequence}@example.com`
      })
    })
    : fetch(`${target.baseUrl}/merchant/transfers/payment`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${target.apiKey}` },
      body: transferBody(`drain-${Date.now().toString(36)}-${++sequence}`)
    })

// Sends writes over `connections` loops until `until`, or `count` of them; answers how many of each got a 2xx.
const drive = async (target, { connections, until, count }) => {
  let sent = 0
  const ok = { subscribes: 0, transfers: 0 }
  const loop = async () => {
    while ((until === undefined || Date.now() < until) && (count === undefined || sent < count)) {
      const i = sent++
      const response = await write(target, i)
      await response.arrayBuffer()
      if (response.ok) ok[i % 2 === 0 ? "subscribes" : "transfers"]++
    }
  }
  await Promise.all(Array.from({ length: connections }, loop))
  return ok
}

// Polls the sinks until both reached their goals; answers the times (ms from `from`) of the given fractions.
const watch = async (counters, goals, from, fractions, timeoutMs) => {
  const times = counters.map(() => ({}))
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const counts = await Promise.all(counters.map((c) => c()))
    counts.forEach((n, i) => {
      for (const f of fractions) {
        if (times[i][f] === undefined && n >= Math.ceil(goals[i] * f)) times[i][f] = Date.now() - from
      }
    })
    if (counts.every((n, i) => n >= goals[i]) || Date.now() > deadline) return { times, counts }
    await sleep(100)
  }
}

const main = async () => {
  buildApp()
  const smtpPort = await freePort()
  const hookPort = await freePort()
  let smtp = await startSmtpSink(smtpPort)
  let hooks = await startWebhookSink(hookPort)
  const dataDir = mkdtempSync(join(os.tmpdir(), "paysub-drain-"))
  const target = await startTarget("service-hooks", {
    dataDir,
    smtpPort,
    webhookPort: hookPort,
    extraNodeArgs: profileDir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${profileDir}`]
  })
  const results = { options, at: new Date().toISOString() }
  try {
    // 1. Throughput under load.
    const started = Date.now()
    const made = await drive(target, { connections: options.connections, until: started + options.loadS * 1000 })
    const loadMs = Date.now() - started
    const duringLoad = { mails: await smtp.count(), webhooks: await hooks.count("distinct") }
    const after = await watch(
      [() => smtp.count(), () => hooks.count("distinct")],
      [made.subscribes, made.transfers],
      Date.now(),
      [1],
      120_000
    )
    const perSecond = (n) => Math.round(n / (loadMs / 1000))
    results.load = {
      seconds: loadMs / 1000,
      writesPerSecond: perSecond(made.subscribes + made.transfers),
      signupsPerSecond: perSecond(made.subscribes),
      transfersPerSecond: perSecond(made.transfers),
      mailsPerSecondDuringLoad: perSecond(duringLoad.mails),
      webhooksPerSecondDuringLoad: perSecond(duringLoad.webhooks),
      deliveredDuringLoad: duringLoad,
      made,
      restDeliveredAfterLoadMs: { mails: after.times[0][1], webhooks: after.times[1][1] }
    }
    console.log("load:", JSON.stringify(results.load))

    // 2. The outage.
    smtp.stop()
    hooks.stop()
    const down = Date.now()
    await drive(target, { connections: 16, count: options.backlog * 2 })
    await sleep(Math.max(0, down + options.outageS * 1000 - Date.now()))
    const restart = async (start, port) => {
      for (let i = 0;; i++) {
        try {
          return await start(port)
        } catch (e) {
          if (i > 20) throw e
          await sleep(100)
        }
      }
    }
    smtp = await restart(startSmtpSink, smtpPort)
    hooks = await restart(startWebhookSink, hookPort)
    const back = Date.now()
    const drained = await watch(
      [() => smtp.count(), () => hooks.count("distinct")],
      [options.backlog, options.backlog],
      back,
      [0.5, 0.99, 1],
      180_000
    )
    const seconds = (t) => (t === undefined ? "not reached" : `${(t / 1000).toFixed(1)} s`)
    results.outage = {
      seconds: (back - down) / 1000,
      mails: drained.times[0],
      webhooks: drained.times[1],
      counts: drained.counts
    }
    console.log(
      `outage of ${
        results.outage.seconds.toFixed(0)
      } s, ${options.backlog} mails and ${options.backlog} webhooks waiting;` +
        ` after the sinks' return: mails 50% ${seconds(drained.times[0][0.5])}, 99% ${
          seconds(drained.times[0][0.99])
        },` +
        ` 100% ${seconds(drained.times[0][1])}; webhooks 50% ${seconds(drained.times[1][0.5])}, 99% ${
          seconds(drained.times[1][0.99])
        }, 100% ${seconds(drained.times[1][1])}`
    )
  } finally {
    await target.stop()
    smtp.stop()
    hooks.stop()
  }
  const dir = join(root, "bench/results")
  mkdirSync(dir, { recursive: true })
  const file = join(dir, `${results.at.replace(/[:.]/g, "-")}-drain.json`)
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`)
  console.log(`results: ${file}`)
}

main().then(() => process.exit(0), (e) => {
  console.error(e)
  process.exit(1)
})
