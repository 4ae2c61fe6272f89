// The webhook delivery path alone, in this process: the SQLite webhook store and core's WebhookWorker, with a
// backlog of due deliveries to one endpoint (events the size of a transfer's), drained by `deliverDue`. The sender
// is a stub answering 204 at once (--sender=stub: the main thread's own share: claims, rounds, marks and their
// commits) or the delivery thread (--sender=thread: the bundle's dist/node/delivery.mjs, `npm run build` first, or
// --worker=PATH, another build of it) posting to bench/webhook-sink.mjs, the receiver on the other CPUs and this
// process on the first, as `npm run bench -- --pin` has them. Prints, per delivery, the wall time and the CPU of
// the main thread, of the delivery thread and of every thread. The figures of `npm run bench`'s "CPU per event
// delivered after the run" without its noise: no requests beside, no load generator.
//
//   npx tsx bench/deliveries.ts [--sender=stub|thread] [--deliveries=5000] [--rounds=3] [--worker=PATH]
//                               [--profile=DIR] [--perf-control=FIFO]
// --profile writes a .cpuprofile of each timed round (the main thread); --perf-control=FIFO: for
// `perf record --control=fifo:FIFO -D -1`, enabled during the timed rounds only.
import { SqlClient } from "@effect/sql/SqlClient"
import { DateTime, Effect, Layer } from "effect"
import { execFileSync } from "node:child_process"
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { Session } from "node:inspector"
import os from "node:os"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import { runMigrations } from "../adapters/sql/Migrations.ts"
import { openBetterSqlite3 } from "../adapters/sqlite/BetterSqlite3.ts"
import { layer as SqliteClient } from "../adapters/sqlite/SqliteClient.ts"
import { layer as SqliteWebhookStore } from "../adapters/sqlite/SqliteWebhookStore.ts"
import * as DeliveryThread from "../adapters/thread/DeliveryThread.ts"
import { EndpointId, WebhookSender, WebhookStore } from "../core/webhooks/Webhooks.ts"
import { WebhookWorker } from "../core/webhooks/WebhookWorker.ts"
import { startPinnedSink } from "./lib/in-process.ts"

const args = process.argv.slice(2)
const option = (name: string, fallback: string) =>
  args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback
const sender = option("sender", "stub")
const deliveries = Number(option("deliveries", "5000"))
const rounds = Number(option("rounds", "3"))
const profileDir = args.find((a) => a.startsWith("--profile="))?.slice("--profile=".length)
const root = join(import.meta.dirname, "..")
const perfControl = args.find((a) => a.startsWith("--perf-control="))?.slice("--perf-control=".length)
const perf = (command: string) => perfControl !== undefined && writeFileSync(perfControl, `${command}\n`)

const dataDir = mkdtempSync(join(os.tmpdir(), "paysub-deliveries-"))
const owner = "cl_000000000000000000000001"
const endpointId = EndpointId.make("we_000000000000000000000001")

const session = new Session()
session.connect()
const inspector = <A>(method: string, params?: object) =>
  new Promise<A>((ok, fail) => session.post(method, params, (e, r) => (e ? fail(e) : ok(r as A))))

const sink = sender === "thread" ? await startPinnedSink() : undefined
const senderLayer = sender === "thread"
  ? DeliveryThread.webhookSenderLayer.pipe(Layer.provide(DeliveryThread.layer({
    worker: pathToFileURL(option("worker", join(root, "dist/node/delivery.mjs"))),
    smtp: false,
    webhooks: { allowHttp: true, allowPrivate: true }
  })))
  : Layer.succeed(
    WebhookSender,
    WebhookSender.of({ check: () => Effect.void, send: (requests) => Effect.succeed(requests.map(() => 204)) })
  )

const layer = WebhookWorker.Default.pipe(
  Layer.provideMerge(SqliteWebhookStore),
  Layer.provideMerge(senderLayer),
  Layer.provide(Layer.effectDiscard(runMigrations)),
  Layer.provideMerge(SqliteClient({ filename: join(dataDir, "paysub.db"), open: openBetterSqlite3 })),
  // As the app has it without an OTLP endpoint (apps/Telemetry.ts): no spans, so the direct path makes none.
  Layer.provide(Layer.setTracerEnabled(false))
)

// An event body the size of a transfer's.
const body = (id: string) =>
  JSON.stringify({
    id,
    type: "transfer.approved",
    created: new Date().toISOString(),
    data: {
      object: {
        id: "tr_0123456789abcdefghijklmn",
        reference: "bench-reference-000000",
        status: "approved",
        amount: "12.34",
        currency: "USD",
        sender: { first_name: "Ann", middle_name: "B", email: "ann@example.com" },
        recipient: { first_name: "Mo", email: "shop@example.com", merchant_id: "m-42" },
        authorization_code: "123456",
        created: new Date().toISOString()
      }
    }
  })

// The delivery thread's CPU seconds (its name is WorkerThread), from /proc.
const tick = Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim()) || 100
const deliveryThreadCpu = () => {
  let total = 0
  for (const tid of readdirSync(`/proc/${process.pid}/task`)) {
    try {
      if (readFileSync(`/proc/${process.pid}/task/${tid}/comm`, "utf8").trim() !== "WorkerThread") continue
      const stat = readFileSync(`/proc/${process.pid}/task/${tid}/stat`, "utf8")
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      total += (Number(f[11]) + Number(f[12])) / tick
    } catch {
      // gone
    }
  }
  return total
}

let sequence = 0
const main = Effect.gen(function*() {
  const sql = yield* SqlClient
  const store = yield* WebhookStore
  const worker = yield* WebhookWorker
  yield* store.createEndpoint({
    id: endpointId,
    owner,
    url: sink === undefined ? "https://hooks.example/x" : `http://127.0.0.1:${sink.port}/hooks`,
    enabledEvents: ["*"],
    createdAt: yield* DateTime.now
  }, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
  // `n` events, each with a delivery due now, written in transactions of 500.
  const backlog = (n: number) =>
    Effect.gen(function*() {
      const now = Date.now()
      for (let i = 0; i < n; i += 500) {
        yield* sql.withTransaction(Effect.forEach(Array.from({ length: Math.min(500, n - i) }), () => {
          const id = `evt_${String(sequence++).padStart(24, "0")}`
          return Effect.zipRight(
            sql`INSERT INTO events (id, type, owner, created_at, body) VALUES (${id}, 'transfer.approved', ${owner},
              ${now}, ${body(id)})`,
            sql`INSERT INTO webhook_deliveries (event_id, endpoint_id, created_at, next_attempt_at)
              VALUES (${id}, ${endpointId}, ${now}, ${now})`
          )
        }, { discard: true }))
      }
    })
  console.error(`deliveries in process: ${deliveries} per round, sender ${sender}, ${rounds} round(s)`)
  for (let round = 0; round <= rounds; round++) {
    const n = round === 0 ? Math.ceil(deliveries / 5) : deliveries
    yield* backlog(n)
    const before = sink === undefined ? 0 : yield* Effect.promise(() => sink.count())
    if (round > 0 && profileDir !== undefined) {
      yield* Effect.promise(() => inspector("Profiler.enable").then(() => inspector("Profiler.start")))
    }
    if (round > 0) perf("enable")
    const worker0 = deliveryThreadCpu()
    const thread = process.threadCpuUsage()
    const cpu = process.cpuUsage()
    const started = performance.now()
    yield* worker.deliverDue
    const wall = (performance.now() - started) * 1000
    const main = process.threadCpuUsage(thread)
    const workerThread = deliveryThreadCpu() - worker0
    const all = process.cpuUsage(cpu)
    if (round > 0) perf("disable")
    if (round > 0 && profileDir !== undefined) {
      const { profile } = yield* Effect.promise(() => inspector<{ profile: unknown }>("Profiler.stop"))
      mkdirSync(profileDir, { recursive: true })
      writeFileSync(join(profileDir, `deliveries-${sender}-${round}.cpuprofile`), JSON.stringify(profile))
    }
    const left = (yield* sql<{ n: number }>`SELECT count(*) AS n FROM webhook_deliveries
      WHERE delivered_at IS NULL`)[0]!.n
    const received = sink === undefined ? n : (yield* Effect.promise(() => sink.count())) - before
    if (round === 0) continue
    console.error(
      `  round ${round}  wall ${(wall / n).toFixed(1).padStart(6)} us  main thread ${
        ((main.user + main.system) / n).toFixed(1).padStart(6)
      } us  delivery thread ${((workerThread * 1e6) / n).toFixed(1).padStart(6)} us  all threads ${
        ((all.user + all.system) / n).toFixed(1).padStart(6)
      } us per delivery${left > 0 || received !== n ? `  !! ${left} left, ${received} received` : ""}`
    )
  }
})

try {
  await Effect.runPromise(Effect.scoped(Effect.provide(main, layer)))
} finally {
  sink?.stop()
  rmSync(dataDir, { recursive: true, force: true })
}
process.exit(0)
