// The subscriber's side in a real browser (Chromium, phone-sized), with JavaScript on and off: the signup page,
// the confirmation mail read from a real SMTP server, the confirm and unsubscribe pages, the honeypot and an
// invalid address. axe-core audits every page; screenshots of each step go to test-results/browser/.
import { readFileSync } from "node:fs"
import { createServer, type Server } from "node:http"
import { resolve } from "node:path"
import type { Browser, BrowserContext, Page } from "playwright-core"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { AdminKey, AppProcess, freePort } from "../support/AppProcess.ts"
import { type ReceivedMail, SmtpTestServer } from "../support/SmtpTestServer.ts"
import {
  assertAccessible,
  assertFitsWidth,
  ChromiumPath,
  launchBrowser,
  Phone,
  screenshot,
  skipBrowserSuites
} from "./Browser.ts"

let smtp: SmtpTestServer
let app: AppProcess
let browser: Browser
// Another site, serving the README's embeddable form: its origin is allowed (SUBSCRIBE_ALLOWED_ORIGINS).
let site: Server | undefined
let sitePort: number
const readmeSnippet = /#### Embedding the signup form[^]*?```html\n([^]*?)```/.exec(
  readFileSync(resolve(import.meta.dirname, "../../README.md"), "utf8")
)![1]!

let counter = 0
const uniqueEmail = (tag: string) => `${tag}.${process.pid}.${++counter}@example.com`
const mailTo = (address: string) => smtp.waitFor((m) => m.envelope.to.includes(address), 10_000)
const link = (mail: ReceivedMail, path: string) =>
  mail.text!.match(new RegExp(`https?://\\S+${path.replace("/", "\\/")}\\?token=[\\w-]+`))![0]
const statusOf = async (email: string) => {
  const response = await fetch(`${app.baseUrl}/subscriptions?limit=100`, {
    headers: { authorization: `Bearer ${AdminKey}` }
  })
  const list = (await response.json()) as { data: Array<{ email: string; status: string }> }
  return list.data.find((s) => s.email === email)?.status
}
const stored = (email: string) => ({
  subscriptions: app.query<{ n: number }>("SELECT count(*) AS n FROM subscriptions WHERE email = ?", email)[0]!.n,
  outbox: app.query<{ n: number }>(
    "SELECT count(*) AS n FROM mail_outbox o JOIN subscriptions s ON s.id = o.subscription_id WHERE s.email = ?",
    email
  )[0]!.n
})

describe.skipIf(skipBrowserSuites)(`the subscriber's pages in Chromium (${ChromiumPath})`, () => {
  beforeAll(async () => {
    browser = await launchBrowser()
    smtp = await SmtpTestServer.start()
    sitePort = await freePort()
    app = await AppProcess.start({
      env: { MAIL_TRANSPORT: "smtp", SMTP_URL: smtp.url, SUBSCRIBE_ALLOWED_ORIGINS: `http://127.0.0.1:${sitePort}` }
    })
    const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>A site</title></head><body>
<main><h1>A site</h1>${readmeSnippet.replace("https://news.example.com", app.baseUrl)}</main></body></html>`
    const server = createServer((_, response) => response.writeHead(200, { "content-type": "text/html" }).end(html))
    site = server
    await new Promise<void>((ok) => server.listen(sitePort, "127.0.0.1", ok))
  })
  afterAll(async () => {
    // beforeAll may have failed before the site was made (no Chromium in CI): close only what was made.
    const server = site
    if (server !== undefined) await new Promise((ok) => server.close(ok))
    await browser?.close()
    await app?.stop()
    await smtp?.stop()
  })

  for (const javaScript of [true, false]) {
    const mode = javaScript ? "js" : "nojs"
    describe(`JavaScript ${javaScript ? "on" : "off"}`, () => {
      let context: BrowserContext
      let page: Page
      beforeAll(async () => {
        context = await browser.newContext({ ...Phone, javaScriptEnabled: javaScript })
        page = await context.newPage()
      })
      afterAll(() => context?.close())

      const fillAndSubmit = async (name: string, email: string) => {
        await page.goto(`${app.baseUrl}/subscribe`)
        await page.getByLabel("Name").fill(name)
        await page.getByLabel("E-mail address").fill(email)
        await page.getByRole("button", { name: "Subscribe" }).click()
      }

      it("signs up, confirms from the mail's link, and unsubscribes from it", async () => {
        const email = uniqueEmail(`browser-${mode}`)
        await page.goto(`${app.baseUrl}/subscribe`)
        assert.strictEqual(await page.locator("h1").textContent(), "Subscribe to Newsletter")
        await assertFitsWidth(page)
        await assertAccessible(page, javaScript, browser)
        await screenshot(page, `${mode}-1-signup`)

        await page.getByLabel("Name").fill("Ann Browser")
        await page.getByLabel("E-mail address").fill(email)
        await page.getByRole("button", { name: "Subscribe" }).click()
        const pending = `Your subscription is pending: a confirmation e-mail has been sent to ${email}.`
        await page.getByText(pending).waitFor()
        if (javaScript) {
          // Shown in place: the page stayed, the form made way for the message.
          assert.strictEqual(new URL(page.url()).pathname, "/subscribe")
          assert.strictEqual(await page.locator("h1").textContent(), "Subscribe to Newsletter", "no new page loaded")
          assert.strictEqual(await page.locator("#signup").count(), 1)
          assert.isTrue(await page.locator("#signup").isHidden())
          assert.include(await page.locator("#result").textContent(), pending)
        } else {
          assert.strictEqual(await page.locator("h1").textContent(), "Check your inbox")
        }
        await assertAccessible(page, javaScript, browser)
        await screenshot(page, `${mode}-2-pending`)
        assert.strictEqual(await statusOf(email), "pending")

        const mail = await mailTo(email)
        await page.goto(link(mail, "/subscribe/confirm"))
        assert.strictEqual(await page.locator("h1").textContent(), "Confirm your subscription")
        assert.strictEqual(await statusOf(email), "pending", "opening the link must not confirm")
        await assertAccessible(page, javaScript, browser)
        await screenshot(page, `${mode}-3-confirm`)
        await page.getByRole("button", { name: "Confirm subscription" }).click()
        await page.getByRole("heading", { name: "Subscription confirmed" }).waitFor()
        assert.strictEqual(await statusOf(email), "active")
        await assertAccessible(page, javaScript, browser)
        await screenshot(page, `${mode}-4-confirmed`)

        await page.goto(link(mail, "/unsubscribe"))
        assert.strictEqual(await page.locator("h1").textContent(), "Unsubscribe")
        await assertAccessible(page, javaScript, browser)
        await screenshot(page, `${mode}-5-unsubscribe`)
        await page.getByRole("button", { name: "Unsubscribe" }).click()
        await page.getByRole("heading", { name: "Unsubscribed" }).waitFor()
        assert.strictEqual(await statusOf(email), "unsubscribed")
        await assertAccessible(page, javaScript, browser)
        await screenshot(page, `${mode}-6-unsubscribed`)

        // The confirmation link was used: a second visit is the invalid-link page.
        await page.goto(link(mail, "/subscribe/confirm"))
        assert.strictEqual(await page.locator("h1").textContent(), "This link is not valid")
        await assertAccessible(page, javaScript, browser)
        await screenshot(page, `${mode}-7-invalid-link`)
      })

      it("shows an invalid e-mail address next to its field, and keeps what was typed", async () => {
        const before = app.query<{ n: number }>("SELECT count(*) AS n FROM subscriptions")[0]!.n
        await fillAndSubmit("Ann Typo", "ann.example.com")
        const error = page.locator("#email-error")
        await error.getByText("Enter a valid e-mail address, like name@example.com.").waitFor()
        const field = page.getByLabel("E-mail address")
        assert.strictEqual(await field.getAttribute("aria-invalid"), "true")
        assert.strictEqual(await field.getAttribute("aria-describedby"), "email-error")
        assert.strictEqual(await field.inputValue(), "ann.example.com")
        // In place with JavaScript; without it, the form comes back as the answer to the post.
        assert.strictEqual(await page.locator("h1").textContent(), javaScript ? "Subscribe to Newsletter" : "Subscribe")
        assert.strictEqual(await page.getByLabel("Name").inputValue(), "Ann Typo")
        assert.strictEqual(await page.locator("#name-error").textContent(), "")
        assert.strictEqual(app.query<{ n: number }>("SELECT count(*) AS n FROM subscriptions")[0]!.n, before)
        await assertAccessible(page, javaScript, browser)
        await screenshot(page, `${mode}-8-invalid-email`)
      })

      it("with the honeypot filled, answers as usual but stores and sends nothing", async () => {
        const bot = uniqueEmail(`bot-${mode}`)
        await page.goto(`${app.baseUrl}/subscribe`)
        await page.getByLabel("Name").fill("Bot")
        await page.getByLabel("E-mail address").fill(bot)
        // What a form-filling bot does: every input gets a value, the hidden one too.
        await page.locator("input[name=website]").fill("https://spam.example", { force: true })
        await page.getByRole("button", { name: "Subscribe" }).click()
        await page.getByText(`a confirmation e-mail has been sent to ${bot}`).waitFor()
        await screenshot(page, `${mode}-9-honeypot`)
        assert.deepStrictEqual(stored(bot), { subscriptions: 0, outbox: 0 })

        // A person's signup after it is mailed; by then the bot's would have been too.
        const person = uniqueEmail(`after-bot-${mode}`)
        await fillAndSubmit("Person", person)
        await page.getByText(`a confirmation e-mail has been sent to ${person}`).waitFor()
        await mailTo(person)
        assert.isFalse(smtp.messages.some((m) => m.envelope.to.includes(bot)))
      })

      it("the honeypot is hidden from people and from screen readers", async () => {
        await page.goto(`${app.baseUrl}/subscribe`)
        const honeypot = page.locator("input[name=website]")
        const box = await honeypot.boundingBox()
        assert.isTrue(box === null || box.x + box.width <= 0, "the honeypot is on screen")
        assert.strictEqual(await honeypot.getAttribute("tabindex"), "-1")
        const tree = await page.locator("form").ariaSnapshot()
        assert.notInclude(tree, "Leave this field empty")
        assert.include(tree, "E-mail address")
      })
    })
  }

  it("the README's form, pasted into an allowed site, signs up by fetch and shows the answer", async () => {
    const context = await browser.newContext(Phone)
    const page = await context.newPage()
    const email = uniqueEmail("embedded")
    await page.goto(`http://127.0.0.1:${sitePort}/`)
    await page.getByLabel("Name").fill("Emma Bedded")
    await page.getByLabel("E-mail address").fill(email)
    await page.getByRole("button", { name: "Subscribe" }).click()
    await page.getByText(`a confirmation e-mail has been sent to ${email}`).waitFor()
    assert.strictEqual(new URL(page.url()).port, String(sitePort), "the visitor stayed on the site")
    await screenshot(page, "embedded-allowed")
    assert.strictEqual(await statusOf(email), "pending")

    // The same page from an origin not in the list (localhost is another origin than 127.0.0.1): the browser
    // keeps the answer from it.
    await page.goto(`http://localhost:${sitePort}/`)
    await page.getByLabel("Name").fill("Eve")
    await page.getByLabel("E-mail address").fill(uniqueEmail("other-origin"))
    const refused = page.waitForEvent("pageerror")
    await page.getByRole("button", { name: "Subscribe" }).click()
    assert.match((await refused).message, /fetch/i)
    assert.strictEqual(await page.locator("#paysub-result").textContent(), "")
    await context.close()
  })

  it("an unknown feed has a page of its own (404)", async () => {
    const context = await browser.newContext(Phone)
    const page = await context.newPage()
    const response = await page.goto(`${app.baseUrl}/subscribe?feed=no-such-feed`)
    assert.strictEqual(response!.status(), 404)
    assert.strictEqual(await page.locator("h1").textContent(), "No such newsletter")
    await assertAccessible(page, true, browser)
    await screenshot(page, "unknown-feed")
    await context.close()
  })
})
