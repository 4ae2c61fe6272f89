import { assert, describe, it } from "@effect/vitest"
import { afterEach } from "vitest"
import { AppProcess } from "../support/AppProcess.ts"
import { firstApiKey, MerchantApi, transferBody, unlimitedEnv } from "../support/Payments.ts"
import { webhookEnv, WebhookReceiver } from "../support/WebhookReceiver.ts"

// The webhook promise: an event committed with its transfer is delivered, whatever happened to the receiver
// or to the process in between; a crash may repeat a delivery once, with the same webhook-id.
const cleanup: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step()
})

const startApp = async (dataDir?: string) => {
  const app = await AppProcess.start({ env: { ...unlimitedEnv, ...webhookEnv }, ...(dataDir ? { dataDir } : {}) })
  cleanup.push(() => app.stop())
  return app
}

describe("webhook delivery", () => {
  it("every event arrives after a kill -9 that came after the commit and before the delivery", {
    timeout: 120_000
  }, async () => {
    const receiver = await WebhookReceiver.start()
    cleanup.push(() => receiver.down())
    const first = await startApp()
    const api = new MerchantApi(first.baseUrl, firstApiKey(first.output))
    const endpoint = await api.request("POST", "/webhook_endpoints", {
      body: JSON.stringify({ url: receiver.url, enabled_events: ["*"] }),
      headers: { "content-type": "application/json" }
    })
    receiver.secret = endpoint.json.secret
    await receiver.down()
    const ids = await Promise.all(
      Array.from({ length: 10 }, () => api.create(transferBody()).then((r) => r.json.payment_transfer.id as string))
    )
    await first.kill9()
    const committed = first.query<{ id: string }>("SELECT id FROM events")
    assert.lengthOf(committed, 10)
    assert.isTrue(
      first.query<{ n: number }>("SELECT count(*) AS n FROM webhook_deliveries WHERE delivered_at IS NOT NULL")[0]!
        .n === 0
    )
    await receiver.up()
    await startApp(first.dataDir)
    // Due after the endpoint's backoff (5-10 s), or, for one in flight at the kill, after its 60 s lease.
    await receiver.waitFor((all) => ids.every((id) => all.some((r) => r.event.data.object.id === id)), 90_000)
    assert.deepStrictEqual(receiver.rejected, [])
    const byEvent = new Map<string, number>()
    for (const r of receiver.received) byEvent.set(r.id, (byEvent.get(r.id) ?? 0) + 1)
    assert.deepStrictEqual([...byEvent.keys()].sort(), committed.map((e) => e.id).sort())
    assert.isTrue([...byEvent.values()].every((n) => n <= 2), "at most one duplicate per crash")
  })
})
