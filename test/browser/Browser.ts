// A real browser for the browser suites: Debian's Chromium driven by playwright-core. Without Chromium the
// suites skip with a line saying so, unless CI=true: then they fail.
import { existsSync, mkdirSync } from "node:fs"
import { createRequire } from "node:module"
import { join, resolve } from "node:path"
import { type Browser, chromium, type Page } from "playwright-core"
import { assert } from "vitest"

export const ChromiumPath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium"
export const chromiumMissing = !existsSync(ChromiumPath)
const ci = process.env.CI === "true"
// Skipped only on a laptop without Chromium; in CI a missing Chromium is a failure (launch says why).
export const skipBrowserSuites = chromiumMissing && !ci
if (skipBrowserSuites) {
  console.log(`SKIPPED: the browser suites (test/browser): no Chromium at ${ChromiumPath} (apt-get install chromium)`)
}

export const launchBrowser = (): Promise<Browser> => {
  if (chromiumMissing) {
    throw new Error(`CI=true and no Chromium at ${ChromiumPath}: the browser suites must run (.ci/run installs it)`)
  }
  return chromium.launch({
    executablePath: ChromiumPath,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
      "--disable-quic"
    ]
  })
}

// A phone's screen.
export const Phone = { viewport: { width: 390, height: 844 }, hasTouch: true }

// Screenshots go to test-results/browser/, named by runtime; with SCREENSHOTS_DIR (`npm run screenshots`, which
// makes docs/console/), to that folder by page name alone.
const screenshotsDir = process.env.SCREENSHOTS_DIR
const screenshots = resolve(import.meta.dirname, "../..", screenshotsDir ?? "test-results/browser")
export const screenshot = async (page: Page, name: string) => {
  mkdirSync(screenshots, { recursive: true })
  const file = screenshotsDir === undefined ? `${process.env.APP_RUNTIME ?? "node"}-${name}.png` : `${name}.png`
  await page.screenshot({ path: join(screenshots, file), fullPage: true })
}

const axePath = createRequire(import.meta.url).resolve("axe-core/axe.min.js")

// axe-core on the page as shown: no violation, whatever its impact. A page shown without JavaScript is audited
// in a tab of `auditor` (JavaScript on, so axe can run) given the very same document with its scripts taken out.
export const assertAccessible = async (page: Page, javaScript: boolean, auditor: Browser) => {
  let target = page
  let close = async () => {}
  if (!javaScript) {
    const html = (await page.content()).replace(/<script[\s\S]*?<\/script>/g, "")
    const context = await auditor.newContext(Phone)
    target = await context.newPage()
    await target.route(page.url(), (route) => route.fulfill({ status: 200, contentType: "text/html", body: html }))
    await target.goto(page.url())
    close = () => context.close()
  }
  try {
    await target.addScriptTag({ path: axePath })
    const results = await target.evaluate(() => (window as any).axe.run())
    const violations = (results.violations as Array<any>)
      .map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n: any) => n.target.join(" ")).join(", ")}`)
    assert.deepStrictEqual(violations, [], `axe on ${page.url()}`)
  } finally {
    await close()
  }
}

// The page fits a phone's width: nothing to scroll sideways.
export const assertFitsWidth = async (page: Page) => {
  const [scroll, width] = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth])
  assert.isAtMost(scroll!, width!, "the page scrolls sideways")
}
