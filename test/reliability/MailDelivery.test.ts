import { assert, describe, it } from "@effect/vitest"
import { afterEach } from "vitest"
import { AppProcess, postForm } from "../support/AppProcess.ts"
import { SmtpTestServer } from "../support/SmtpTestServer.ts"

// The outbox promise: a mail committed with its subscription arrives, whatever happened to SMTP or to
// the process in between, and arrives once.
const cleanup: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step()
})

const startSmtp = async () => {
  const smtp = await SmtpTestServer.start()
  cleanup.push(() => smtp.stop())
  return smtp
}
const startApp = async (smtp: SmtpTestServer, dataDir?: string) => {
  const app = await AppProcess.start({
    env: { MAIL_TRANSPORT: "smtp", SMTP_URL: smtp.url },
    ...(dataDir ? { dataDir } : {})
  })
  cleanup.push(() => app.stop())
  return app
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const outboxRow = (app: AppProcess) =>
  app.query<{ attempts: number; sent_at: number | null; last_error: string | null }>(
    "SELECT attempts, sent_at, last_error FROM mail_outbox"
  )[0]

describe("confirmation mail delivery", () => {
  it("arrives once SMTP is back after being down for a while", { timeout: 60_000 }, async () => {
    const smtp = await startSmtp()
    await smtp.stop()
    const app = await startApp(smtp)
    const email = "patient@example.com"
    assert.strictEqual((await postForm(app.baseUrl, "/subscribe", { name: "Pat", email })).status, 200)
    await sleep(3_000)
    const failing = outboxRow(app)!
    assert.isTrue(failing.attempts >= 1, "the worker tried while SMTP was down")
    assert.isNull(failing.sent_at)
    assert.match(failing.last_error!, /ECONNREFUSED/)
    await smtp.start()
    const mail = await smtp.waitFor((m) => m.envelope.to.includes(email), 30_000)
    assert.match(mail.text!, /\/subscribe\/confirm\?token=/)
    await sleep(1_500)
    assert.strictEqual(smtp.messages.length, 1)
    assert.isNotNull(outboxRow(app)!.sent_at)
  })

  it("arrives after a kill -9 that came right after the commit", { timeout: 120_000 }, async () => {
    const smtp = await startSmtp()
    await smtp.stop()
    const first = await startApp(smtp)
    const email = "survivor@example.com"
    assert.strictEqual((await postForm(first.baseUrl, "/subscribe", { name: "Sue", email })).status, 200)
    await first.kill9()
    assert.isNull(outboxRow(first)!.sent_at)
    await smtp.start()
    const second = await startApp(smtp, first.dataDir)
    // Due at once, after the first attempt's backoff, or (if the kill hit mid-send) after the 60 s lease.
    const mail = await smtp.waitFor((m) => m.envelope.to.includes(email), 75_000)
    assert.match(mail.text!, /Hello Sue/)
    await sleep(1_500)
    assert.strictEqual(smtp.messages.length, 1)
    assert.isNotNull(outboxRow(second)!.sent_at)
  })
})
