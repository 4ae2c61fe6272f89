import { assert, describe, it } from "@effect/vitest"
import { afterAll, beforeAll, beforeEach } from "vitest"
import { AppProcess } from "../support/AppProcess.ts"
import {
  accountUri,
  createClient,
  MerchantApi,
  randomPan,
  reconcileEnv,
  transferBody,
  uniqueReference,
  unlimitedEnv
} from "../support/Payments.ts"
import { TestProcessor } from "../support/TestProcessor.ts"

// Black-box refunds with a real card processor behind the app (CARD_NETWORK=http): what the processor was
// asked to refund is what the cardholder gets back, so these tests count its refunds, not only the answers.
let processor: TestProcessor
let app: AppProcess
let api: MerchantApi

beforeAll(async () => {
  processor = await TestProcessor.start()
  app = await AppProcess.start({
    env: { ...unlimitedEnv, ...reconcileEnv, CARD_NETWORK: "http", CARD_NETWORK_URL: processor.url }
  })
  api = new MerchantApi(app.baseUrl, (await createClient(app, "processor-refunds")).api_key)
})
afterAll(async () => {
  await app?.stop()
  await processor?.stop()
})
beforeEach(() => processor.reset())

const approved = async () => {
  const created = await api.create(transferBody({ sender_account_uri: accountUri(randomPan()) }))
  assert.strictEqual(created.status, 201, created.text)
  return created.json.payment_transfer.id as string
}
const amountRefunded = async (id: string) => (await api.transfer(id)).json.payment_transfer.amount_refunded

describe("refunds with a card processor", () => {
  it("asks the processor once, by the refund's id, and answers 201", async () => {
    const id = await approved()
    const made = await api.refund(id, { amount: "2.30" })
    assert.strictEqual(made.status, 201, made.text)
    assert.strictEqual(made.json.refund.status, "succeeded")
    assert.strictEqual(processor.refunds, 1)
    const asked = processor.requests.find((r) => r.kind === "refund")
    assert.strictEqual(asked?.refundId, made.json.refund.id)
    assert.strictEqual(await amountRefunded(id), "2.30")
  })

  it("answers 503 when the processor refuses the call, keeps no refund, and lets the same key retry", async () => {
    const id = await approved()
    const idempotencyKey = uniqueReference("refund-refused")
    processor.failNext(1, 401)
    const refused = await api.refund(id, { amount: "1.00" }, { idempotencyKey })
    assert.strictEqual(refused.status, 503, refused.text)
    assert.strictEqual(refused.json.error.code, "card_network_unavailable")
    assert.strictEqual(await amountRefunded(id), "0.00")
    assert.deepStrictEqual((await api.refunds(id)).json.data, [])
    processor.reset()
    const retry = await api.refund(id, { amount: "1.00" }, { idempotencyKey })
    assert.strictEqual(retry.status, 201, retry.text)
    assert.isNull(retry.headers.get("idempotent-replayed"))
    assert.strictEqual(processor.refunds, 1)
  })

  it("answers 202 unknown when the processor does not answer, counts it, and reconciles it", async () => {
    const id = await approved()
    const idempotencyKey = uniqueReference("refund-hung")
    processor.hangNext(1)
    const accepted = await api.refund(id, { amount: "3.00" }, { idempotencyKey })
    assert.strictEqual(accepted.status, 202, accepted.text)
    const refund = accepted.json.refund
    assert.strictEqual(refund.status, "unknown")
    assert.strictEqual(await amountRefunded(id), "3.00")
    const replay = await api.refund(id, { amount: "3.00" }, { idempotencyKey })
    assert.strictEqual(replay.status, 202, replay.text)
    assert.strictEqual(replay.headers.get("idempotent-replayed"), "true")
    processor.decideHung()
    const deadline = Date.now() + 20_000
    let shown = refund
    while (shown.status === "unknown" && Date.now() < deadline) {
      await new Promise((ok) => setTimeout(ok, 200))
      shown = (await api.refundById(refund.id)).json.refund
    }
    assert.strictEqual(shown.status, "succeeded")
    assert.strictEqual(processor.refunds, 1)
    assert.strictEqual(await amountRefunded(id), "3.00")
    const final = await api.refund(id, { amount: "3.00" }, { idempotencyKey })
    assert.strictEqual(final.status, 201, final.text)
    assert.deepStrictEqual(final.json.refund, shown)
  }, 40_000)
})
