// Two app processes on one PostgreSQL database share the webhook deliveries (FOR UPDATE SKIP LOCKED and a
// lease, as the mail outbox does): each event is delivered and marked once. PostgreSQL only.
import { assert, describe, it } from "@effect/vitest"
import { afterAll, beforeAll } from "vitest"
import { AppProcess, testDatabase } from "../support/AppProcess.ts"
import { firstApiKey, MerchantApi, transferBody, unlimitedEnv } from "../support/Payments.ts"
import { webhookEnv, WebhookReceiver } from "../support/WebhookReceiver.ts"

const onPostgres = testDatabase !== "sqlite"

describe.skipIf(!onPostgres)("webhooks from two instances on one PostgreSQL database", () => {
  let apps: ReadonlyArray<AppProcess> = []
  let receiver: WebhookReceiver

  beforeAll(async () => {
    receiver = await WebhookReceiver.start()
    const env = { ...unlimitedEnv, ...webhookEnv }
    const first = await AppProcess.start({ env })
    const second = await AppProcess.start({ env, databaseUrl: first.databaseUrl })
    apps = [first, second]
  }, 120_000)
  afterAll(async () => {
    await Promise.all(apps.map((a) => a.stop()))
    await receiver?.down()
  })

  it("each event is delivered and marked once", { timeout: 60_000 }, async () => {
    const key = firstApiKey(apps[0]!.output)
    const apis = apps.map((a) => new MerchantApi(a.baseUrl, key))
    const endpoint = await apis[1]!.request("POST", "/webhook_endpoints", {
      body: JSON.stringify({ url: receiver.url, enabled_events: ["*"] }),
      headers: { "content-type": "application/json" }
    })
    receiver.secret = endpoint.json.secret
    const ids = await Promise.all(
      Array.from(
        { length: 100 },
        (_, i) => apis[i % 2]!.create(transferBody()).then((r) => r.json.payment_transfer.id as string)
      )
    )
    await receiver.waitFor((all) => ids.every((id) => all.some((r) => r.event.data.object.id === id)), 30_000)
    // Both workers keep polling: anything delivered twice would show up within a few of their passes.
    await new Promise((r) => setTimeout(r, 3_000))
    assert.deepStrictEqual(receiver.rejected, [])
    assert.strictEqual(receiver.received.length, 100)
    assert.strictEqual(new Set(receiver.received.map((r) => r.id)).size, 100)
    const rows = apps[0]!.query<{ attempts: number; delivered: boolean }>(
      "SELECT attempts, delivered_at IS NOT NULL AS delivered FROM webhook_deliveries"
    )
    assert.lengthOf(rows, 100)
    assert.isTrue(rows.every((r) => r.delivered && Number(r.attempts) === 1))
  })
})
