// CPU per delivered event, in this process: the app as npm start builds it (apps/AppLayer.ts, SQLite in a temp
// directory; the delivery thread runs the bundle's dist/node/delivery.mjs, so `npm run build` first) with two API
// clients, one with a webhook endpoint at bench/webhook-sink.mjs and one without. The receiver runs on the other
// CPUs, this process on the first, as `npm run bench -- --pin` has them. Requests go to the pipeline as in
// bench/pipeline.ts (no sockets). Each round: N transfers of the plain client; N of the hooked one, until their
// webhooks arrived (alternately first and second: the JIT warms up through the first rounds; round 0 is a warm-up).
// The CPU per delivered event is the hooked phase's CPU per request less the plain one's, over all the threads
// and split by thread: main, the delivery thread, the rest (V8's helpers). Differences of two figures of 400-600 µs:
// on a shared machine a round moves by about 100 µs, so take the median of several.
//
//   npx tsx bench/hooks-e2e.ts [--requests=3000] [--concurrency=50] [--rounds=3] [--scenario=approved|declined]
//                              [--thread=off] [--perf-control=FIFO]
// --thread=off: the sends on the main thread (DELIVERY_THREAD=off). --perf-control=FIFO: for
// `perf record --control=fifo:FIFO -D -1`, enabled during the hooked phases only.
import { Effect, Redacted } from "effect"
import { execFileSync } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import os from "node:os"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import type { IncomingRequest, Pipeline } from "../apps/http/pipeline/Pipeline.ts"
import { pipelineRequest as request, startPinnedSink } from "./lib/in-process.ts"

const args = process.argv.slice(2)
const option = (name: string, fallback: string) =>
  args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback
const requests = Number(option("requests", "3000"))
const concurrency = Number(option("concurrency", "50"))
const rounds = Number(option("rounds", "3"))
const scenario = option("scenario", "approved")
// --thread=off: the sends on the main thread (DELIVERY_THREAD=off), as service-hooks-1t.
const thread = option("thread", "on") === "on"
const perfControl = args.find((a) => a.startsWith("--perf-control="))?.slice("--perf-control=".length)
const perf = (command: string) => perfControl !== undefined && writeFileSync(perfControl, `${command}\n`)
const root = join(import.meta.dirname, "..")

const sink = await startPinnedSink()

const dataDir = mkdtempSync(join(os.tmpdir(), "paysub-hooks-e2e-"))
Object.assign(process.env, {
  DATABASE_URL: `sqlite:${join(dataDir, "paysub.db")}`,
  MERCHANT_RATE_LIMIT: "0",
  SUBSCRIBE_RATE_LIMIT: "0",
  WEBHOOK_ALLOW_HTTP: "on",
  WEBHOOK_ALLOW_PRIVATE: "on",
  LOG_LEVEL: process.env.LOG_LEVEL ?? "warn"
})
const { openBetterSqlite3 } = await import("../adapters/sqlite/BetterSqlite3.ts")
const { appLayer } = await import("../apps/AppLayer.ts")
const { RequestPipeline } = await import("../apps/http/pipeline/Pipeline.ts")
const { Clients } = await import("../core/payments/Clients.ts")

const answer = (pipeline: Pipeline, r: IncomingRequest) =>
  new Promise<{ status: number }>((ok, fail) =>
    pipeline(r).addObserver((exit) => (exit._tag === "Success" ? ok(exit.value as any) : fail(exit)))
  )
let unique = 0
const transferBody = (reference: string, expiry: string) =>
  JSON.stringify({
    payment_transfer: {
      reference,
      amount: "12.34",
      currency: "USD",
      sender_account_uri: `pan:4242424242424242;exp=${expiry};cvc=123`,
      sender: { first_name: "Ann", middle_name: "B", email: "ann@example.com" },
      recipient: { first_name: "Mo", email: "shop@example.com", merchant_id: "m-42" },
      authentication_value: "ucaf:jJJLtQa+Iws8AREAEbjsA1MAAAA="
    }
  })

const tick = Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim()) || 100
// CPU seconds of this process's threads by kind: main, the delivery thread (WorkerThread), the rest.
const threads = () => {
  const out: Record<string, number> = { main: 0, delivery: 0, other: 0 }
  for (const tid of readdirSync(`/proc/${process.pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${process.pid}/task/${tid}/stat`, "utf8")
      const comm = readFileSync(`/proc/${process.pid}/task/${tid}/comm`, "utf8").trim()
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      const kind = Number(tid) === process.pid ? "main" : comm === "WorkerThread" ? "delivery" : "other"
      out[kind]! += (Number(f[11]) + Number(f[12])) / tick
    } catch {
      // gone
    }
  }
  return out
}
const since = (a: Record<string, number>) => {
  const b = threads()
  return Object.fromEntries(Object.keys(b).map((k) => [k, b[k]! - (a[k] ?? 0)]))
}

const main = Effect.gen(function*() {
  const pipeline = yield* RequestPipeline
  const clients = yield* Clients
  const plain = `Bearer ${Redacted.value((yield* clients.create("plain")).apiKey)}`
  const hooked = `Bearer ${Redacted.value((yield* clients.create("hooked")).apiKey)}`
  const registered = yield* Effect.promise(() =>
    answer(
      pipeline,
      request(
        "POST",
        "/webhook_endpoints",
        { authorization: hooked, "content-type": "application/json" },
        JSON.stringify({
          url: `http://127.0.0.1:${sink.port}/hooks`,
          enabled_events: ["*"]
        })
      )
    )
  )
  if (registered.status !== 201) throw new Error(`registration answered ${registered.status}`)
  const expiry = scenario === "declined" ? "2020-01" : "2030-12"
  const expect = scenario === "declined" ? 402 : 201
  const drive = async (auth: string, n: number) => {
    let odd = 0
    await Promise.all(Array.from({ length: concurrency }, async () => {
      for (let i = 0; i < n / concurrency; i++) {
        const { status } = await answer(
          pipeline,
          request(
            "POST",
            "/merchant/transfers/payment",
            { authorization: auth, "content-type": "application/json" },
            transferBody(`r-${unique++}`, expiry)
          )
        )
        if (status !== expect) odd++
      }
    }))
    if (odd > 0) console.error(`  !! ${odd} answers not ${expect}`)
  }
  const delivered = async (goal: number) => {
    for (;;) {
      const n = await sink.count()
      if (n >= goal) return n
      await new Promise((r) => setTimeout(r, 50))
    }
  }
  const sum = (o: Record<string, number>) => Object.values(o).reduce((a, b) => a + b, 0)
  const us = (s: number, n: number) => ((s * 1e6) / n).toFixed(0).padStart(4)
  console.error(`hooks e2e in process: ${requests} ${scenario} per phase, ${concurrency} in flight, ${rounds} round(s)`)
  const results: Array<number> = []
  for (let round = 0; round <= rounds; round++) {
    const n = requests
    yield* Effect.promise(async () => {
      const phases: Array<() => Promise<Record<string, number>>> = [async () => {
        const a = threads()
        await drive(plain, n)
        return since(a)
      }, async () => {
        const before = await sink.count()
        perf("enable")
        const b = threads()
        await drive(hooked, n)
        arrivedDuring = (await sink.count()) - before
        await delivered(before + n)
        const h = since(b)
        perf("disable")
        return h
      }]
      let arrivedDuring = 0
      let p: Record<string, number>, h: Record<string, number>
      if (round % 2 === 1) {
        p = await phases[0]!()
        h = await phases[1]!()
      } else {
        h = await phases[1]!()
        p = await phases[0]!()
      }
      if (round === 0) return
      const extra = (k: string) => h[k]! - p[k]!
      const perEvent = (sum(h) - sum(p)) * 1e6 / n
      results.push(perEvent)
      console.error(
        `  round ${round}  plain ${us(sum(p), n)} us/req (main ${us(p.main!, n)})  hooked ${us(sum(h), n)} (main ${
          us(h.main!, n)
        }, delivery ${us(h.delivery!, n)}, other ${us(h.other!, n)})  per event ${
          perEvent.toFixed(0).padStart(4)
        } us: main ${us(extra("main"), n)}, delivery ${us(extra("delivery"), n)}, other ${
          us(extra("other"), n)
        }  (${arrivedDuring} arrived during the requests)`
      )
    })
  }
  const sorted = [...results].sort((a, b) => a - b)
  console.error(`median per event ${sorted[Math.floor(sorted.length / 2)]!.toFixed(0)} us`)
})

try {
  await Effect.runPromise(
    Effect.scoped(
      Effect.provide(
        main,
        appLayer(
          { openSqlite: openBetterSqlite3 },
          thread ? pathToFileURL(join(root, "dist/node/delivery.mjs")) : undefined
        )
      )
    )
  )
} finally {
  sink.stop()
  rmSync(dataDir, { recursive: true, force: true })
}
process.exit(0)
