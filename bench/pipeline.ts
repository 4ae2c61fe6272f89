// The request pipeline alone, in this process: no sockets, no load generator, no HTTP parser. It builds the app
// as `npm start` does (apps/AppLayer.ts, SQLite in a temp directory, sandbox card network) and hands the pipeline
// requests as the Node app would, one scenario at a time, `--concurrency` of them in flight. It prints the wall
// and CPU time per request, the bytes the pipeline allocates on the JavaScript heap per request (bench/lib/heap-probe.mjs;
// less what making the request objects allocates) and the statuses answered. Against `npm run bench`'s figure for the same scenario,
// it splits a request's cost between the pipeline (here) and what a real connection adds (sockets, Node's HTTP
// parser and writer, the load generator on the same cores).
//
//   npx tsx bench/pipeline.ts [--scenarios=health,notModified,replay,declined,approved,approvedIdempotent,subscribe]
//                             [--requests=5000] [--concurrency=1] [--rounds=2] [--profile=DIR]
//                             [--database=postgres://.../db]   (a database of its own: the app migrates it)
//
// Rate limits are off; access lines are off unless LOG_LEVEL is set. Figures go to stderr; stdout has the mails
// subscribe makes (the console mailer) and any access lines: send it to /dev/null.
// --profile writes a .cpuprofile per scenario and round (the timed part only) to DIR; --heap-profile=DIR a
// .heapprofile (V8's sampling heap profiler, a sample every 64 bytes: where the allocations are made).
import { Effect, Redacted } from "effect"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { Session } from "node:inspector"
import os from "node:os"
import { join } from "node:path"
import type { IncomingRequest, Pipeline } from "../apps/http/pipeline/Pipeline.ts"
import { allocationMeter } from "./lib/heap-probe.mjs"
import { pipelineRequest as request } from "./lib/in-process.ts"

const args = process.argv.slice(2)
const option = (name: string, fallback: string) =>
  args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback
const scenarioNames = option("scenarios", "health,notModified,replay,declined,approved,subscribe").split(",")
const requests = Number(option("requests", "5000"))
const concurrency = Number(option("concurrency", "1"))
const rounds = Number(option("rounds", "2"))
const profileDir = args.find((a) => a.startsWith("--profile="))?.slice("--profile=".length)
const heapProfileDir = args.find((a) => a.startsWith("--heap-profile="))?.slice("--heap-profile=".length)
const database = args.find((a) => a.startsWith("--database="))?.slice("--database=".length)

const dataDir = mkdtempSync(join(os.tmpdir(), "paysub-pipeline-"))
Object.assign(process.env, {
  DATABASE_URL: database ?? `sqlite:${join(dataDir, "paysub.db")}`,
  MERCHANT_RATE_LIMIT: "0",
  SUBSCRIBE_RATE_LIMIT: "0",
  DELIVERY_THREAD: "off",
  LOG_LEVEL: process.env.LOG_LEVEL ?? "warn"
})
// Imported after the environment is set: the app reads its configuration when its layer is built.
const { openBetterSqlite3 } = await import("../adapters/sqlite/BetterSqlite3.ts")
const { appLayer } = await import("../apps/AppLayer.ts")
const { RequestPipeline } = await import("../apps/http/pipeline/Pipeline.ts")
const { Clients } = await import("../core/payments/Clients.ts")

const session = new Session()
session.connect()
const inspector = <A>(method: string, params?: object) =>
  new Promise<A>((ok, fail) => session.post(method, params, (e, r) => (e ? fail(e) : ok(r as A))))

interface Answer {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: { readonly _tag: string; readonly body?: Uint8Array | string }
}
const answer = (pipeline: Pipeline, r: IncomingRequest) =>
  new Promise<Answer>((ok, fail) =>
    pipeline(r).addObserver((exit) => (exit._tag === "Success" ? ok(exit.value as unknown as Answer) : fail(exit)))
  )
const json = (a: Answer) =>
  JSON.parse(typeof a.body.body === "string" ? a.body.body : new TextDecoder().decode(a.body.body))

let unique = 0
const transferBody = (reference: string, expiry = "2030-12") =>
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

const main = Effect.gen(function*() {
  const pipeline = yield* RequestPipeline
  const created = yield* (yield* Clients).create("pipeline bench")
  const auth = `Bearer ${Redacted.value(created.apiKey)}`
  const json_ = { authorization: auth, "content-type": "application/json" }
  const post = (body: string, key?: string) =>
    request(
      "POST",
      "/merchant/transfers/payment",
      key === undefined ? json_ : { ...json_, "idempotency-key": key },
      body
    )
  const first = yield* Effect.promise(() => answer(pipeline, post(transferBody("kept"), "kept-key")))
  const id = json(first).payment_transfer.id as string
  const etag = (yield* Effect.promise(() =>
    answer(pipeline, request("GET", `/merchant/transfers/payment/${id}`, { authorization: auth }))
  )).headers.etag!

  const scenarios: Record<string, { readonly expect: number; readonly make: () => IncomingRequest }> = {
    health: {
      expect: 200,
      make: () =>
        request("GET", "/healthz", {})
    },
    notModified: {
      expect: 304,
      make: () => request("GET", `/merchant/transfers/payment/${id}`, { authorization: auth, "if-none-match": etag })
    },
    replay: { expect: 201, make: () => post(transferBody("kept"), "kept-key") },
    declined: { expect: 402, make: () => post(transferBody(`x-${unique++}`, "2020-01")) },
    approved: { expect: 201, make: () => post(transferBody(`ok-${unique++}`)) },
    approvedIdempotent: { expect: 201, make: () => post(transferBody(`ok-${unique}`), `key-${unique++}`) },
    subscribe: {
      expect: 200,
      make: () =>
        request(
          "POST",
          "/subscribe",
          { "content-type": "application/x-www-form-urlencoded" },
          `name=Bench+User&email=b.${unique++}%40example.com`
        )
    }
  }

  const measure = async (name: string, round: number) => {
    const scenario = scenarios[name]
    if (scenario === undefined) throw new Error(`unknown scenario ${name}`)
    const statuses = new Map<number, number>()
    const go = (count: number) =>
      Promise.all(Array.from({ length: concurrency }, async () => {
        for (let i = 0; i < count / concurrency; i++) {
          const { status } = await answer(pipeline, scenario.make())
          statuses.set(status, (statuses.get(status) ?? 0) + 1)
        }
      }))
    await go(Math.ceil(requests / 5))
    // What this file allocates per request on its own (the request, its promise), not the pipeline's.
    const own = allocationMeter()
    for (let i = 0; i < requests; i++) await Promise.resolve(scenario.make())
    const driver = own.stop().bytes / requests
    statuses.clear()
    if (profileDir !== undefined) await inspector("Profiler.enable").then(() => inspector("Profiler.start"))
    if (heapProfileDir !== undefined) {
      await inspector("HeapProfiler.enable")
      await inspector("HeapProfiler.startSampling", {
        samplingInterval: 64,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true
      })
    }
    const meter = allocationMeter()
    const cpu = process.cpuUsage()
    const started = performance.now()
    await go(requests)
    const wall = (performance.now() - started) * 1000
    const used = process.cpuUsage(cpu)
    const heap = meter.stop()
    if (profileDir !== undefined) {
      const { profile } = await inspector<{ profile: unknown }>("Profiler.stop")
      mkdirSync(profileDir, { recursive: true })
      writeFileSync(join(profileDir, `${name}-${round}.cpuprofile`), JSON.stringify(profile))
    }
    if (heapProfileDir !== undefined) {
      const { profile } = await inspector<{ profile: unknown }>("HeapProfiler.stopSampling")
      mkdirSync(heapProfileDir, { recursive: true })
      writeFileSync(join(heapProfileDir, `${name}-${round}.heapprofile`), JSON.stringify(profile))
    }
    const total = [...statuses.values()].reduce((a, b) => a + b, 0)
    const odd = [...statuses].filter(([s]) => s !== scenario.expect).map(([s, n]) => `${n} x ${s}`).join(", ")
    console.error(
      `  round ${round} ${name.padEnd(12)} wall ${(wall / total).toFixed(0).padStart(5)} us/req  CPU ${
        ((used.user + used.system) / total).toFixed(0).padStart(5)
      } us/req  allocates ${((heap.bytes / total - driver) / 1024).toFixed(1).padStart(5)} KB/req${
        odd === "" ? "" : `  !! also ${odd}`
      }`
    )
  }

  yield* Effect.promise(async () => {
    console.error(
      `pipeline in process: ${requests} requests per scenario, ${concurrency} in flight, ${rounds} round(s)`
    )
    for (let round = 1; round <= rounds; round++) {
      for (const name of scenarioNames) await measure(name, round)
    }
  })
})

try {
  await Effect.runPromise(Effect.scoped(Effect.provide(main, appLayer({ openSqlite: openBetterSqlite3 }))))
} finally {
  rmSync(dataDir, { recursive: true, force: true })
}
process.exit(0)
