import { assert, describe, it } from "@effect/vitest"
import { afterAll, beforeAll, beforeEach } from "vitest"
import { AppProcess } from "../support/AppProcess.ts"
import {
  accountUri,
  createClient,
  MerchantApi,
  randomPan,
  transferBody,
  uniqueReference,
  unlimitedEnv
} from "../support/Payments.ts"
import { TestProcessor } from "../support/TestProcessor.ts"

// Black-box with a real card processor behind the app (CARD_NETWORK=http): what the processor was asked to
// authorize is what a cardholder would be charged, so these tests count authorizations, not only rows.
let processor: TestProcessor
let app: AppProcess
let api: MerchantApi

beforeAll(async () => {
  processor = await TestProcessor.start()
  app = await AppProcess.start({ env: { ...unlimitedEnv, CARD_NETWORK: "http", CARD_NETWORK_URL: processor.url } })
  // Off the sandbox no first key is printed: the client comes from the CLI, as in production.
  api = new MerchantApi(app.baseUrl, (await createClient(app, "processor-suite")).api_key)
})
afterAll(async () => {
  await app?.stop()
  await processor?.stop()
})
beforeEach(() => processor.reset())

const rowsOf = (reference: string) => app.query("SELECT id FROM transfers WHERE reference = ?", reference)

describe("with a card processor", () => {
  it("authorizes once, records once and answers 201 for one request", async () => {
    const body = transferBody({ sender_account_uri: accountUri(randomPan()) })
    const response = await api.create(body)
    assert.strictEqual(response.status, 201, response.text)
    assert.strictEqual(processor.authorizations, 1)
    assert.strictEqual(rowsOf(body.payment_transfer.reference as string).length, 1)
    const [asked] = processor.requests
    assert.strictEqual(asked!.amount, "1230")
    assert.strictEqual(asked!.currency, "USD")
    assert.strictEqual(asked!.merchantId, "merchant_1")
    assert.strictEqual(asked!.transferId, response.json.payment_transfer.id)
  })

  it("answers 503 when the processor is down, keeps nothing, and lets the same key retry", async () => {
    const body = transferBody({ sender_account_uri: accountUri(randomPan()) })
    const idempotencyKey = `key-${uniqueReference("outage")}`
    processor.failNext(10, 503)
    const down = await api.create(body, { idempotencyKey })
    assert.strictEqual(down.status, 503, down.text)
    assert.strictEqual(down.json.error.code, "card_network_unavailable")
    assert.strictEqual(rowsOf(body.payment_transfer.reference as string).length, 0)
    processor.reset()
    const retry = await api.create(body, { idempotencyKey })
    assert.strictEqual(retry.status, 201, retry.text)
    assert.isNull(retry.headers.get("idempotent-replayed"))
    assert.strictEqual(processor.authorizations, 1)
    assert.strictEqual(rowsOf(body.payment_transfer.reference as string).length, 1)
  })

  it("authorizes once for 20 concurrent requests with one Idempotency-Key", async () => {
    const body = transferBody({ sender_account_uri: accountUri(randomPan()) })
    const idempotencyKey = `key-${uniqueReference("processor")}`
    const responses = await Promise.all(Array.from({ length: 20 }, () => api.create(body, { idempotencyKey })))
    assert.isTrue(responses.every((r) => r.status === 201 || r.status === 409))
    assert.strictEqual(rowsOf(body.payment_transfer.reference as string).length, 1)
    assert.strictEqual(processor.authorizations, 1)
  })

  it("answers a used reference with 409 without asking the processor", async () => {
    const body = transferBody({ sender_account_uri: accountUri(randomPan()) })
    assert.strictEqual((await api.create(body)).status, 201)
    processor.reset()
    const again = await api.create(body)
    assert.strictEqual(again.status, 409)
    assert.strictEqual(again.json.error.code, "duplicate_reference")
    assert.strictEqual(processor.authorizations, 0)
  })

  // Regression test: the reference used to be checked, then the card authorized, then the row inserted, so
  // concurrent requests with one reference each charged the card. Now it is reserved before the network call.
  it("authorizes once for 10 concurrent requests with one reference and no Idempotency-Key", async () => {
    const body = transferBody({ sender_account_uri: accountUri(randomPan()) })
    const responses = await Promise.all(Array.from({ length: 10 }, () => api.create(body)))
    const created = responses.filter((r) => r.status === 201)
    assert.strictEqual(created.length, 1, responses.map((r) => `${r.status} ${r.text}`).join("\n"))
    for (const r of responses.filter((r) => r.status !== 201)) {
      assert.strictEqual(r.status, 409)
      assert.strictEqual(r.json.error.code, "duplicate_reference")
      assert.include(r.json.error.message, created[0]!.json.payment_transfer.id)
    }
    assert.strictEqual(rowsOf(body.payment_transfer.reference as string).length, 1)
    assert.strictEqual(processor.authorizations, 1, `the processor authorized ${processor.authorizations} times`)
  })
})
