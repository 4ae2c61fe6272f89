import { assert, describe, it } from "@effect/vitest"
import { AppProcess } from "../support/AppProcess.ts"
import { FaultProxy } from "../support/FaultProxy.ts"
import { firstApiKey, MerchantApi, transferBody, unlimitedEnv } from "../support/Payments.ts"
import { ThrowawayPostgres, unavailableReason } from "./ThrowawayPostgres.ts"

// The network between the service and PostgreSQL (a throwaway cluster), through a TCP proxy of the test's own
// (test/support/FaultProxy.ts), under 16 clients making and listing transfers:
// (c) black-holed connections: the proxy stops forwarding in both directions and sends no RST, for 10 s;
// (b) connections reset in the middle of a transaction (test/support/FaultProxy.ts says where), for 5 s.
// In each: no 500; every answer comes within the documented bound (503 with Retry-After when the database cannot
// answer, never a hang); the pool recovers by itself within 5 s of the fault's end, with no restart (but for one
// 503 per pooled connection black-holed while idle, below); every
// transfer acknowledged with 201 is there afterwards. Skipped, with the reason, where the server binaries are
// missing; with CI=true that fails instead.
const clients = 16
// PG_CONNECT_TIMEOUT_MS (2 s) for a connection, then PG_STATEMENT_TIMEOUT_MS + 1 s (6 s) for the statement's answer,
// with room for the loaded machine: docs/operations.md.
const answerBoundMs = 12_000
const recoverMs = 5_000
// A pooled connection black-holed while idle is found dead only when a request uses it: that request answers 503
// after the statement's time-out, however long after the fault. The pool holds at most 10 (PgClient.ts), so at most
// that many requests after the fault's end can still fail so; a full run of the suite met one.
const poolSize = 10
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

if (unavailableReason !== undefined) {
  if (process.env.CI === "true") throw new Error(`DatabaseNetwork cannot run with CI=true: ${unavailableReason}`)
  console.warn(`DatabaseNetwork: skipped, ${unavailableReason}`)
}

interface Answer {
  readonly at: number
  readonly ms: number
  readonly status: number
  readonly retryAfter: string | null
  readonly created?: string
}

const count = (list: ReadonlyArray<Answer>) => {
  const by: Record<number, number> = {}
  for (const a of list) by[a.status] = (by[a.status] ?? 0) + 1
  return by
}

const faults = [
  { name: "black-holed connections", ms: 10_000, inject: (p: FaultProxy) => p.blackHole() },
  {
    name: "connections reset in the middle of a transaction",
    ms: 5_000,
    inject: (p: FaultProxy) => p.resetInTransactions()
  }
] as const

describe.skipIf(unavailableReason !== undefined)("the network between the service and PostgreSQL", () => {
  for (const fault of faults) {
    it(`${fault.name}: 503 with Retry-After within the bound, recovered within 5 s of the end`, async () => {
      const pg = await ThrowawayPostgres.start()
      const proxy = await FaultProxy.start(pg.port)
      let app: AppProcess | undefined
      try {
        app = await AppProcess.start({
          env: { ...unlimitedEnv, DATABASE_URL: `postgres://postgres@127.0.0.1:${proxy.port}/postgres` }
        })
        const api = new MerchantApi(app.baseUrl, firstApiKey(app.output))
        const answers: Array<Answer> = []
        let running = true
        let sequence = 0
        const client = async (n: number) => {
          while (running) {
            const started = Date.now()
            // A hang shows as no answer (status 0) after 20 s.
            const signal = AbortSignal.timeout(20_000)
            const answer = await (n % 2 === 0
              ? api.request("POST", "/merchant/transfers/payment", {
                body: JSON.stringify(transferBody()),
                headers: { "content-type": "application/json", "idempotency-key": `net-${n}-${sequence++}` },
                signal
              })
              : api.request("GET", "/merchant/transfers/payment?limit=5", { signal })).catch(() => undefined)
            answers.push({
              at: started,
              ms: Date.now() - started,
              status: answer?.status ?? 0,
              retryAfter: answer?.headers.get("retry-after") ?? null,
              ...(answer?.status === 201 ? { created: answer.json.payment_transfer.id } : {})
            })
            if (answer?.status !== 200 && answer?.status !== 201) await sleep(50)
          }
        }
        const load = Promise.all(Array.from({ length: clients }, (_, n) => client(n)))
        await sleep(1_500)
        const start = Date.now()
        fault.inject(proxy)
        await sleep(fault.ms)
        proxy.heal()
        const end = Date.now()
        await sleep(recoverMs + 5_000)
        running = false
        await load

        const during = answers.filter((a) => a.at >= start && a.at < end)
        const after = answers.filter((a) => a.at >= end)
        const settled = answers.filter((a) => a.at >= end + recoverMs)
        const firstSuccess = after.find((a) => a.status < 300)
        const slowest = Math.max(...answers.map((a) => a.ms))
        console.log(
          `DatabaseNetwork (${fault.name}, ${fault.ms} ms): during it ${JSON.stringify(count(during))}; the slowest ` +
            `answer ${slowest} ms; after it ${JSON.stringify(count(after))}, first success ${
              firstSuccess === undefined ? "none" : `${firstSuccess.at + firstSuccess.ms - end} ms`
            } after the fault's end; from 5 s after: ${JSON.stringify(count(settled))}; resets ${proxy.resets}; ` +
            `${answers.filter((a) => a.created !== undefined).length} transfers acknowledged`
        )
        assert.isFalse(answers.some((a) => a.status === 500 || a.status === 0), "no 500, no connection lost")
        assert.isAtMost(slowest, answerBoundMs, "every answer within the bound")
        const refused = answers.filter((a) => a.status === 503)
        assert.isTrue(refused.every((a) => a.retryAfter !== null), "every 503 with Retry-After")
        assert.isTrue(during.every((a) => a.status < 300 || a.status === 503), "2xx or 503 during the fault")
        assert.isDefined(firstSuccess)
        assert.isAtMost(firstSuccess!.at + firstSuccess!.ms - end, recoverMs)
        assert.isAbove(settled.length, 0)
        const late = settled.filter((a) => a.status >= 300)
        assert.isTrue(late.every((a) => a.status === 503), "from 5 s after the end, a success or a 503")
        assert.isAtMost(late.length, poolSize, "from 5 s after the end, at most one 503 per pooled connection")
        // Read back once the service answers again: every transfer acknowledged with 201 is there.
        const lost: Array<string> = []
        for (const { created } of answers) {
          if (created === undefined) continue
          const found = await api.request("GET", `/merchant/transfers/payment/${created}`, {
            signal: AbortSignal.timeout(10_000)
          }).catch(() => undefined)
          if (found?.status !== 200) lost.push(created)
        }
        assert.deepStrictEqual(lost, [])
      } finally {
        await app?.stop()
        await proxy.close()
        pg.destroy()
      }
    }, 120_000)
  }
})
