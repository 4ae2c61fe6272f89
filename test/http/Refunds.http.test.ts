import { assert, describe, it } from "@effect/vitest"
import { afterAll, beforeAll } from "vitest"
import { AdminKey, AppProcess } from "../support/AppProcess.ts"
import {
  accountUri,
  createClient,
  firstApiKey,
  MerchantApi,
  type Received,
  reconcileEnv,
  transferBody,
  uniqueReference,
  unlimitedEnv
} from "../support/Payments.ts"
import { webhookEnv, WebhookReceiver } from "../support/WebhookReceiver.ts"

// Black-box: refunds over the real socket of the app as a process (any runtime, any database), with a real
// webhook receiver that verifies every delivery with the standardwebhooks package.
let app: AppProcess
let api: MerchantApi
let receiver: WebhookReceiver

// The sandbox cards whose charges are approved and whose refunds fail, or time out and then succeed.
const RefundFailingCard = "4000000000005126"
const RefundTimeoutCard = "4000000000007726"

beforeAll(async () => {
  receiver = await WebhookReceiver.start()
  app = await AppProcess.start({ env: { ...unlimitedEnv, ...reconcileEnv, ...webhookEnv } })
  api = new MerchantApi(app.baseUrl, firstApiKey(app.output))
})
afterAll(async () => {
  await app?.stop()
  await receiver?.down()
})

// A client of its own, so that its lists, balances and events hold only what the test made.
const merchant = async (name: string) => api.withKey((await createClient(app, name)).api_key)

const approved = async (as: MerchantApi, overrides: Parameters<typeof transferBody>[0] = {}) => {
  const created = await as.create(transferBody(overrides))
  assert.strictEqual(created.status, 201, created.text)
  return created.json.payment_transfer.id as string
}
const transferOf = async (as: MerchantApi, id: string) => (await as.transfer(id)).json.payment_transfer

const assertError = (response: Received, status: number, code: string, param?: string) => {
  assert.strictEqual(response.status, status, response.text)
  const { error } = response.json
  assert.strictEqual(error.code, code, response.text)
  assert.strictEqual(error.param, param, response.text)
  assert.strictEqual(error.doc_url, `${app.baseUrl}/docs/errors#${code}`)
  assert.strictEqual(error.request_id, response.headers.get("x-request-id"))
  return error
}

const assertRefund = (response: Received, transfer: string, amount: string, status = 201) => {
  assert.strictEqual(response.status, status, response.text)
  assert.deepStrictEqual(Object.keys(response.json), ["refund"])
  const r = response.json.refund
  assert.match(r.id, /^re_[0-9A-Za-z]{24}$/)
  assert.strictEqual(r.transfer, transfer)
  assert.strictEqual(r.amount, amount)
  assert.strictEqual(response.headers.get("location"), `${app.baseUrl}/merchant/refunds/${r.id}`)
  return r
}

describe("refunds", () => {
  it("refunds a whole transfer; then it is refunded and refuses another", async () => {
    const as = await merchant("full")
    const id = await approved(as)
    assert.deepInclude(await transferOf(as, id), { amount_refunded: "0.00", refunded: false })
    const r = assertRefund(await as.refund(id, { reason: "requested_by_customer" }), id, "12.30")
    assert.deepInclude(r, { currency: "USD", status: "succeeded", reason: "requested_by_customer" })
    assert.isUndefined(r.failure_reason)
    assert.isFalse(Number.isNaN(Date.parse(r.created)))
    assert.deepInclude(await transferOf(as, id), { amount_refunded: "12.30", refunded: true })
    const again = assertError(await as.refund(id), 400, "transfer_already_refunded")
    assert.include(again.message, id)
  })

  it("refunds in parts until nothing is left; more than is left is amount_too_large, naming what is left", async () => {
    const as = await merchant("parts")
    const id = await approved(as, { amount: "10.00" })
    assertRefund(await as.refund(id, { amount: "3.00" }), id, "3.00")
    assertRefund(await as.refund(id, { amount: "2.5", reason: "duplicate" }), id, "2.50")
    assert.deepInclude(await transferOf(as, id), { amount_refunded: "5.50", refunded: false })
    const tooLarge = assertError(await as.refund(id, { amount: "4.51" }), 400, "amount_too_large", "amount")
    assert.include(tooLarge.message, "4.50")
    assertRefund(await as.refund(id, { amount: "4.50" }), id, "4.50")
    assert.deepInclude(await transferOf(as, id), { amount_refunded: "10.00", refunded: true })
    assertError(await as.refund(id, { amount: "0.01" }), 400, "transfer_already_refunded")
  })

  it("refuses a transfer that is not approved, with its status in the message", async () => {
    const as = await merchant("declined")
    const declined = await as.create(transferBody({ sender_account_uri: accountUri("4000000000000002") }))
    assert.strictEqual(declined.status, 402, declined.text)
    const error = assertError(await as.refund(declined.json.error.transfer), 400, "transfer_not_refundable")
    assert.include(error.message, "declined")
  })

  it("refuses bad parameters: unknown members, a number, an unknown reason, too many decimals, zero", async () => {
    const as = await merchant("params")
    const id = await approved(as)
    assertError(await as.refund(id, { amount: "1.00", note: "x" }), 400, "parameter_unknown", "note")
    assertError(await as.refund(id, { amount: 1 }), 400, "parameter_invalid", "amount")
    assertError(await as.refund(id, { reason: "changed_mind" }), 400, "parameter_invalid", "reason")
    assertError(await as.refund(id, { amount: "1.001" }), 400, "parameter_invalid", "amount")
    assertError(await as.refund(id, { amount: "0" }), 400, "parameter_invalid", "amount")
    // An empty body is no parameters: all that is left.
    const whole = await as.request("POST", `/merchant/transfers/payment/${id}/refunds`)
    assertRefund(whole, id, "12.30")
  })

  it("refunds whole numbers only in JPY, and three decimals in KWD", async () => {
    const as = await merchant("exponents")
    const jpy = await approved(as, { amount: "1000", currency: "JPY" })
    assertError(await as.refund(jpy, { amount: "1.5" }), 400, "parameter_invalid", "amount")
    assert.deepInclude(assertRefund(await as.refund(jpy, { amount: "400" }), jpy, "400"), { currency: "JPY" })
    assert.deepInclude(await transferOf(as, jpy), { amount_refunded: "400", refunded: false })
    const kwd = await approved(as, { amount: "1.234", currency: "KWD" })
    assertRefund(await as.refund(kwd, { amount: "0.234" }), kwd, "0.234")
    assertRefund(await as.refund(kwd), kwd, "1.000")
    assert.deepInclude(await transferOf(as, kwd), { amount_refunded: "1.234", refunded: true })
  })

  it("another client's transfer or refund, or none, is 404 resource_missing", async () => {
    const owner = await merchant("owner")
    const stranger = await merchant("stranger")
    const id = await approved(owner)
    const r = assertRefund(await owner.refund(id, { amount: "1.00" }), id, "1.00")
    assertError(await stranger.refund(id), 404, "resource_missing", "id")
    assertError(await stranger.refunds(id), 404, "resource_missing", "id")
    assertError(await stranger.refundById(r.id), 404, "resource_missing", "id")
    assertError(await owner.refund(`tr_${"0".repeat(24)}`), 404, "resource_missing", "id")
    assertError(await owner.refund("not-an-id"), 404, "resource_missing", "id")
    assertError(await owner.refundById("re_nope"), 404, "resource_missing", "id")
    assert.deepInclude(await transferOf(owner, id), { amount_refunded: "1.00" })
  })

  it("gives the money back when the network refuses the refund: 201 failed, amount_refunded unchanged", async () => {
    const as = await merchant("failing")
    const id = await approved(as, { sender_account_uri: accountUri(RefundFailingCard) })
    const r = assertRefund(await as.refund(id, { amount: "5.00" }), id, "5.00")
    assert.deepInclude(r, { status: "failed", failure_reason: "expired_or_canceled_card" })
    assert.deepInclude(await transferOf(as, id), { amount_refunded: "0.00", refunded: false })
    assert.deepStrictEqual((await as.refundById(r.id)).json.refund, r)
    // Nothing was taken back: all of it is still there to refund (and fails again).
    assertRefund(await as.refund(id), id, "12.30")
    const metrics = await (await fetch(`${app.baseUrl}/metrics`, { headers: { authorization: `Bearer ${AdminKey}` } }))
      .text()
    assert.match(metrics, /^refunds_total\{[^}]*failure_reason="expired_or_canceled_card"[^}]*\} [1-9]/m)
  })

  it("concurrent refunds never take back more than the transfer's amount", async () => {
    const as = await merchant("race")
    const id = await approved(as, { amount: "10.00" })
    const answers = await Promise.all(Array.from({ length: 8 }, () => as.refund(id, { amount: "3.00" })))
    const made = answers.filter((a) => a.status === 201)
    assert.strictEqual(made.length, 3, answers.map((a) => a.text).join("\n"))
    for (const refused of answers.filter((a) => a.status !== 201)) {
      assertError(refused, 400, "amount_too_large", "amount")
    }
    assert.deepInclude(await transferOf(as, id), { amount_refunded: "9.00", refunded: false })
    assertRefund(await as.refund(id), id, "1.00")
  })

  it("keeps balances net of refunds", async () => {
    const as = await merchant("balance")
    const first = await approved(as, { amount: "10.00" })
    await approved(as, { amount: "10.00" })
    assertRefund(await as.refund(first, { amount: "4.00" }), first, "4.00")
    const { balances } = (await as.balance()).json
    assert.deepStrictEqual(balances, [{ merchant_id: "merchant_1", currency: "USD", amount: "16.00" }])
  })
})

describe("a refund whose answer was lost", () => {
  it("is 202 unknown and counts against the transfer, then is reconciled as succeeded (refund.updated)", async () => {
    const as = await merchant("refund-unknown")
    const registered = await as.request("POST", "/webhook_endpoints", {
      body: JSON.stringify({ url: receiver.url, enabled_events: ["refund.created", "refund.updated"] }),
      headers: { "content-type": "application/json" }
    })
    receiver.secret = registered.json.secret
    const id = await approved(as, { sender_account_uri: accountUri(RefundTimeoutCard) })
    const key = uniqueReference("unknown-key")
    const accepted = await as.refund(id, { amount: "2.00" }, { idempotencyKey: key })
    const r = assertRefund(accepted, id, "2.00", 202)
    assert.strictEqual(r.status, "unknown")
    assert.deepInclude(await transferOf(as, id), { amount_refunded: "2.00" })
    const deadline = Date.now() + 20_000
    let shown = r
    while (shown.status !== "succeeded" && Date.now() < deadline) {
      await new Promise((ok) => setTimeout(ok, 200))
      shown = (await as.refundById(r.id)).json.refund
    }
    assert.strictEqual(shown.status, "succeeded")
    assert.deepInclude(await transferOf(as, id), { amount_refunded: "2.00" })
    // The key replays the refund as it is now: made, 201.
    const replayed = await as.refund(id, { amount: "2.00" }, { idempotencyKey: key })
    assert.strictEqual(replayed.status, 201, replayed.text)
    assert.strictEqual(replayed.headers.get("idempotent-replayed"), "true")
    assert.deepStrictEqual(replayed.json.refund, shown)
    const typesOf = () => receiver.received.filter((d) => d.event.data.object.id === r.id).map((d) => d.event.type)
    // Both may be due in one round of deliveries and arrive in either order (docs/webhooks.md): `created` orders.
    await receiver.waitFor(() => typesOf().length === 2)
    assert.deepStrictEqual([...typesOf()].sort(), ["refund.created", "refund.updated"])
    const created = receiver.received.find((d) => d.event.type === "refund.created" && d.event.data.object.id === r.id)
    const updated = receiver.received.find((d) => d.event.type === "refund.updated" && d.event.data.object.id === r.id)
    assert.isAtMost(Date.parse(created!.event.created), Date.parse(updated!.event.created))
    assert.deepStrictEqual(updated!.event.data.object, shown)
    await as.request("DELETE", `/webhook_endpoints/${registered.json.id}`)
  })
})

describe("Idempotency-Key on refunds", () => {
  it("replays the first answer byte for byte; another body with the key is idempotency_key_reused", async () => {
    const as = await merchant("idempotent")
    const id = await approved(as)
    const key = uniqueReference("refund-key")
    const first = await as.refund(id, { amount: "2.00" }, { idempotencyKey: key })
    const r = assertRefund(first, id, "2.00")
    assert.isNull(first.headers.get("idempotent-replayed"))
    const replayed = await as.refund(id, { amount: "2.00" }, { idempotencyKey: key })
    assert.strictEqual(replayed.status, 201)
    assert.strictEqual(replayed.text, first.text)
    assert.strictEqual(replayed.headers.get("idempotent-replayed"), "true")
    assert.strictEqual(replayed.headers.get("location"), first.headers.get("location"))
    assertError(await as.refund(id, { amount: "3.00" }, { idempotencyKey: key }), 422, "idempotency_key_reused")
    // The key of a transfer is another request too.
    const transferKey = uniqueReference("transfer-key")
    assert.strictEqual((await as.create(transferBody(), { idempotencyKey: transferKey })).status, 201)
    assertError(await as.refund(id, {}, { idempotencyKey: transferKey }), 422, "idempotency_key_reused")
    const listed = (await as.refunds(id)).json.data.map((x: any) => x.id)
    assert.deepStrictEqual(listed, [r.id])
  })

  it("makes one refund from 12 concurrent requests with one key; the others are replays or in use", async () => {
    const as = await merchant("in-use")
    const id = await approved(as)
    const key = uniqueReference("busy-key")
    const answers = await Promise.all(
      Array.from({ length: 12 }, () => as.refund(id, { amount: "1.00" }, { idempotencyKey: key }))
    )
    const made = answers.filter((a) => a.status === 201)
    const inUse = answers.filter((a) => a.status === 409)
    assert.strictEqual(made.length + inUse.length, 12, answers.map((a) => `${a.status} ${a.text}`).join("\n"))
    assert.strictEqual(new Set(made.map((a) => a.text)).size, 1)
    for (const a of inUse) assertError(a, 409, "idempotency_key_in_use")
    assert.deepInclude(await transferOf(as, id), { amount_refunded: "1.00" })
    assert.strictEqual((await as.refunds(id)).json.data.length, 1)
  })

  it("a refusal keeps no answer: the key is free for the request that follows", async () => {
    const as = await merchant("released")
    const id = await approved(as)
    const key = uniqueReference("refused-key")
    assertError(await as.refund(id, { amount: "99.00" }, { idempotencyKey: key }), 400, "amount_too_large", "amount")
    const made = await as.refund(id, { amount: "1.00" }, { idempotencyKey: key })
    assertRefund(made, id, "1.00")
    assert.isNull(made.headers.get("idempotent-replayed"))
  })
})

describe("refund lookups", () => {
  it("lists a transfer's refunds newest first, a page at a time", async () => {
    const as = await merchant("lists")
    const id = await approved(as, { amount: "10.00" })
    const other = await approved(as, { amount: "10.00" })
    const made: Array<string> = []
    for (const amount of ["1.00", "2.00", "3.00"]) {
      made.push(assertRefund(await as.refund(id, { amount }), id, amount).id)
    }
    const foreign = assertRefund(await as.refund(other, { amount: "1.00" }), other, "1.00").id
    const all = await as.refunds(id)
    assert.strictEqual(all.status, 200, all.text)
    assert.deepStrictEqual(Object.keys(all.json), ["object", "data", "has_more"])
    assert.strictEqual(all.json.object, "list")
    assert.deepStrictEqual(all.json.data.map((r: any) => r.id), [...made].reverse())
    assert.isFalse(all.json.has_more)
    const page = await as.refunds(id, { limit: 2 })
    assert.deepStrictEqual(page.json.data.map((r: any) => r.id), [made[2], made[1]])
    assert.isTrue(page.json.has_more)
    const next = await as.refunds(id, { limit: 2, starting_after: made[1]! })
    assert.deepStrictEqual(next.json.data.map((r: any) => r.id), [made[0]])
    assert.isFalse(next.json.has_more)
    assertError(await as.refunds(id, { starting_after: foreign }), 404, "resource_missing", "starting_after")
    const malformed = assertError(
      await as.refunds(id, { starting_after: "tr_x" }),
      400,
      "parameter_invalid",
      "starting_after"
    )
    assert.include(malformed.message, "refund id")
    assertError(await as.refunds(id, { limit: 0 }), 400, "parameter_invalid", "limit")
    assertError(await as.refunds(id, { order: "asc" }), 400, "parameter_unknown", "order")
    assert.deepStrictEqual((await as.refunds(`tr_${"1".repeat(24)}`)).status, 404)
  })

  it("GET /merchant/refunds/{id} shows the refund as it was answered, conditionally", async () => {
    const as = await merchant("get")
    const id = await approved(as)
    const created = await as.refund(id, { amount: "1.23", reason: "fraudulent" })
    const r = assertRefund(created, id, "1.23")
    const got = await as.refundById(r.id)
    assert.strictEqual(got.status, 200)
    assert.strictEqual(got.text, created.text)
    const etag = got.headers.get("etag")!
    assert.isString(etag)
    assert.strictEqual((await as.refundById(r.id, { "if-none-match": etag })).status, 304)
    const head = await as.request("HEAD", `/merchant/refunds/${r.id}`)
    assert.strictEqual(head.status, 200)
    assert.strictEqual(head.text, "")
  })

  it("answers the methods a refunds path does not take with 405 and Allow", async () => {
    const as = await merchant("methods")
    const id = await approved(as)
    const wrong = await as.request("DELETE", `/merchant/transfers/payment/${id}/refunds`)
    assertError(wrong, 405, "method_not_allowed")
    assert.strictEqual(wrong.headers.get("allow"), "GET, HEAD, POST, OPTIONS, TRACE")
    const options = await as.request("OPTIONS", `/merchant/refunds/re_${"a".repeat(24)}`)
    assert.strictEqual(options.status, 204)
    assert.strictEqual(options.headers.get("allow"), "GET, HEAD, OPTIONS, TRACE")
  })
})

describe("refund events", () => {
  it("delivers refund.created, signed, with the refund as the API shows it", async () => {
    const as = await merchant("refund-hooks")
    const registered = await as.request("POST", "/webhook_endpoints", {
      body: JSON.stringify({ url: receiver.url, enabled_events: ["refund.created", "refund.updated"] }),
      headers: { "content-type": "application/json" }
    })
    assert.strictEqual(registered.status, 201, registered.text)
    receiver.secret = registered.json.secret
    const fine = await approved(as)
    const failing = await approved(as, { sender_account_uri: accountUri(RefundFailingCard) })
    const ids = [
      assertRefund(await as.refund(fine, { amount: "1.00" }), fine, "1.00").id,
      assertRefund(await as.refund(failing), failing, "12.30").id
    ]
    await receiver.waitFor((all) => ids.every((id) => all.some((r) => r.event.data.object.id === id)))
    assert.deepStrictEqual(receiver.rejected, [])
    for (const id of ids) {
      const [delivery, ...more] = receiver.received.filter((r) => r.event.data.object.id === id)
      assert.strictEqual(more.length, 0, "one event per refund answered at once")
      assert.strictEqual(delivery!.event.type, "refund.created")
      assert.deepStrictEqual(delivery!.event.data.object, (await as.refundById(id)).json.refund)
    }
    const history = await as.get("/events?type=refund.created")
    assert.deepStrictEqual(history.json.data.map((e: any) => e.data.object.id), [...ids].reverse())
    // refund.* belongs to merchant keys: the admin key cannot ask for it.
    const admin = await as.withKey(AdminKey).request("POST", "/webhook_endpoints", {
      body: JSON.stringify({ url: receiver.url, enabled_events: ["refund.created"] }),
      headers: { "content-type": "application/json" }
    })
    assertError(admin, 400, "parameter_invalid", "enabled_events")
    await as.request("DELETE", `/webhook_endpoints/${registered.json.id}`)
  })
})
