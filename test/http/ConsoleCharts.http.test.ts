// Black-box: the console's charts over the app's real socket (any runtime, any database). Transfers, refunds and
// signups are made through the API, then read back from the charts' text equivalents (their tables).
import { assert, describe, it } from "@effect/vitest"
import { afterAll, beforeAll } from "vitest"
import { AdminKey, AppProcess, inMemory, postForm } from "../support/AppProcess.ts"
import {
  accountUri,
  createClient,
  MerchantApi,
  transferBody,
  uniqueReference,
  unlimitedEnv
} from "../support/Payments.ts"
import { type ReceivedMail, SmtpTestServer } from "../support/SmtpTestServer.ts"
import { type Answer, ConsoleClient } from "./ConsoleClient.ts"

let smtp: SmtpTestServer
let app: AppProcess
beforeAll(async () => {
  smtp = await SmtpTestServer.start()
  app = await AppProcess.start({
    env: { ...unlimitedEnv, CONSOLE_SIGNIN_RATE_LIMIT: "0", MAIL_TRANSPORT: "smtp", SMTP_URL: smtp.url }
  })
})
afterAll(async () => {
  await app?.stop()
  await smtp?.stop()
})

// Today and the 29 days before, UTC, as the charts name them (a run across midnight UTC may see two todays).
const dayOffset = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10)

// The cells of a chart's table row for a day, after the day's own header cell.
const rowOf = (page: Answer, caption: string, day: string): ReadonlyArray<string> => {
  const table = page.text.split(`<caption>${caption}, per day</caption>`)[1]?.split("</table>")[0]
  assert.isDefined(table, `no table "${caption}" on the page`)
  const row = new RegExp(`<tr><th scope="row">${day}</th>(.*?)</tr>`).exec(table!)
  assert.isNotNull(row, `no row for ${day} in "${caption}"`)
  return [...row![1]!.matchAll(/<td[^>]*>(.*?)<\/td>/g)].map((m) => m[1]!)
}
const rowsIn = (page: Answer, caption: string) =>
  page.text.split(`<caption>${caption}, per day</caption>`)[1]!.split("</table>")[0]!.match(/<th scope="row">/g)!.length

const assertChartPage = (page: Answer) => {
  assert.strictEqual(page.status, 200, page.text)
  const csp = page.headers.get("content-security-policy") ?? ""
  assert.include(csp, "default-src 'none'")
  assert.match(csp, /style-src 'sha256-[\w+/=]+'(;|$)/)
  assert.notInclude(csp, "unsafe-inline")
  assert.notInclude(page.text, "<script")
  // An inline style attribute would be refused by the CSP: SVG sizes and colours are presentation attributes.
  assert.notMatch(page.text, /\sstyle=/)
  const svgs = [...page.text.matchAll(/<svg ([^>]*)>/g)].map((m) => m[1]!)
  assert.isNotEmpty(svgs)
  for (const attributes of svgs) {
    assert.isTrue(
      /role="img" aria-labelledby="[\w-]+-title [\w-]+-desc"/.test(attributes) || /aria-hidden="true"/.test(attributes),
      attributes
    )
  }
}

let counter = 0
const uniqueEmail = (tag: string) => `${tag}.${process.pid}.${++counter}@example.com`
const confirmLink = (mail: ReceivedMail) => mail.text!.match(/https?:\/\/\S+\/subscribe\/confirm\?token=[\w-]+/)![0]

describe.skipIf(inMemory)("the merchant's charts", () => {
  it("show the day's volume per currency, approval rate and refunds of this merchant only", async () => {
    const a = await createClient(app, "Charts A")
    const b = await createClient(app, "Charts B")
    const api = new MerchantApi(app.baseUrl, a.api_key)
    const made: Array<string> = []
    for (const [amount, currency] of [["10.00", "USD"], ["2.50", "USD"], ["1.25", "USD"], ["500", "JPY"]]) {
      const answer = await api.create(transferBody({ reference: uniqueReference("chart"), amount, currency }))
      assert.strictEqual(answer.status, 201, answer.text)
      made.push(answer.json.payment_transfer.id)
    }
    const declined = await api.create(
      transferBody({ reference: uniqueReference("chart"), sender_account_uri: accountUri("4000000000000002") })
    )
    assert.strictEqual(declined.status, 402, declined.text)
    const refund = await api.refund(made[0]!, { amount: "1.00" })
    assert.strictEqual(refund.status, 201, refund.text)
    const other = await new MerchantApi(app.baseUrl, b.api_key).create(
      transferBody({ reference: uniqueReference("chart"), amount: "99.00" })
    )
    assert.strictEqual(other.status, 201, other.text)

    const browser = new ConsoleClient(app.appUrl)
    await browser.signIn(a.api_key)
    const page = await browser.get("/console/charts")
    assertChartPage(page)
    assert.include(page.text, `<a href="/console/charts">Charts</a>`)
    const today = dayOffset(0)
    assert.deepStrictEqual(rowOf(page, "Volume, USD", today), ["13.75", "3"])
    assert.deepStrictEqual(rowOf(page, "Volume, JPY", today), ["500", "1"])
    assert.deepStrictEqual(rowOf(page, "Approval rate", today), ["4", "1", "80%"])
    assert.deepStrictEqual(rowOf(page, "Refunds, USD", today), ["1.00", "1"])
    // Days without data are zero; 30 days, today the last.
    assert.deepStrictEqual(rowOf(page, "Volume, USD", dayOffset(-29)), ["0.00", "0"])
    assert.deepStrictEqual(rowOf(page, "Approval rate", dayOffset(-1)), ["0", "0", "none"])
    assert.strictEqual(rowsIn(page, "Volume, USD"), 30)
    assert.notInclude(page.text, "99.00")
    assert.include(page.text, `<title>${today}, Volume (USD): 13.75</title>`)
    // The list owner's charts are not the merchant's.
    assert.strictEqual((await browser.get("/console/newsletter/charts")).status, 404)
  })
})

describe("the list owner's charts", () => {
  it("show the day's signups, confirmations and confirmation rate", async () => {
    const emails = [uniqueEmail("one"), uniqueEmail("two"), uniqueEmail("three")]
    for (const email of emails) {
      assert.strictEqual((await postForm(app.baseUrl, "/subscribe", { name: "Reader", email })).status, 200)
    }
    for (const email of emails.slice(0, 2)) {
      const mail = await smtp.waitFor((m) => m.envelope.to.includes(email), 10_000)
      assert.strictEqual((await fetch(confirmLink(mail), { method: "POST" })).status, 200)
    }
    const browser = new ConsoleClient(app.appUrl)
    await browser.signIn(AdminKey)
    const page = await browser.get("/console/newsletter/charts")
    assertChartPage(page)
    assert.include(page.text, `<a href="/console/newsletter/charts">Charts</a>`)
    const today = dayOffset(0)
    assert.deepStrictEqual(rowOf(page, "Signups and confirmations", today), ["3", "2"])
    assert.deepStrictEqual(rowOf(page, "Confirmation rate", today), ["67%"])
    assert.deepStrictEqual(rowOf(page, "Confirmation rate", dayOffset(-3)), ["none"])
    assert.strictEqual(rowsIn(page, "Confirmation rate"), 30)
    assert.strictEqual((await browser.get("/console/charts")).status, 404)
  })

  it("without a session, both chart pages send to the sign-in page", async () => {
    for (const path of ["/console/charts", "/console/newsletter/charts"]) {
      const answer = await new ConsoleClient(app.appUrl).get(path)
      assert.strictEqual(answer.status, 303)
      assert.strictEqual(answer.headers.get("location"), "/console")
    }
  })
})
