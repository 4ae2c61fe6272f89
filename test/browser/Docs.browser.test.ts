import { assert, describe, it } from "@effect/vitest"
import { existsSync, mkdirSync } from "node:fs"
import { resolve } from "node:path"
import { type Browser, chromium } from "playwright-core"
import { afterAll, beforeAll } from "vitest"
import { AppProcess } from "../support/AppProcess.ts"

// GET /docs in a real browser (Chromium at /usr/bin/chromium, or CHROMIUM_PATH; skipped without one): the
// Scalar UI, its script served inline by the app (no CDN), renders the API's operations from the document, in
// the order a reader works. DOCS_SCREENSHOT=docs/images/api-reference.png writes the picture docs/api.md shows.
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

  it(
    "lists payments first, then webhooks, subscriptions, operations and the HTTP semantics, in at most 40 entries",
    async () => {
      const page = await browser.newPage({ viewport: { width: 1400, height: 900 } })
      await page.goto(`${app.baseUrl}/docs`, { waitUntil: "load" })
      const sidebar = page.locator(".t-doc__sidebar")
      await sidebar.getByText("Getting started").first().waitFor({ timeout: 20_000 })
      // Every section opened, so that each operation the reference lists is in the sidebar.
      for (let i = 0; i < 20 && (await sidebar.locator("button[aria-expanded=false]").count()) > 0; i++) {
        await sidebar.locator("button[aria-expanded=false]").first().click()
      }
      const entries = await sidebar.evaluate((nav) =>
        Array.from(nav.querySelectorAll("li"))
          .filter((li) => li.querySelector("li") === null && /HTTP METHOD/i.test(li.innerText))
          .map((li) => li.innerText.replace(/\s+/g, " ").trim())
      )
      const sections = (await sidebar.innerText()).split("\n").filter((line) =>
        ["Payments", "Events and webhooks", "Subscriptions and feeds", "Operations", "HTTP semantics"].includes(line)
      )
      assert.deepStrictEqual([...new Set(sections)], [
        "Payments",
        "Events and webhooks",
        "Subscriptions and feeds",
        "Operations",
        "HTTP semantics"
      ])
      assert.match(entries[0]!, /^Create a payment transfer/)
      assert.isAtMost(entries.length, 40, entries.join("\n"))
      // The plumbing once: HEAD, OPTIONS and TRACE of one path, in the last section.
      assert.deepStrictEqual(entries.filter((e) => /METHOD: (HEAD|OPTS|TRACE)/.test(e)).length, 3)
      assert.match(entries.at(-1)!, /METHOD: (HEAD|OPTS|TRACE)/)
      await sidebar.getByText("Create a payment transfer").first().click()
      await page.getByText("Charges the sender's card").first().waitFor({ timeout: 20_000 })
      if (process.env.DOCS_SCREENSHOT !== undefined) {
        mkdirSync(resolve(process.env.DOCS_SCREENSHOT, ".."), { recursive: true })
        await page.screenshot({ path: process.env.DOCS_SCREENSHOT })
      }
      await page.close()
    },
    60_000
  )

  it("shows each operation's summary, its description and the examples of its request and answers", async () => {
    const page = await browser.newPage()
    await page.goto(`${app.baseUrl}/docs`, { waitUntil: "load" })
    // The sidebar names the operations by their summaries, once their section is open.
    await page.locator(".t-doc__sidebar").getByText("Transfers", { exact: true }).first().click()
    for (const summary of ["Create a payment transfer", "List transfers", "Get a transfer", "Get the balances"]) {
      await page.getByText(summary, { exact: true }).first().waitFor({ timeout: 20_000 })
    }
    await page.getByText("Create a payment transfer", { exact: true }).first().click()
    await page.getByText("Charges the sender's card").first().waitFor({ timeout: 20_000 })
    // The request's code sample (curl first) and the answer's example (in the response sample).
    const text = () => page.evaluate(() => document.body.innerText)
    const deadline = Date.now() + 20_000
    while (Date.now() < deadline && !/tr_8mZkq3Vb9xYt2LwQ4nRs6PaC/.test(await text())) await page.waitForTimeout(250)
    const shown = await text()
    assert.include(shown, "Idempotency-Key: order-1001")
    assert.include(shown, "tr_8mZkq3Vb9xYt2LwQ4nRs6PaC")
    await page.close()
  }, 60_000)
})
