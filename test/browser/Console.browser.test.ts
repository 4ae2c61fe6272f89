// The console in a real browser (Chromium), with JavaScript on and off, on whatever database TEST_DATABASE
// picks (SQLite by default; TEST_DATABASE=postgres runs the same file on PostgreSQL): a merchant signs in with
// its key, sees a transfer made through the API, opens it, refunds part of it (and the API shows the refund),
// and signs out; the merchant's and the list owner's pages are used with the keyboard alone (Tab, Enter and
// Space). axe-core audits every page, and
// Chromium's console must report no Content-Security-Policy violation (the page's inline style is allowed by
// its hash, nothing else is). Screenshots go to test-results/browser/.
import type { Browser, BrowserContext, Page } from "playwright-core"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { AdminKey, AppProcess, inMemory } from "../support/AppProcess.ts"
import { createClient, MerchantApi, transferBody, uniqueReference, unlimitedEnv } from "../support/Payments.ts"
import { SmtpTestServer } from "../support/SmtpTestServer.ts"
import { assertAccessible, ChromiumPath, launchBrowser, screenshot, skipBrowserSuites } from "./Browser.ts"

let app: AppProcess
let browser: Browser
let smtp: SmtpTestServer
// The page's CSP refuses axe's script, as it should: axe audits the same document in a tab of its own.
const audit = (page: Page) => assertAccessible(page, false, browser)

describe.skipIf(skipBrowserSuites || inMemory)(`the console in Chromium (${ChromiumPath})`, () => {
  beforeAll(async () => {
    browser = await launchBrowser()
    smtp = await SmtpTestServer.start()
    app = await AppProcess.start({
      env: { ...unlimitedEnv, CONSOLE_SIGNIN_RATE_LIMIT: "0", MAIL_TRANSPORT: "smtp", SMTP_URL: smtp.url }
    })
  })
  afterAll(async () => {
    await browser?.close()
    await app?.stop()
    await smtp?.stop()
  })

  for (const javaScript of [true, false]) {
    const mode = javaScript ? "js" : "nojs"
    describe(`JavaScript ${javaScript ? "on" : "off"}`, () => {
      let context: BrowserContext
      let page: Page
      const problems: Array<string> = []
      beforeAll(async () => {
        context = await browser.newContext({ viewport: { width: 1024, height: 768 }, javaScriptEnabled: javaScript })
        page = await context.newPage()
        page.on("console", (m) => {
          // The service has no icon: the browser's own request for one is no fault of the page.
          if (m.location().url.endsWith("/favicon.ico")) return
          if (m.type() === "error" || /Content.Security.Policy/i.test(m.text())) {
            problems.push(`${m.text()} (${m.location().url})`)
          }
        })
        page.on("pageerror", (e) => problems.push(e.message))
      })
      afterAll(() => context?.close())

      // Tab until the focused element is the one `is` describes (`tag:name` for a field, `tag:text` otherwise),
      // as a person with a keyboard would. Each element Tab stops at must draw its focus ring (a date field's
      // parts, its month, day, year and calendar button, draw theirs inside the field, where no style reaches).
      const tabTo = async (is: string) => {
        for (let i = 0; i < 40; i++) {
          await page.keyboard.press("Tab")
          const focused = await page.evaluate(() => {
            const e = document.activeElement as HTMLElement | null
            if (e === null || e === document.body) return { is: "", shown: true }
            const style = getComputedStyle(e)
            return {
              is: `${e.tagName.toLowerCase()}:${e.getAttribute("name") ?? e.textContent?.trim()}`,
              shown: e.matches("input[type=date]") ||
                (e.matches(":focus-visible") && style.outlineStyle !== "none" && style.outlineWidth !== "0px")
            }
          })
          assert.isTrue(focused.shown, `no visible focus on ${focused.is} (${page.url()})`)
          if (focused.is === is) return
        }
        throw new Error(`Tab never reached ${is} on ${page.url()}`)
      }

      it("signs in with a merchant's key, sees an API transfer, refunds it, the API sees the refund, signs out", async () => {
        const merchant = await createClient(app, `browser-${mode}`)
        const api = new MerchantApi(app.baseUrl, merchant.api_key)
        const reference = uniqueReference(`browser-${mode}`)
        const made = await api.create(transferBody({ reference, amount: "23.45" }))
        assert.strictEqual(made.status, 201, made.text)
        const id = made.json.payment_transfer.id as string

        await page.goto(`${app.appUrl}/console`)
        await screenshot(page, "console-sign-in")
        await audit(page)
        await page.getByLabel("API key").fill(merchant.api_key)
        await page.getByRole("button", { name: "Sign in" }).click()
        await page.waitForURL(`${app.appUrl}/console/transfers`)

        const cookies = await context.cookies(`${app.appUrl}/console`)
        const session = cookies.find((c) => c.name === "paysub_console")!
        assert.isTrue(session.httpOnly)
        assert.strictEqual(session.sameSite, "Strict")
        assert.notInclude(JSON.stringify(cookies), merchant.api_key)
        assert.notInclude(await page.content(), merchant.api_key)

        const row = page.getByRole("row").filter({ has: page.getByRole("link", { name: reference }) })
        assert.deepStrictEqual(
          (await row.getByRole("cell").allTextContents()).slice(0, 4),
          [reference, "23.45", "USD", "approved"]
        )
        await screenshot(page, "console-transfers")
        await audit(page)

        await page.getByRole("link", { name: reference }).click()
        await page.waitForURL(`${app.appUrl}/console/transfers/${id}`)
        assert.strictEqual(await page.getByRole("heading", { level: 1 }).textContent(), `Transfer ${reference}`)
        assert.include(await page.locator("dl").textContent(), "23.45 USD")
        await screenshot(page, "console-transfer")
        await audit(page)

        await page.getByLabel("Amount").fill("5.00")
        await page.getByRole("button", { name: "Refund" }).click()
        // The form's answer is the transfer's page again, now with the refund's row.
        await page.getByRole("cell", { name: "5.00 USD" }).waitFor()
        assert.strictEqual(page.url(), `${app.appUrl}/console/transfers/${id}`)
        const refunds = await api.get(`/merchant/transfers/payment/${id}/refunds`)
        assert.deepStrictEqual(
          refunds.json.data.map((r: { amount: string; status: string }) => [r.amount, r.status]),
          [["5.00", "succeeded"]]
        )
        assert.include(await page.locator("dl").textContent(), "5.00 USD")
        await screenshot(page, "console-refunded")

        await page.getByRole("button", { name: "Sign out" }).click()
        await page.waitForURL(`${app.appUrl}/console`)
        assert.isTrue(await page.getByRole("button", { name: "Sign in" }).isVisible())
        assert.isUndefined((await context.cookies(`${app.appUrl}/console`)).find((c) => c.name === "paysub_console"))
        await page.goto(`${app.appUrl}/console/transfers/${id}`)
        assert.strictEqual(page.url(), `${app.appUrl}/console`, "signed out: the sign-in page again")
        assert.notInclude(await page.content(), reference)
        assert.deepStrictEqual(problems, [])
      })

      it("adds a webhook endpoint, sees its secret once and it listed, resends a transfer's event to it", async () => {
        const merchant = await createClient(app, `hooks-${mode}`)
        const api = new MerchantApi(app.baseUrl, merchant.api_key)
        const made = await api.create(transferBody({ reference: uniqueReference(`hooks-${mode}`) }))
        assert.strictEqual(made.status, 201, made.text)
        await page.goto(`${app.appUrl}/console`)
        await page.getByLabel("API key").fill(merchant.api_key)
        await page.getByRole("button", { name: "Sign in" }).click()
        await page.waitForURL(`${app.appUrl}/console/transfers`)
        await page.getByRole("link", { name: "Webhooks" }).click()
        await page.waitForURL(`${app.appUrl}/console/webhooks`)
        await audit(page)
        const url = `https://93.184.216.34/${mode}`
        await page.getByLabel("URL").fill(url)
        await page.getByLabel("transfer.approved").check()
        await page.getByRole("button", { name: "Add endpoint" }).click()
        await page.getByRole("heading", { name: "Endpoint added" }).waitFor()
        const secret = (await page.locator("#secret").textContent())!
        assert.match(secret, /^whsec_/)
        await audit(page)
        await page.getByRole("link", { name: "All webhook endpoints" }).click()
        const row = page.getByRole("row").filter({ hasText: url })
        assert.deepStrictEqual((await row.getByRole("cell").allTextContents()).slice(1, 4), [
          url,
          "transfer.approved",
          "enabled"
        ])
        assert.notInclude(await page.content(), secret)
        await screenshot(page, "console-webhooks")
        await audit(page)

        // The transfer's event, sent again to the new endpoint.
        await page.getByRole("link", { name: "Events" }).click()
        const event = page.getByRole("row").filter({ hasText: made.json.payment_transfer.id as string })
        assert.include(await event.textContent(), "transfer.approved")
        await audit(page)
        await event.getByRole("button", { name: /^Resend/ }).click()
        await page.getByRole("heading", { name: "Event resent" }).waitFor()
        await audit(page)
        await page.getByRole("button", { name: "Sign out" }).click()
        await page.waitForURL(`${app.appUrl}/console`)
        assert.deepStrictEqual(problems, [])
      })

      it("reads the charts' text equivalents, the merchant's and the list owner's", async () => {
        const merchant = await createClient(app, `charts-${mode}`)
        const made = await new MerchantApi(app.baseUrl, merchant.api_key).create(
          transferBody({ reference: uniqueReference(`charts-${mode}`), amount: "7.00" })
        )
        assert.strictEqual(made.status, 201, made.text)
        const today = new Date().toISOString().slice(0, 10)
        // A table's row for a day, as a screen reader reads it: the day's header cell, then its cells.
        const dayRow = async (table: string, day: string) => {
          const row = page.getByRole("table", { name: `${table}, per day` }).getByRole("row").filter({
            has: page.getByRole("rowheader", { name: day, exact: true })
          })
          return (await row.getByRole("cell").allTextContents()).map((c) => c.trim())
        }
        await page.goto(`${app.appUrl}/console`)
        await page.getByLabel("API key").fill(merchant.api_key)
        await page.getByRole("button", { name: "Sign in" }).click()
        await page.waitForURL(`${app.appUrl}/console/transfers`)
        await page.getByRole("link", { name: "Charts", exact: true }).click()
        await page.waitForURL(`${app.appUrl}/console/charts`)
        assert.isTrue(await page.getByRole("img", { name: "Volume, USD" }).isVisible())
        assert.deepStrictEqual(await dayRow("Volume, USD", today), ["7.00", "1"])
        assert.deepStrictEqual(await dayRow("Approval rate", today), ["1", "0", "100%"])
        assert.strictEqual(
          await page.getByRole("table", { name: "Approval rate, per day" }).getByRole("rowheader").count(),
          30
        )
        await screenshot(page, "console-charts")
        await audit(page)
        await page.getByRole("button", { name: "Sign out" }).click()
        await page.waitForURL(`${app.appUrl}/console`)

        await page.getByLabel("API key").fill(AdminKey)
        await page.getByRole("button", { name: "Sign in" }).click()
        await page.waitForURL(`${app.appUrl}/console/newsletter`)
        await page.getByRole("link", { name: "Charts", exact: true }).click()
        await page.waitForURL(`${app.appUrl}/console/newsletter/charts`)
        assert.isTrue(await page.getByRole("img", { name: "Signups and confirmations" }).isVisible())
        // The newsletter is the app's, not this case's: other cases sign up too. One more signup shows as one more.
        const [signups, confirmations] = (await dayRow("Signups and confirmations", today)).map(Number) as [
          number,
          number
        ]
        const rate = (n: number) => `${Math.round((confirmations / n) * 100)}%`
        assert.deepStrictEqual(await dayRow("Confirmation rate", today), [signups === 0 ? "none" : rate(signups)])
        const signedUp = await fetch(`${app.baseUrl}/subscribe`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ name: "Chart Reader", email: `charts-${mode}.${process.pid}@example.com` })
        })
        assert.strictEqual(signedUp.status, 200)
        await page.reload()
        assert.deepStrictEqual(await dayRow("Signups and confirmations", today), [
          String(signups + 1),
          String(confirmations)
        ])
        assert.deepStrictEqual(await dayRow("Confirmation rate", today), [rate(signups + 1)])
        await screenshot(page, "console-newsletter-charts")
        await audit(page)
        await page.getByRole("button", { name: "Sign out" }).click()
        await page.waitForURL(`${app.appUrl}/console`)
        assert.deepStrictEqual(problems, [])
      }, 120_000)

      it(
        "sees a subscriber confirmed through the signup page: feeds, the feed, a search, its page, the outbox",
        async () => {
          const email = `console-${mode}.${process.pid}@example.com`
          const name = `Reader <b>${mode}</b>`
          await page.goto(`${app.appUrl}/subscribe`)
          await page.getByLabel("Name").fill(name)
          await page.getByLabel("E-mail address").fill(email)
          await page.getByRole("button", { name: "Subscribe" }).click()
          await page.getByText(`a confirmation e-mail has been sent to ${email}`).waitFor()
          const mail = await smtp.waitFor((m) => m.envelope.to.includes(email), 10_000)
          await page.goto(mail.text!.match(/https?:\/\/\S+\/subscribe\/confirm\?token=[\w-]+/)![0])
          await page.getByRole("button", { name: "Confirm subscription" }).click()
          await page.getByRole("heading", { name: "Subscription confirmed" }).waitFor()

          await page.goto(`${app.appUrl}/console`)
          await page.getByLabel("API key").fill(AdminKey)
          await page.getByRole("button", { name: "Sign in" }).click()
          await page.waitForURL(`${app.appUrl}/console/newsletter`)
          await screenshot(page, "console-feeds")
          await audit(page)
          await page.getByRole("link", { name: "default", exact: true }).click()
          await page.waitForURL(`${app.appUrl}/console/newsletter/feeds/default`)
          const active = page.getByRole("row").filter({ has: page.getByRole("link", { name: "active", exact: true }) })
          assert.isAtLeast(Number(await active.getByRole("cell").first().textContent()), 1)
          await screenshot(page, "console-feed")
          await audit(page)
          await page.getByLabel("E-mail address").fill(email)
          await page.getByRole("button", { name: "Find" }).click()
          await page.getByRole("link", { name: `${name} <${email}>` }).click()
          await page.getByRole("heading", { name: `Subscriber ${name}` }).waitFor()
          const facts = (await page.locator("dl").textContent())!
          assert.include(facts, "Statusactive")
          assert.include(facts, "Confirmed")
          assert.include(await page.getByRole("table", { name: /Confirmation mails/ }).textContent(), "sent")
          await screenshot(page, "console-subscriber")
          await audit(page)
          await page.getByRole("link", { name: "Outbox" }).click()
          await page.waitForURL(`${app.appUrl}/console/newsletter/outbox`)
          assert.match((await page.locator("dl").textContent())!, /Sent today[1-9]/)
          await screenshot(page, "console-outbox")
          await audit(page)
          await page.getByRole("button", { name: "Sign out" }).click()
          await page.waitForURL(`${app.appUrl}/console`)
          assert.deepStrictEqual(problems, [])
        },
        120_000
      )

      it("works with the keyboard alone: sign in, open a transfer, refund it, sign out", async () => {
        const merchant = await createClient(app, `keyboard-${mode}`)
        const api = new MerchantApi(app.baseUrl, merchant.api_key)
        const reference = uniqueReference(`keys-${mode}`)
        const made = await api.create(transferBody({ reference, amount: "9.00" }))
        assert.strictEqual(made.status, 201, made.text)
        const id = made.json.payment_transfer.id as string
        await page.goto(`${app.appUrl}/console`)
        await tabTo("input:api_key")
        await page.keyboard.type(merchant.api_key)
        await page.keyboard.press("Enter")
        await page.waitForURL(`${app.appUrl}/console/transfers`)
        await tabTo(`a:${reference}`)
        await page.keyboard.press("Enter")
        await page.waitForURL(`${app.appUrl}/console/transfers/${id}`)
        await tabTo("input:amount")
        await page.keyboard.type("1.00")
        await tabTo("button:Refund")
        await page.keyboard.press("Enter")
        await page.getByRole("cell", { name: "1.00 USD" }).waitFor()
        await tabTo("button:Sign out")
        await page.keyboard.press("Enter")
        await page.waitForURL(`${app.appUrl}/console`)
        const refunds = await api.get(`/merchant/transfers/payment/${id}/refunds`)
        assert.deepStrictEqual(refunds.json.data.map((r: { amount: string }) => r.amount), ["1.00"])
      })

      it(
        "works with the keyboard alone for the list owner: feeds, a feed, a search, a subscriber, outbox, charts",
        async () => {
          const feed = `keys-${mode}-${process.pid}`
          const email = `keys-${mode}.${process.pid}@example.com`
          await page.goto(`${app.appUrl}/console`)
          await tabTo("input:api_key")
          await page.keyboard.type(AdminKey)
          await page.keyboard.press("Enter")
          await page.waitForURL(`${app.appUrl}/console/newsletter`)
          // A feed created from the form; its page follows.
          await tabTo("input:name")
          await page.keyboard.type(feed)
          await tabTo("input:title")
          await page.keyboard.type("Keyboard")
          await tabTo("button:Create feed")
          await page.keyboard.press("Space")
          await page.waitForURL(`${app.appUrl}/console/newsletter/feeds/${feed}`)
          // Someone signs up to it; the list owner goes back to the feeds and opens it from the list.
          const signup = await fetch(`${app.appUrl}/subscribe`, {
            method: "POST",
            body: new URLSearchParams({ name: "Keyboard Reader", email, feed })
          })
          assert.strictEqual(signup.status, 200)
          await tabTo("a:Feeds")
          await page.keyboard.press("Enter")
          await page.waitForURL(`${app.appUrl}/console/newsletter`)
          await tabTo(`a:${feed}`)
          await page.keyboard.press("Enter")
          await page.waitForURL(`${app.appUrl}/console/newsletter/feeds/${feed}`)
          await tabTo("input:email")
          await page.keyboard.type(email)
          await page.keyboard.press("Enter")
          await page.getByRole("status").filter({ hasText: "Found" }).waitFor()
          await tabTo(`a:Keyboard Reader <${email}>`)
          await page.keyboard.press("Enter")
          await page.getByRole("heading", { name: "Subscriber Keyboard Reader" }).waitFor()
          assert.include((await page.locator("dl").textContent())!, "Statuspending")
          await tabTo("a:Outbox")
          await page.keyboard.press("Enter")
          await page.waitForURL(`${app.appUrl}/console/newsletter/outbox`)
          await tabTo("a:Charts")
          await page.keyboard.press("Enter")
          await page.waitForURL(`${app.appUrl}/console/newsletter/charts`)
          await page.getByRole("table", { name: /Signups and confirmations/ }).waitFor()
          await tabTo("button:Sign out")
          await page.keyboard.press("Space")
          await page.waitForURL(`${app.appUrl}/console`)
          assert.deepStrictEqual(problems, [])
        },
        120_000
      )
    })
  }
})
