import { assert, describe, it } from "@effect/vitest"
import { existsSync } from "node:fs"
import { type Browser, chromium } from "playwright-core"
import { afterAll, beforeAll } from "vitest"
import { AppProcess } from "../support/AppProcess.ts"

// GET /docs in a real browser (Chromium at /usr/bin/chromium, or CHROMIUM_PATH; skipped without one): the
// Scalar UI, its script served inline by the app (no CDN), renders the API's operations from the document.
const executablePath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium"
const haveBrowser = existsSync(executablePath)

let app: AppProcess
let browser: Browser
beforeAll(async () => {
  if (!haveBrowser) return
  app = await AppProcess.start()
  browser = await chromium.launch({ executablePath, args: ["--no-sandbox"] })
})
afterAll(async () => {
  await browser?.close()
  await app?.stop()
})

describe.skipIf(!haveBrowser)("GET /docs in a browser", () => {
  it("renders the operations of the API, with no request leaving the app", async () => {
    const page = await browser.newPage()
    const elsewhere: Array<string> = []
    const failures: Array<string> = []
    page.on("request", (request) => {
      if (!request.url().startsWith(app.baseUrl) && !request.url().startsWith("data:")) elsewhere.push(request.url())
    })
    page.on("pageerror", (error) => failures.push(String(error)))
    const response = await page.goto(`${app.baseUrl}/docs`, { waitUntil: "load" })
    assert.strictEqual(response?.status(), 200)
    await page.getByText("/merchant/transfers/payment").first().waitFor({ timeout: 20_000 })
    assert.include(await page.title(), "paysub")
    assert.deepStrictEqual(failures, [])
    assert.deepStrictEqual(elsewhere.filter((url) => !/fonts\.|scalar\.com/.test(url)), [])
    await page.close()
  }, 60_000)

  it("shows each operation's summary, its description and the examples of its request and answers", async () => {
    const page = await browser.newPage()
    await page.goto(`${app.baseUrl}/docs`, { waitUntil: "load" })
    // The sidebar names the operations by their summaries; the first group's operations are rendered in full.
    for (const summary of ["Subscribe", "Confirm a subscription", "The unsubscribe page", "List subscriptions"]) {
      await page.getByText(summary, { exact: true }).first().waitFor({ timeout: 20_000 })
    }
    await page.getByText("Subscribe", { exact: true }).first().click()
    await page.getByText("Starts a subscription to a feed").first().waitFor({ timeout: 20_000 })
    // The request's example (in the request sample) and the answer's (in the response sample).
    const text = () => page.evaluate(() => document.body.innerText)
    const deadline = Date.now() + 20_000
    while (Date.now() < deadline && !/We sent a confirmation link/.test(await text())) await page.waitForTimeout(250)
    const shown = await text()
    assert.include(shown, "ann@example.com")
    assert.include(shown, "We sent a confirmation link")
    await page.close()
  }, 60_000)
})
