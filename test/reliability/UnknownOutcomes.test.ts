import { assert, describe, it } from "@effect/vitest"
import { afterEach } from "vitest"
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

// No money in an unknown state: whatever a kill -9 interrupts (a request between reserving and settling, or a
// transfer between its time-out and its reconciliation), once the service is back and the processor answers,
// every transfer is approved or declined as the processor decided, and a retry of the request gets that.
const cleanup: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step()
})

const startProcessor = async (answerDelayMs?: number) => {
  const processor = await TestProcessor.start(answerDelayMs === undefined ? {} : { answerDelayMs })
  cleanup.push(() => processor.stop())
  return processor
}
const startApp = async (processor: TestProcessor, dataDir?: string) => {
  const app = await AppProcess.start({
    env: { ...unlimitedEnv, ...reconcileEnv, CARD_NETWORK: "http", CARD_NETWORK_URL: processor.url },
    ...(dataDir ? { dataDir } : {})
  })
  cleanup.push(() => app.stop())
  return app
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const unsettled = (app: AppProcess) =>
  Number(
    app.query<{ n: unknown }>("SELECT count(*) AS n FROM transfers WHERE status IN ('pending', 'unknown')")[0]!.n
  )
const waitUntilSettled = async (app: AppProcess, timeoutMs: number) => {
  const deadline = Date.now() + timeoutMs
  while (unsettled(app) > 0) {
    if (Date.now() > deadline) throw new Error(`${unsettled(app)} transfers still pending or unknown`)
    await sleep(250)
  }
}

describe("unknown outcomes across kill -9", () => {
  it(
    "a transfer killed between its time-out and its reconciliation reconciles after restart",
    { timeout: 90_000 },
    async () => {
      const processor = await startProcessor()
      const first = await startApp(processor)
      const api = new MerchantApi(first.baseUrl, (await createClient(first, "kill-unknown")).api_key)
      const body = transferBody({ sender_account_uri: accountUri(randomPan()) })
      const idempotencyKey = `key-${uniqueReference("kill-unknown")}`
      processor.hangNext(1)
      const accepted = await api.create(body, { idempotencyKey })
      assert.strictEqual(accepted.status, 202, accepted.text)
      const id = accepted.json.payment_transfer.id
      await first.kill9()
      assert.strictEqual(
        first.query<{ status: string }>("SELECT status FROM transfers WHERE id = ?", id)[0]!.status,
        "unknown"
      )
      // The processor decides while the service is down.
      processor.decideHung()
      const second = await startApp(processor, first.dataDir)
      const after = new MerchantApi(second.baseUrl, api.key)
      const settled = await after.settled(id)
      assert.strictEqual(settled.status, "approved")
      assert.strictEqual(processor.authorizations, 1)
      const replay = await after.create(body, { idempotencyKey })
      assert.strictEqual(replay.status, 201, replay.text)
      assert.strictEqual(replay.json.payment_transfer.id, id)
    }
  )

  it(
    "kill -9 between reserve and settle under load (32 clients, repeated): nothing stays pending, retries get the outcome",
    { timeout: 300_000 },
    async () => {
      const cycles = Number(process.env.KILL_CYCLES ?? 3)
      // Decided on arrival, answered 300 ms later: a kill meanwhile leaves charges whose answers were never read.
      const processor = await startProcessor(300)
      let app = await startApp(processor)
      const key = (await createClient(app, "kill-load")).api_key
      const sent: Array<{ body: ReturnType<typeof transferBody>; idempotencyKey?: string; answered?: number }> = []
      let inFlightAtKill = 0
      for (let cycle = 0; cycle < cycles; cycle++) {
        const api = new MerchantApi(app.baseUrl, key)
        let stopping = false
        const client = async (n: number) => {
          while (!stopping) {
            const body = transferBody({
              sender_account_uri: accountUri(n % 5 === 0 ? "4000000000000002" : randomPan())
            })
            const request: (typeof sent)[number] = n % 2 === 0
              ? { body, idempotencyKey: `key-${uniqueReference("load")}` }
              : { body }
            sent.push(request)
            try {
              const r = await api.create(
                body,
                request.idempotencyKey === undefined ? {} : { idempotencyKey: request.idempotencyKey }
              )
              request.answered = r.status
            } catch {
              return
            }
          }
        }
        const clients = Array.from({ length: 32 }, (_, n) => client(n))
        await sleep(1_000 + Math.floor(Math.random() * 500))
        stopping = true
        await app.kill9()
        await Promise.all(clients)
        inFlightAtKill += unsettled(app)
        app = await startApp(processor, app.dataDir)
      }
      assert.isAbove(inFlightAtKill, 0, "some kill hit requests between reserve and settle")
      await waitUntilSettled(app, 30_000)

      // Every record is what the processor decided (a random card approved, ...0002 declined), and a transfer
      // it never received is declined as a processing error: no charge without its approved record.
      // The card each reference was sent with says the decision (a random card can end in 0002 too, so the last
      // four digits the processor keeps are not enough).
      const declining = new Set(
        sent.filter((s) => String(s.body.payment_transfer.sender_account_uri).startsWith("pan:4000000000000002;"))
          .map((s) => s.body.payment_transfer.reference as string)
      )
      const decided = new Set(processor.requests.filter((r) => r.handling === "decided").map((r) => r.transferId))
      const rows = app.query<
        { id: string; reference: string; status: string; failure_code: string | null; reconciled_at: unknown }
      >("SELECT id, reference, status, failure_code, reconciled_at FROM transfers")
      for (const row of rows) {
        if (!decided.has(row.id)) {
          assert.deepStrictEqual([row.status, row.failure_code], ["declined", "processing_error"])
        } else assert.strictEqual(row.status, declining.has(row.reference) ? "declined" : "approved", row.id)
      }
      assert.strictEqual(
        rows.filter((r) => decided.has(r.id)).length,
        decided.size,
        "every authorization has its record"
      )
      assert.isAbove(rows.filter((r) => r.reconciled_at !== null).length, 0)

      // Every request that got no answer, retried with its key or without: the real outcome, never a 409 about a
      // reservation its request never settled.
      const api = new MerchantApi(app.baseUrl, key)
      const unanswered = sent.filter((s) => s.answered === undefined)
      assert.isAbove(unanswered.length, 0)
      for (const request of unanswered) {
        const retry = await api.create(
          request.body,
          request.idempotencyKey === undefined ? {} : { idempotencyKey: request.idempotencyKey }
        )
        const reference = request.body.payment_transfer.reference as string
        const [row] = app.query<{ id: string; reconciled_at: unknown }>(
          "SELECT id, reconciled_at FROM transfers WHERE reference = ?",
          reference
        )
        // Without a key, a transfer that its own request settled (the kill only lost the answer on its way) is
        // a used reference, as before: 409 naming it. One its request never settled answers with its outcome.
        if (request.idempotencyKey === undefined && retry.status === 409) {
          assert.isNull(row!.reconciled_at, retry.text)
          assert.include(retry.json.error.message, row!.id)
          continue
        }
        assert.oneOf(retry.status, [201, 402], retry.text)
        const id = retry.status === 201 ? retry.json.payment_transfer.id : retry.json.error.transfer
        assert.strictEqual(id, row!.id)
      }
      assert.strictEqual(unsettled(app), 0)
    }
  )
})
