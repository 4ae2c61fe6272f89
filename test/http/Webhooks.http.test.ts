import { assert, describe, it } from "@effect/vitest"
import { afterAll, beforeAll } from "vitest"
import { sandboxTimeoutCards } from "../../adapters/cardnetwork/SandboxCardNetwork.ts"
import { AdminKey, AppProcess, postForm } from "../support/AppProcess.ts"
import {
  accountUri,
  createClient,
  expiry,
  firstApiKey,
  MerchantApi,
  reconcileEnv,
  transferBody,
  unlimitedEnv
} from "../support/Payments.ts"
import { type ReceivedMail, SmtpTestServer } from "../support/SmtpTestServer.ts"
import { type ReceivedWebhook, webhookEnv, WebhookReceiver } from "../support/WebhookReceiver.ts"

// Black-box: the app as a real process, a real receiver on a real socket that verifies every delivery with the
// standardwebhooks package, and a real SMTP server for the subscription links.
let app: AppProcess
let api: MerchantApi
let smtp: SmtpTestServer
let receiver: WebhookReceiver

beforeAll(async () => {
  smtp = await SmtpTestServer.start()
  receiver = await WebhookReceiver.start()
  app = await AppProcess.start({
    env: { ...unlimitedEnv, ...reconcileEnv, ...webhookEnv, MAIL_TRANSPORT: "smtp", SMTP_URL: smtp.url }
  })
  api = new MerchantApi(app.baseUrl, firstApiKey(app.output))
})
afterAll(async () => {
  await app?.stop()
  await receiver?.down()
  await smtp?.stop()
})

const json = (body: unknown) => ({ body: JSON.stringify(body), headers: { "content-type": "application/json" } })
const register = (as: MerchantApi, url: string, events: ReadonlyArray<string>) =>
  as.request("POST", "/webhook_endpoints", json({ url, enabled_events: events }))
const admin = () => api.withKey(AdminKey)
const approved = (as: MerchantApi) => as.create(transferBody())
const declined = (as: MerchantApi) => as.create(transferBody({ sender_account_uri: accountUri("4000000000000002") }))
const expired = (as: MerchantApi) =>
  as.create(transferBody({ sender_account_uri: accountUri("4242424242424242", expiry(-2)) }))
const transferOf = (r: { json: any }) => r.json.payment_transfer?.id ?? r.json.error?.transfer

describe("webhook endpoints", () => {
  it("registers with a merchant key: 201 with the secret, shown only then", async () => {
    const created = await register(api, "http://127.0.0.1:9/x", ["transfer.approved"])
    assert.strictEqual(created.status, 201, created.text)
    assert.match(created.json.id, /^we_[0-9A-Za-z]{24}$/)
    assert.match(created.json.secret, /^whsec_[A-Za-z0-9+/]+=*$/)
    assert.strictEqual(Buffer.from(created.json.secret.slice(6), "base64").length, 32)
    assert.deepStrictEqual(created.json.enabled_events, ["transfer.approved"])
    const listed = await api.get("/webhook_endpoints")
    assert.strictEqual(listed.status, 200)
    const mine = listed.json.data.find((e: any) => e.id === created.json.id)
    assert.strictEqual(mine.url, "http://127.0.0.1:9/x")
    assert.notInclude(listed.text, "whsec_")
    assert.notInclude((await api.get(`/webhook_endpoints/${created.json.id}`)).text, "whsec_")
    const rotated = await api.request("POST", `/webhook_endpoints/${created.json.id}/rotate_secret`)
    assert.strictEqual(rotated.status, 200)
    assert.match(rotated.json.secret, /^whsec_/)
    assert.notStrictEqual(rotated.json.secret, created.json.secret)
    const removed = await api.request("DELETE", `/webhook_endpoints/${created.json.id}`)
    assert.strictEqual(removed.status, 204)
    assert.strictEqual((await api.request("DELETE", `/webhook_endpoints/${created.json.id}`)).status, 404)
  })

  it("refuses other owners' event types, bad URLs and missing keys", async () => {
    const foreign = await register(api, "http://127.0.0.1:9/x", ["subscription.confirmed"])
    assert.strictEqual(foreign.status, 400)
    assert.strictEqual(foreign.json.error.param, "enabled_events")
    const adminForeign = await register(admin(), "http://127.0.0.1:9/x", ["transfer.approved"])
    assert.strictEqual(adminForeign.status, 400)
    const unknown = await register(api, "http://127.0.0.1:9/x", ["transfer.exploded"])
    assert.strictEqual(unknown.status, 400)
    const ftp = await register(api, "ftp://example.com/x", ["*"])
    assert.strictEqual(ftp.status, 400)
    assert.deepInclude(ftp.json.error, { code: "parameter_invalid", param: "url" })
    const extra = await api.request(
      "POST",
      "/webhook_endpoints",
      json({ url: "http://127.0.0.1:9/x", enabled_events: ["*"], description: "mine" })
    )
    assert.strictEqual(extra.status, 400)
    assert.deepInclude(extra.json.error, { code: "parameter_unknown", param: "description" })
    assert.strictEqual((await register(api.withKey(undefined), "http://127.0.0.1:9/x", ["*"])).status, 401)
    assert.strictEqual((await register(api.withKey("sk_nope"), "http://127.0.0.1:9/x", ["*"])).status, 401)
  })

  it("another client sees none of them", async () => {
    const other = api.withKey((await createClient(app, "other")).api_key)
    const created = await register(api, "http://127.0.0.1:9/y", ["*"])
    assert.strictEqual((await other.get(`/webhook_endpoints/${created.json.id}`)).status, 404)
    assert.strictEqual((await other.request("DELETE", `/webhook_endpoints/${created.json.id}`)).status, 404)
    assert.isFalse((await other.get("/webhook_endpoints")).json.data.some((e: any) => e.id === created.json.id))
    await api.request("DELETE", `/webhook_endpoints/${created.json.id}`)
  })
})

describe("transfer events", () => {
  it("delivers approved and declined transfers, signed, with the transfer as the API shows it", async () => {
    const client = await createClient(app, "hooks")
    const merchant = api.withKey(client.api_key)
    const created = await register(merchant, receiver.url, ["transfer.approved", "transfer.declined"])
    receiver.secret = created.json.secret
    const other = api.withKey((await createClient(app, "bystander")).api_key)

    const ids = [
      transferOf(await approved(merchant)),
      transferOf(await declined(merchant)),
      transferOf(await expired(merchant))
    ]
    await approved(other)
    await receiver.waitFor((all) => ids.every((id) => all.some((r) => r.event.data.object.id === id)))
    assert.deepStrictEqual(receiver.rejected, [])
    for (const id of ids) {
      const delivery = receiver.received.find((r) => r.event.data.object.id === id)!
      const shown = (await merchant.transfer(id)).json.payment_transfer
      assert.deepStrictEqual(delivery.event.data.object, shown)
      assert.strictEqual(delivery.event.type, `transfer.${shown.status}`)
      assert.strictEqual(delivery.id, delivery.event.id)
      assert.match(delivery.id, /^evt_[0-9A-Za-z]{24}$/)
      assert.isTrue(Math.abs(Number(delivery.timestamp) - Date.now() / 1000) < 60)
      assert.deepStrictEqual(Object.keys(delivery.event), ["id", "type", "created", "data"])
      assert.notInclude(delivery.body, "cvc")
    }
    // Nothing of the other client's arrived.
    assert.isTrue(
      receiver.received.every((r) => r.event.type.startsWith("transfer.") && ids.includes(r.event.data.object.id))
    )

    // History: newest first, by type, paged; another client sees none of it.
    const events = await merchant.get("/events")
    assert.strictEqual(events.status, 200)
    assert.deepStrictEqual(events.json.data.map((e: any) => e.data.object.id), [...ids].reverse())
    const onlyDeclined = await merchant.get("/events?type=transfer.declined")
    assert.deepStrictEqual(onlyDeclined.json.data.map((e: any) => e.type), ["transfer.declined", "transfer.declined"])
    const first = await merchant.get("/events?limit=1")
    assert.isTrue(first.json.has_more)
    const next = await merchant.get(`/events?limit=2&starting_after=${first.json.data[0].id}`)
    assert.deepStrictEqual(next.json.data.map((e: any) => e.data.object.id), [ids[1], ids[0]])
    assert.isFalse(next.json.has_more)
    const one = await merchant.get(`/events/${first.json.data[0].id}`)
    assert.deepStrictEqual(one.json, receiver.received.find((r) => r.id === first.json.data[0].id)!.event)
    assert.strictEqual((await other.get(`/events/${first.json.data[0].id}`)).status, 404)
    assert.strictEqual((await merchant.get("/events?type=nope")).status, 400)

    // Resent: the same event, the same webhook-id.
    const eventId = first.json.data[0].id
    const before = receiver.received.filter((r) => r.id === eventId).length
    const resent = await merchant.request(
      "POST",
      `/events/${eventId}/resend`,
      json({ webhook_endpoint: created.json.id })
    )
    assert.strictEqual(resent.status, 202, resent.text)
    await receiver.waitFor((all) => all.filter((r) => r.id === eventId).length === before + 1)
    const fromOther = await other.request(
      "POST",
      `/events/${eventId}/resend`,
      json({ webhook_endpoint: created.json.id })
    )
    assert.strictEqual(fromOther.status, 404)
    await merchant.request("DELETE", `/webhook_endpoints/${created.json.id}`)
  })

  it("a transfer whose answer was lost: transfer.unknown, then its reconciled outcome, once each", async () => {
    const merchant = api.withKey((await createClient(app, "hooks-unknown")).api_key)
    const created = await register(merchant, receiver.url, ["transfer.unknown", "transfer.approved"])
    receiver.secret = created.json.secret
    const card = sandboxTimeoutCards.find((c) => c.outcome._tag === "Approved")!
    const accepted = await merchant.create(transferBody({ sender_account_uri: accountUri(card.pan) }))
    assert.strictEqual(accepted.status, 202, accepted.text)
    const id = accepted.json.payment_transfer.id
    const typesOf = () =>
      receiver.received.filter((r) => r.event.data.object.id === id).map((r) => r.event.type as string)
    // Both events are due together when the reconciler settles the transfer within the worker's poll: one round
    // sends them at once, and they may arrive in either order (docs/webhooks.md). A receiver orders by `created`.
    await receiver.waitFor(() => typesOf().includes("transfer.unknown") && typesOf().includes("transfer.approved"))
    assert.deepStrictEqual(receiver.rejected, [])
    assert.deepStrictEqual([...typesOf()].sort(), ["transfer.approved", "transfer.unknown"])
    const mine = receiver.received.filter((r) => r.event.data.object.id === id)
    const unknown = mine.find((r) => r.event.type === "transfer.unknown")!
    const approved = mine.find((r) => r.event.type === "transfer.approved")!
    assert.strictEqual(unknown.event.data.object.status, "unknown")
    assert.strictEqual(approved.event.data.object.status, "approved")
    assert.isAtMost(Date.parse(unknown.event.created), Date.parse(approved.event.created))
    const events = (await merchant.get("/events")).json.data.map((e: any) => e.type)
    assert.deepStrictEqual(events, ["transfer.approved", "transfer.unknown"])
    await merchant.request("DELETE", `/webhook_endpoints/${created.json.id}`)
  }, 30_000)

  it("a receiver down for a while gets every event after it comes back, with the same webhook-id", async () => {
    const merchant = api.withKey((await createClient(app, "outage")).api_key)
    const created = await register(merchant, receiver.url, ["*"])
    receiver.secret = created.json.secret
    await receiver.down()
    const ids = await Promise.all(Array.from({ length: 20 }, () => approved(merchant).then(transferOf)))
    await new Promise((r) => setTimeout(r, 3_000))
    const failing = (await merchant.get(`/webhook_endpoints/${created.json.id}`)).json
    assert.isString(failing.failing_since)
    assert.isString(failing.last_error)
    await receiver.up()
    await receiver.waitFor((all) => ids.every((id) => all.some((r) => r.event.data.object.id === id)), 30_000)
    const events = (await merchant.get("/events?limit=100")).json.data
    for (const e of events) {
      const deliveries = receiver.received.filter((r) => r.event.data.object.id === e.data.object.id)
      assert.isTrue(deliveries.every((d) => d.id === e.id))
    }
    const recovered = (await merchant.get(`/webhook_endpoints/${created.json.id}`)).json
    assert.isUndefined(recovered.failing_since)
    assert.strictEqual(recovered.status, "enabled")
    await merchant.request("DELETE", `/webhook_endpoints/${created.json.id}`)
  }, 60_000)
})

describe("a slow endpoint", () => {
  it("holds up no other: a receiver that never answers does not delay another client's deliveries", async () => {
    const slow = await WebhookReceiver.start()
    slow.failWith = "hang"
    try {
      const stuck = api.withKey((await createClient(app, "stuck")).api_key)
      await register(stuck, slow.url, ["*"])
      const healthy = api.withKey((await createClient(app, "healthy")).api_key)
      const created = await register(healthy, receiver.url, ["*"])
      receiver.secret = created.json.secret
      await Promise.all(Array.from({ length: 40 }, () => approved(stuck)))
      const started = Date.now()
      const ids = await Promise.all(Array.from({ length: 5 }, () => approved(healthy).then(transferOf)))
      await receiver.waitFor((all) => ids.every((id) => all.some((r) => r.event.data.object.id === id)), 8_000)
      assert.isBelow(Date.now() - started, 8_000)
      await healthy.request("DELETE", `/webhook_endpoints/${created.json.id}`)
    } finally {
      await slow.down()
    }
  }, 30_000)
})

describe("subscription events", () => {
  const confirmLink = (mail: ReceivedMail) => mail.text!.match(/https?:\/\/\S+\/subscribe\/confirm\?token=[\w-]+/)![0]
  const unsubscribeLink = (mail: ReceivedMail) => mail.text!.match(/https?:\/\/\S+\/unsubscribe\?token=[\w-]+/)![0]

  it("the admin key's endpoint gets subscription.confirmed and subscription.unsubscribed", async () => {
    const created = await register(admin(), receiver.url, ["subscription.confirmed", "subscription.unsubscribed"])
    assert.strictEqual(created.status, 201, created.text)
    receiver.secret = created.json.secret
    const email = `hook.${process.pid}.${Date.now()}@example.com`
    await postForm(app.baseUrl, "/subscribe", { name: "Hook Reader", email })
    const mail = await smtp.waitFor((m) => m.envelope.to.includes(email), 10_000)
    await fetch(confirmLink(mail), { method: "POST" })
    await fetch(unsubscribeLink(mail), { method: "POST" })
    // Deliveries may arrive in any order (docs/webhooks.md): the two events are usually due in one round, sent at
    // once. A receiver orders events by `created` (two events of one millisecond tie).
    const arrived = (type: string) => (all: ReadonlyArray<ReceivedWebhook>) =>
      all.some((r) => r.event.type === type && r.event.data.object.email === email)
    await receiver.waitFor((all) => arrived("subscription.confirmed")(all) && arrived("subscription.unsubscribed")(all))
    const mine = receiver.received.filter((r) => r.event.data.object.email === email)
    const confirmed = mine.filter((r) => r.event.type === "subscription.confirmed")
    const unsubscribed = mine.filter((r) => r.event.type === "subscription.unsubscribed")
    assert.deepStrictEqual([confirmed.length, unsubscribed.length, mine.length], [1, 1, 2])
    assert.isAtMost(Date.parse(confirmed[0]!.event.created), Date.parse(unsubscribed[0]!.event.created))
    const shown = (await admin().get(`/subscriptions/${unsubscribed[0]!.event.data.object.id}`)).json.subscription
    assert.deepStrictEqual(unsubscribed[0]!.event.data.object, shown)
    // A merchant sees no subscription events.
    assert.isFalse((await api.get("/events")).json.data.some((e: any) => e.type.startsWith("subscription.")))
    assert.strictEqual((await admin().get("/events?type=subscription.confirmed")).json.data[0].data.object.email, email)
    await admin().request("DELETE", `/webhook_endpoints/${created.json.id}`)
  })
})

describe("SSRF rules by default", () => {
  it("refuses http and private addresses unless WEBHOOK_ALLOW_HTTP and WEBHOOK_ALLOW_PRIVATE are on", async () => {
    const strict = await AppProcess.start({ env: unlimitedEnv })
    try {
      const as = new MerchantApi(strict.baseUrl, firstApiKey(strict.output))
      for (
        const url of [
          "http://example.com/x",
          "https://127.0.0.1/x",
          "https://10.1.2.3/x",
          "https://[::1]/x",
          "https://169.254.169.254/latest",
          "https://localhost/x",
          "https://user:pw@example.com/x"
        ]
      ) {
        const refused = await register(as, url, ["*"])
        assert.strictEqual(refused.status, 400, url)
        assert.strictEqual(refused.json.error.code, "url_refused", url)
      }
    } finally {
      await strict.stop()
    }
  })
})
