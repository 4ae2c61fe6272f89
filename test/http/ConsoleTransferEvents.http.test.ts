// Black-box: a transfer's page in the console lists the transfer's events and its refunds', each with its
// webhook deliveries (the endpoint, the attempts, delivered or why the last attempt failed, and each attempt's
// time and status code), over the app's real socket, with two real receivers: one that verifies and accepts, one
// that answers 503 and then, verifying, accepts.
import { assert, describe, it } from "@effect/vitest"
import { afterAll, beforeAll } from "vitest"
import { AppProcess, inMemory } from "../support/AppProcess.ts"
import { createClient, MerchantApi, transferBody, uniqueReference, unlimitedEnv } from "../support/Payments.ts"
import { webhookEnv, WebhookReceiver } from "../support/WebhookReceiver.ts"
import { type Answer, ConsoleClient } from "./ConsoleClient.ts"

let app: AppProcess
let accepting: WebhookReceiver
let refusing: WebhookReceiver
beforeAll(async () => {
  accepting = await WebhookReceiver.start()
  refusing = await WebhookReceiver.start()
  refusing.failWith = 503
  app = await AppProcess.start({ env: { ...unlimitedEnv, ...webhookEnv, CONSOLE_SIGNIN_RATE_LIMIT: "0" } })
})
afterAll(async () => {
  await app?.stop()
  await accepting?.down()
  await refusing?.down()
})

const addEndpoint = async (key: string, url: string) => {
  const answer = await fetch(`${app.baseUrl}/webhook_endpoints`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ url, enabled_events: ["*"] })
  })
  assert.strictEqual(answer.status, 201)
  return ((await answer.json()) as { secret: string }).secret
}

// The page's delivery rows: event id, type, endpoint URL, attempts, state, and each attempt kept (its number,
// and its outcome after its time), as text.
const rows = (page: Answer) =>
  [...page.text.matchAll(
    /<tr><td><code>(evt_\w+)<\/code><\/td><td>([\w.]+)<\/td><td>.*?<\/td><td>(.*?)<\/td><td>(\d+)<\/td><td>(.*?)<\/td><td>(.*?)<\/td><\/tr>/g
  )]
    .map(([, event, type, url, attempts, state, history]) => ({
      event,
      type,
      url,
      attempts: Number(attempts),
      state,
      history: attemptsOf(history!)
    }))
const attemptsOf = (list: string) => {
  const start = Number(/<ol class="attempts" start="(\d+)">/.exec(list)?.[1] ?? 1)
  return [...list.matchAll(/<li><time datetime="[^"]+">[^<]+<\/time> ([^<]*)<\/li>/g)]
    .map(([, outcome], i) => ({ attempt: start + i, outcome }))
}

// Not on `memory:`, whose clients no CLI reaches (the memory store's attempts: its storage contract).
describe.skipIf(inMemory)("a transfer's page in the console", { timeout: 60_000 }, () => {
  it("lists its events and its refunds', each with its deliveries' attempts and what the receiver answered", async () => {
    const m = await createClient(app, "console-transfer-events")
    const api = new MerchantApi(app.baseUrl, m.api_key)
    accepting.secret = await addEndpoint(m.api_key, accepting.url)
    refusing.secret = await addEndpoint(m.api_key, refusing.url)
    const made = await api.create(transferBody({ reference: uniqueReference("events") }))
    assert.strictEqual(made.status, 201, made.text)
    const transfer = made.json.payment_transfer as { id: string }
    const refunded = await api.refund(transfer.id, { amount: "1.00" })
    assert.strictEqual(refunded.status, 201, refunded.text)
    await accepting.waitFor((all) =>
      all.some((r) => r.event.type === "transfer.approved" && r.event.data.object.id === transfer.id) &&
      all.some((r) => r.event.type === "refund.created" && r.event.data.object.transfer === transfer.id)
    )
    const approved = accepting.ofType("transfer.approved").find((r) => r.event.data.object.id === transfer.id)!
    const refund = accepting.ofType("refund.created").find((r) => r.event.data.object.transfer === transfer.id)!

    const browser = new ConsoleClient(app.appUrl)
    await browser.signIn(m.api_key)
    // The refusing endpoint's first attempts end a moment after the accepting one's.
    let page = await browser.get(`/console/transfers/${transfer.id}`)
    for (let i = 0; i < 40 && rows(page).filter((r) => r.state.startsWith("failed")).length < 2; i++) {
      await new Promise((r) => setTimeout(r, 250))
      page = await browser.get(`/console/transfers/${transfer.id}`)
    }
    assert.strictEqual(page.status, 200)
    const shown = rows(page)
    assert.deepStrictEqual(
      shown.map((r) => [r.event, r.type, r.url]).sort(),
      [
        [approved.id, "transfer.approved", accepting.url],
        [approved.id, "transfer.approved", refusing.url],
        [refund.id, "refund.created", accepting.url],
        [refund.id, "refund.created", refusing.url]
      ].sort()
    )
    assert.strictEqual(shown[0]!.event, refund.id, "newest first")
    for (const row of shown) {
      assert.strictEqual(row.attempts, 1, `${row.type} to ${row.url}`)
      if (row.url === accepting.url) {
        assert.match(row.state, /^delivered <time/)
        assert.deepStrictEqual(row.history, [{ attempt: 1, outcome: "HTTP 204" }])
      } else {
        assert.match(row.state, /^failed: HTTP 503; next attempt <time/)
        assert.deepStrictEqual(row.history, [{ attempt: 1, outcome: "HTTP 503" }])
      }
    }

    // The refusing receiver accepts from now on: its deliveries' next attempts (the endpoint's backoff, 5 to 10 s
    // after its failure) are delivered, each shown after the 503s before it.
    refusing.failWith = undefined
    for (let i = 0; i < 100 && rows(page).some((r) => !r.state.startsWith("delivered")); i++) {
      await new Promise((r) => setTimeout(r, 250))
      page = await browser.get(`/console/transfers/${transfer.id}`)
    }
    const retried = rows(page).filter((r) => r.url === refusing.url)
    assert.lengthOf(retried, 2)
    for (const row of retried) {
      assert.match(row.state, /^delivered <time/, row.type)
      assert.deepStrictEqual(
        row.history,
        Array.from({ length: row.attempts }, (_, i) => ({
          attempt: i + 1,
          outcome: i === row.attempts - 1 ? "HTTP 204" : "HTTP 503"
        })),
        row.type
      )
    }

    // Another merchant's transfer page, events included, is not theirs to see.
    const other = await createClient(app, "console-transfer-events-other")
    const stranger = new ConsoleClient(app.appUrl)
    await stranger.signIn(other.api_key)
    const theirs = await stranger.get(`/console/transfers/${transfer.id}`)
    assert.strictEqual(theirs.status, 404)
    assert.notInclude(theirs.text, approved.id)
  })
})
