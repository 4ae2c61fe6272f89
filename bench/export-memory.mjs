// The CSV export of a large feed against the built Node app on SQLite: seeds N subscribers straight into the
// database file, then reads GET /subscriptions as CSV while /healthz is asked every 20 ms, and prints the app's
// RSS before and at its peak, and the /healthz times. `node bench/export-memory.mjs [N] [--slow] [-- node flags]`
// (--slow: the client pauses 5 ms after every chunk it reads). Run `npm run build` first.
import Database from "better-sqlite3"
import { spawn } from "node:child_process"
import { mkdtempSync, readFileSync } from "node:fs"
import { get } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { nodeStartCommand } from "../scripts/start-commands.mjs"

const args = process.argv.slice(2)
const dash = args.indexOf("--")
const extraFlags = dash === -1 ? [] : args.slice(dash + 1)
const own = dash === -1 ? args : args.slice(0, dash)
const count = Number(own.find((a) => /^\d+$/.test(a)) ?? 500_000)
const slow = own.includes("--slow")
const port = 20_000 + Math.floor(Math.random() * 20_000)
const dir = mkdtempSync(join(tmpdir(), "paysub-export-"))
const adminKey = "bench-admin-key-0123456789"
const { entry, flags } = nodeStartCommand()
const env = {
  ...process.env,
  PORT: String(port),
  BASE_URL: `http://127.0.0.1:${port}`,
  DATABASE_URL: `sqlite:${join(dir, "paysub.db")}`,
  ADMIN_API_KEY: adminKey,
  SUBSCRIBE_RATE_LIMIT: "0",
  MERCHANT_RATE_LIMIT: "0"
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const start = async () => {
  const child = spawn(process.execPath, [...flags, ...extraFlags, entry], { env, stdio: ["ignore", "pipe", "inherit"] })
  let out = ""
  child.stdout.on("data", (c) => (out += c))
  for (let i = 0; i < 300; i++) {
    if (await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.ok, () => false)) return { child, out: () => out }
    await sleep(100)
  }
  throw new Error("the app did not start")
}
const rss = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))[1]) / 1024
const percentile = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]

// The app migrates the database; the subscribers are then written beside it (WAL), as one statement.
const { child, out } = await start()
const db = new Database(join(dir, "paysub.db"))
db.exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${count})
  INSERT INTO subscriptions (email, email_key, name, feed, status, created_at, updated_at)
  SELECT 'p' || i || '@example.com', 'p' || i || '@example.com', 'Person number ' || i, 'default', 'active', 0, 0
  FROM n`)
db.close()
await sleep(2_000)
const before = rss(child.pid)
let peak = before
const sampler = setInterval(() => (peak = Math.max(peak, rss(child.pid))), 10)
const health = []
let exporting = true
const probe = (async () => {
  while (exporting) {
    const t = performance.now()
    await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.arrayBuffer())
    health.push(performance.now() - t)
    await sleep(20)
  }
})()
const t0 = performance.now()
const bytes = await new Promise((ok, fail) => {
  get(`http://127.0.0.1:${port}/subscriptions?feed=default`, {
    headers: { accept: "text/csv", authorization: `Bearer ${adminKey}` }
  }, (res) => {
    let n = 0
    res.on("data", (c) => {
      n += c.length
      if (slow) {
        res.pause()
        setTimeout(() => res.resume(), 5)
      }
    })
    res.on("end", () => ok(n))
    res.on("error", fail)
  }).on("error", fail)
})
const exportMs = performance.now() - t0
exporting = false
await probe
clearInterval(sampler)
child.kill("SIGTERM")
// With `-- --trace-gc`: the app's last collections, which show the live heap against what V8 keeps.
const gcLines = out().split("\n").filter((l) => /Mark-Compact|Scavenge/.test(l))
if (gcLines.length > 0) console.log(gcLines.slice(-20).join("\n"))
console.log(JSON.stringify({
  subscribers: count,
  csvMB: +(bytes / 1e6).toFixed(1),
  exportMs: Math.round(exportMs),
  rssBeforeMB: +before.toFixed(1),
  rssPeakMB: +peak.toFixed(1),
  rssGrowthMB: +(peak - before).toFixed(1),
  healthz: {
    count: health.length,
    medianMs: +percentile(health, 0.5).toFixed(1),
    p99Ms: +percentile(health, 0.99).toFixed(1),
    maxMs: +Math.max(...health).toFixed(1)
  }
}))
