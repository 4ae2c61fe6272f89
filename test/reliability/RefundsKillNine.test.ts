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

// kill -9 during refunds under load, again and again, with a card processor that decides a refund when it
// arrives and answers it 300 ms later: whatever a crash interrupts (a refund counted and not yet sent, sent
// and not yet answered), once the service is back every refund is what the processor did (succeeded if it got
// it, failed with `unknown` if it never did), no transfer gives back more than it took, a transfer's amount
// refunded is exactly what the processor refunded, and no Idempotency-Key made two refunds.
const cleanup: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step()
})
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const cycles = Number(process.env.KILL_CYCLES ?? 3)

interface Sent {
  readonly transfer: string
  readonly body: { readonly amount?: string }
  readonly idempotencyKey: string | undefined
  answered?: number
}

describe("refunds across kill -9", () => {
  it(
    `no refund lost or doubled over ${cycles} crashes under 32 clients`,
    { timeout: 300_000 },
    async () => {
      const processor = await TestProcessor.start({ answerDelayMs: 300 })
      cleanup.push(() => processor.stop())
      const start = async (dataDir?: string) => {
        const app = await AppProcess.start({
          env: { ...unlimitedEnv, ...reconcileEnv, CARD_NETWORK: "http", CARD_NETWORK_URL: processor.url },
          ...(dataDir === undefined ? {} : { dataDir })
        })
        cleanup.push(() => app.stop())
        return app
      }
      let app = await start()
      const key = (await createClient(app, "kill-refunds")).api_key
      // Transfers of 100.00, refunded 1.00 at a time (or all that is left) by every client at once: enough that
      // refunds are still in flight at each crash (twelve of 12.30 could all be refunded before the first).
      const transfers: Array<string> = []
      for (let i = 0; i < 48; i++) {
        const made = await new MerchantApi(app.baseUrl, key).create(
          transferBody({ sender_account_uri: accountUri(randomPan()), amount: "100.00" })
        )
        assert.strictEqual(made.status, 201, made.text)
        transfers.push(made.json.payment_transfer.id)
      }
      const sent: Array<Sent> = []
      for (let cycle = 0; cycle < cycles; cycle++) {
        const api = new MerchantApi(app.baseUrl, key)
        let stopping = false
        const client = async (n: number) => {
          while (!stopping) {
            const request: Sent = {
              transfer: transfers[Math.floor(Math.random() * transfers.length)]!,
              body: n % 7 === 0 ? {} : { amount: "1.00" },
              idempotencyKey: n % 2 === 0 ? `key-${uniqueReference("refund")}` : undefined
            }
            sent.push(request)
            try {
              const r = await api.refund(
                request.transfer,
                request.body,
                request.idempotencyKey === undefined ? {} : { idempotencyKey: request.idempotencyKey }
              )
              request.answered = r.status
            } catch {
              return
            }
          }
        }
        const clients = Array.from({ length: 32 }, (_, n) => client(n))
        await sleep(800 + Math.floor(Math.random() * 500))
        stopping = true
        await app.kill9()
        await Promise.all(clients)
        app = await start(app.dataDir)
      }
      const unsettled = () =>
        Number(
          app.query<{ n: unknown }>("SELECT count(*) AS n FROM refunds WHERE status IN ('pending', 'unknown')")[0]!.n
        )
      const deadline = Date.now() + 60_000
      while (unsettled() > 0 && Date.now() < deadline) await sleep(250)
      assert.strictEqual(unsettled(), 0, "refunds still pending or unknown")

      // Every refund is what the processor did with it.
      const decided = new Map(
        processor.requests.filter((r) => r.kind === "refund" && r.handling === "decided").map((r) => [r.refundId!, r])
      )
      const rows = app.query<
        {
          id: string
          transfer_id: string
          amount: unknown
          status: string
          failure_reason: string | null
          idem_key: string | null
          reconciled_at: unknown
        }
      >("SELECT id, transfer_id, amount, status, failure_reason, idempotency_key AS idem_key, reconciled_at FROM refunds")
      for (const row of rows) {
        if (decided.has(row.id)) assert.strictEqual(row.status, "succeeded", row.id)
        else assert.deepStrictEqual([row.status, row.failure_reason], ["failed", "unknown"], row.id)
      }
      for (const id of decided.keys()) assert.isTrue(rows.some((r) => r.id === id), `refund ${id} lost`)
      assert.isAbove(rows.filter((r) => r.status === "succeeded").length, 0)
      assert.isAbove(rows.filter((r) => r.reconciled_at !== null).length, 0, "a crash left refunds to reconcile")

      // Per transfer: what it shows refunded is what the processor refunded, and never more than it took.
      const api = new MerchantApi(app.baseUrl, key)
      for (const id of transfers) {
        const t = (await api.transfer(id)).json.payment_transfer
        const cents = (s: string) => Math.round(Number(s) * 100)
        const refunded = rows.filter((r) => r.transfer_id === id && r.status === "succeeded")
          .reduce((a, r) => a + Number(r.amount), 0)
        const byProcessor = [...decided.values()].filter((r) => r.transferId === id)
          .reduce((a, r) => a + Number(r.amount), 0)
        assert.strictEqual(cents(t.amount_refunded), refunded, id)
        assert.strictEqual(refunded, byProcessor, id)
        assert.isAtMost(refunded, cents(t.amount), id)
      }

      // No key made two refunds; a retry of a request that got no answer gets its refund, or a refusal.
      const perKey = new Map<string, number>()
      for (const row of rows) if (row.idem_key !== null) perKey.set(row.idem_key, (perKey.get(row.idem_key) ?? 0) + 1)
      for (const [k, n] of perKey) assert.strictEqual(n, 1, `key ${k} made ${n} refunds`)
      const unanswered = sent.filter((s) => s.answered === undefined && s.idempotencyKey !== undefined)
      assert.isAbove(unanswered.length, 0, "some kill hit refunds in flight")
      for (const request of unanswered) {
        const retry = await api.refund(request.transfer, request.body, { idempotencyKey: request.idempotencyKey! })
        const mine = rows.find((r) => r.idem_key === request.idempotencyKey)
        if (mine !== undefined) {
          // Its refund, as it ended.
          assert.strictEqual(retry.status, 201, retry.text)
          assert.strictEqual(retry.json.refund.id, mine.id)
        } else {
          // It died before its refund was made: it runs now, or is refused for what is left.
          assert.oneOf(retry.status, [201, 400], retry.text)
        }
      }
      const keyed = app.query<{ idem_key: string; n: unknown }>(
        "SELECT idempotency_key AS idem_key, count(*) AS n FROM refunds WHERE idempotency_key IS NOT NULL GROUP BY idempotency_key"
      )
      for (const { idem_key: k, n } of keyed) assert.strictEqual(Number(n), 1, `key ${k}`)
    }
  )
})
