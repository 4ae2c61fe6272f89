import { assert } from "@effect/vitest"
import { writeFileSync } from "node:fs"
import { AppProcess } from "../support/AppProcess.ts"
import type { FaultProxy } from "../support/FaultProxy.ts"
import { firstApiKey, MerchantApi, transferBody, unlimitedEnv } from "../support/Payments.ts"

// One network fault between the service and its database, through the test's proxy, under 16 clients: half make
// transfers, a quarter list them, a quarter probe /readyz as a load balancer would. The fault comes once every
// client has had a success. Checked: no 500 and no hang; every answer that was still awaited when the fault came
// within `answerBoundMs` (the documented time-outs, with room for the loaded machine); every 503 with
// Retry-After; a success within 5 s of the fault's end and every request started from then on a success, with no
// restart; the loops' storage backoff (at most `maxLogLines` log entries besides the access log: a loop
// that retried at once would write one per attempt); every transfer
// acknowledged with 201 there afterwards.
export interface NetworkFault {
  readonly name: string
  readonly ms: number
  readonly inject: (proxy: FaultProxy) => void
  readonly answerBoundMs: number
}

const clients = 16
const recoverMs = 5_000
const maxLogLines = 30
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

interface Answer {
  readonly at: number
  readonly ms: number
  readonly status: number
  readonly retryAfter: string | null
  readonly kind: "create" | "list" | "probe"
  readonly requestId: string | null
  readonly created?: string
}

const count = (list: ReadonlyArray<Answer>) => {
  const by: Record<number, number> = {}
  for (const a of list) by[a.status] = (by[a.status] ?? 0) + 1
  return by
}

export const runNetworkFault = async (label: string, fault: NetworkFault, proxy: FaultProxy, databaseUrl: string) => {
  let app: AppProcess | undefined
  try {
    app = await AppProcess.start({ env: { ...unlimitedEnv, DATABASE_URL: databaseUrl } })
    const api = new MerchantApi(app.baseUrl, firstApiKey(app.output))
    const answers: Array<Answer> = []
    let running = true
    let sequence = 0
    // The clients that have had a success: the service is warm for them.
    const warm = new Set<number>()
    const client = async (n: number) => {
      while (running) {
        const started = Date.now()
        // A hang shows as no answer (status 0) after 60 s.
        const signal = AbortSignal.timeout(60_000)
        const answer = await (n % 2 === 0
          ? api.request("POST", "/merchant/transfers/payment", {
            body: JSON.stringify(transferBody()),
            headers: { "content-type": "application/json", "idempotency-key": `net-${n}-${sequence++}` },
            signal
          })
          : n % 4 === 1
          ? api.request("GET", "/merchant/transfers/payment?limit=5", { signal })
          : api.request("GET", "/readyz", { signal })).catch(() => undefined)
        answers.push({
          at: started,
          ms: Date.now() - started,
          status: answer?.status ?? 0,
          retryAfter: answer?.headers.get("retry-after") ?? null,
          requestId: answer?.headers.get("x-request-id") ?? null,
          kind: n % 2 === 0 ? "create" : n % 4 === 1 ? "list" : "probe",
          ...(answer?.status === 201 ? { created: answer.json.payment_transfer.id } : {})
        })
        if (answer?.status === 200 || answer?.status === 201) warm.add(n)
        else await sleep(50)
      }
    }
    const load = Promise.all(Array.from({ length: clients }, (_, n) => client(n)))
    // The fault comes once every client has had a success, and after at least 1.5 s of load: the first requests
    // of a cold start on a loaded machine take seconds (up to 5 s at a load average of 14), and one still awaited
    // when the fault came would be measured against its bound.
    await sleep(1_500)
    for (let waited = 0; warm.size < clients && waited < 30_000; waited += 100) await sleep(100)
    const logBefore = app.output.length
    const start = Date.now()
    fault.inject(proxy)
    await sleep(fault.ms)
    proxy.heal()
    const end = Date.now()
    await sleep(recoverMs + 5_000)
    running = false
    await load
    const logLines = app.output.slice(logBefore).split("\n")
      .filter((line) => /^\[[\d:.]+\] [A-Z]+ /.test(line) && !/ (GET|POST) \/\S* \d{3} [\d.]+ ms/.test(line))

    const during = answers.filter((a) => a.at >= start && a.at < end)
    const after = answers.filter((a) => a.at >= end)
    const settled = answers.filter((a) => a.at >= end + recoverMs)
    const firstSuccess = after.find((a) => a.status < 300)
    // The answers the fault could reach: those not over before it came.
    const reached = answers.filter((a) => a.at + a.ms >= start)
    const slowest = Math.max(...reached.map((a) => a.ms))
    console.log(
      `${label} (${fault.name}, ${fault.ms} ms): during it ${
        JSON.stringify(count(during))
      }; the slowest answer it reached ` +
        `${slowest} ms; after it ${JSON.stringify(count(after))}, first success ${
          firstSuccess === undefined ? "none" : `${firstSuccess.at + firstSuccess.ms - end} ms`
        } after the fault's end; from 5 s after: ${JSON.stringify(count(settled))}; resets ${proxy.resets}; ` +
        `${answers.filter((a) => a.created !== undefined).length} transfers acknowledged; ${logLines.length} ` +
        `log entries besides the access log`
    )
    // NETFAULT_LOG=/some/prefix keeps the app's log of each run, to read a failure by.
    if (process.env.NETFAULT_LOG) writeFileSync(`${process.env.NETFAULT_LOG}-${label}-${Date.now()}.log`, app.output)
    // A failed check names the answers that broke it (times from the fault's start) and the app's log lines of
    // those requests, so that a run that fails where nobody keeps the log still says why.
    const appLines = app.output.split("\n")
    const none = (what: string, offending: ReadonlyArray<Answer>) => {
      if (offending.length === 0) return
      assert.fail(`${what}: ${offending.length} answers, such as\n${
        offending.slice(0, 8).map((a) => {
          const logged = a.requestId === null ? [] : appLines.filter((line) => line.includes(a.requestId!))
          return `  ${a.kind} started at ${a.at - start} ms, ${a.status} after ${a.ms} ms${
            logged.length === 0 ? " (not in the app's log)" : `: ${logged.join(" | ")}`
          }`
        }).join("\n")
      }`)
    }
    none("no 500, no connection lost", answers.filter((a) => a.status === 500 || a.status === 0))
    none(
      "every answer within the bound",
      reached.filter((a) => a.ms > fault.answerBoundMs).sort((a, b) => b.ms - a.ms)
    )
    none(
      "every 503 of the API with Retry-After",
      answers.filter((a) => a.status === 503 && a.kind !== "probe" && a.retryAfter === null)
    )
    none("2xx or 503 during the fault", during.filter((a) => a.status >= 300 && a.status !== 503))
    if (firstSuccess === undefined) none("a success after the fault's end", after)
    assert.isDefined(firstSuccess, "a success after the fault's end")
    assert.isAtMost(firstSuccess!.at + firstSuccess!.ms - end, recoverMs, "the first success within 5 s of the end")
    assert.isAbove(settled.length, 0)
    none("every answer a success from 5 s after the end", settled.filter((a) => a.status >= 300))
    assert.isAtMost(logLines.length, maxLogLines, `the loops back off:\n${logLines.slice(0, 60).join("\n")}`)
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
  }
}
