import { assert, describe, it } from "@effect/vitest"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import { AppProcess } from "../support/AppProcess.ts"
import { listening } from "../support/Listening.ts"
import { firstApiKey, MerchantApi, transferBody, unlimitedEnv } from "../support/Payments.ts"
import { webhookEnv } from "../support/WebhookReceiver.ts"

// Receivers that misbehave: one never answers, one trickles its answer a byte a second, one redirects to
// another address. Each is held to one attempt's time-out (10 s), gets at most 16 attempts in flight, and is
// marked failing within that time-out and a few seconds; a redirect is not followed. (The first events reach a
// lane one or a few at a time, so the peak here stays far below 16; test/outbox/WebhookWorker.test.ts holds a
// batch to the 16.)
const listen = async (handler: (req: IncomingMessage, res: ServerResponse) => void) => {
  const served = await listening(createServer(handler))
  return { ...served, url: `${served.origin}/hook` }
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe("hostile webhook receivers", () => {
  it(
    "time out, stay within 16 attempts in flight, are marked failing soon, and redirects are not followed",
    async () => {
      const timers = new Set<NodeJS.Timeout>()
      const silent = await listen(() => {})
      const trickle = await listen((_, res) => {
        res.writeHead(200, { "content-type": "text/plain" })
        const timer = setInterval(() => res.write("."), 1_000)
        timers.add(timer)
        res.on("close", () => clearInterval(timer))
      })
      const target = await listen((_, res) => res.writeHead(204).end())
      const redirect = await listen((_, res) => res.writeHead(307, { location: target.url }).end())
      const app = await AppProcess.start({ env: { ...unlimitedEnv, ...webhookEnv } })
      try {
        const api = new MerchantApi(app.baseUrl, firstApiKey(app.output))
        const ids: Record<string, string> = {}
        for (const [name, h] of Object.entries({ silent, trickle, redirect })) {
          const created = await api.request("POST", "/webhook_endpoints", {
            body: JSON.stringify({ url: h.url, enabled_events: ["*"] }),
            headers: { "content-type": "application/json" }
          })
          assert.strictEqual(created.status, 201, name)
          ids[name] = created.json.id
        }
        const started = Date.now()
        await Promise.all(Array.from({ length: 60 }, () => api.create(transferBody())))
        const failingAfter: Record<string, number> = {}
        while (Date.now() - started < 30_000 && Object.keys(failingAfter).length < 3) {
          for (const [name, id] of Object.entries(ids)) {
            if (failingAfter[name] !== undefined) continue
            const shown = await api.get(`/webhook_endpoints/${id}`)
            if (shown.json.failing_since !== undefined) failingAfter[name] = Date.now() - started
          }
          await sleep(250)
        }
        console.log(
          `HostileReceivers: failing after ${
            JSON.stringify(failingAfter)
          } ms; peak connections: silent ${silent.peak()},` +
            ` trickle ${trickle.peak()}, redirect ${redirect.peak()}; the redirect's target got ${target.connections()}`
        )
        assert.isAtMost(failingAfter.silent!, 15_000)
        assert.isAtMost(failingAfter.trickle!, 15_000)
        assert.isAtMost(failingAfter.redirect!, 5_000)
        assert.isAtMost(silent.peak(), 16)
        assert.isAtMost(trickle.peak(), 16)
        assert.strictEqual(target.connections(), 0)
        const redirected = await api.get(`/webhook_endpoints/${ids.redirect}`)
        assert.match(redirected.json.last_error, /307/)
      } finally {
        for (const timer of timers) clearInterval(timer)
        await app.stop()
        await Promise.all([silent, trickle, target, redirect].map((h) => h.close()))
      }
    },
    90_000
  )
})
