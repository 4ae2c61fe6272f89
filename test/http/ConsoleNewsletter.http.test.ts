// Black-box: the list owner's console over the app's real socket (any runtime, any database): feeds created,
// renamed and deleted through the API's use cases (and its refusals), a feed's subscribers with their counts, a
// search, a page per subscriber, the CSV export with the console's session, the outbox; CSRF on every form,
// escaping, and a merchant's session meeting "Not found" on every page.
import { assert, describe, it } from "@effect/vitest"
import { afterAll, beforeAll } from "vitest"
import { AdminKey, AppProcess, freePort, inMemory } from "../support/AppProcess.ts"
import { createClient, unlimitedEnv } from "../support/Payments.ts"
import { type Answer, ConsoleClient } from "./ConsoleClient.ts"

let app: AppProcess
beforeAll(async () => {
  // Mail goes to a port where nothing listens: every confirmation mail fails, and the outbox shows it.
  const deadSmtp = await freePort()
  app = await AppProcess.start({
    env: {
      ...unlimitedEnv,
      CONSOLE_SIGNIN_RATE_LIMIT: "0",
      MAIL_TRANSPORT: "smtp",
      SMTP_URL: `smtp://127.0.0.1:${deadSmtp}`
    }
  })
})
afterAll(() => app?.stop())

let counter = 0
const unique = (tag: string) => `${tag}-${process.pid}-${++counter}`
const owner = async () => {
  const browser = new ConsoleClient(app.appUrl)
  assert.strictEqual((await browser.signIn(AdminKey)).status, 303)
  return browser
}
const api = (method: string, path: string, body?: unknown) =>
  fetch(`${app.baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${AdminKey}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
const feedTitle = async (name: string) => {
  const answer = await fetch(`${app.baseUrl}/feeds/${name}`)
  return answer.status === 200 ? ((await answer.json()) as { feed: { title: string } }).feed.title : answer.status
}
const makeFeed = async (title = "A feed") => {
  const name = unique("feed")
  assert.strictEqual((await api("PUT", `/feeds/${name}`, { title })).status, 201)
  return name
}
const subscribe = async (feed: string, name: string, email: string) => {
  const answer = await api("POST", "/subscribe", { name, email, feed })
  assert.isBelow(answer.status, 300, await answer.text())
}
const assertPageHeaders = (answer: Answer) => {
  assert.include(answer.headers.get("content-security-policy") ?? "", "default-src 'none'")
  assert.strictEqual(answer.headers.get("cache-control"), "no-store")
  assert.notInclude(answer.text, "<script>")
}
const until = async (check: () => Promise<boolean>, what: string, ms = 10_000) => {
  for (const end = Date.now() + ms; Date.now() < end;) {
    if (await check()) return
    await new Promise((ok) => setTimeout(ok, 100))
  }
  assert.fail(`${what} within ${ms} ms`)
}

describe.skipIf(inMemory)("the list owner's console over HTTP", () => {
  it("feeds: listed; created through the API's use case, with its refusals shown as the form again", async () => {
    const browser = await owner()
    const list = await browser.get("/console/newsletter")
    assert.strictEqual(list.status, 200)
    assertPageHeaders(list)
    assert.include(list.text, `<a href="/console/newsletter/feeds/default">default</a>`)
    assert.include(list.text, `<a href="/console/newsletter/outbox">Outbox</a>`)
    const token = ConsoleClient.token(list)

    const name = unique("made")
    const made = await browser.post("/console/newsletter/feeds", { csrf_token: token, name, title: "Made <here>" })
    assert.strictEqual(made.status, 303, made.text)
    assert.strictEqual(made.headers.get("location"), `/console/newsletter/feeds/${name}`)
    assert.strictEqual(await feedTitle(name), "Made <here>")
    const shown = await browser.get(`/console/newsletter/feeds/${name}`)
    assert.include(shown.text, "Made &lt;here&gt;")
    assert.notInclude(shown.text, "Made <here>")

    const refusals: ReadonlyArray<readonly [Record<string, string>, string]> = [
      [{ name: "Not A Name", title: "T" }, "A feed name is 1-64 characters: lowercase letters, digits and hyphens."],
      [{ name: unique("untitled"), title: "  " }, "Enter a title."],
      [{ name: unique("long"), title: "x".repeat(201) }, "A title has at most 200 characters."],
      [{ name, title: "Again" }, `A feed named ${name} exists.`]
    ]
    for (const [fields, reason] of refusals) {
      const refused = await browser.post("/console/newsletter/feeds", { csrf_token: token, ...fields })
      assert.strictEqual(refused.status, 400, fields.name)
      assert.include(refused.text, `role="alert">${reason}</p>`)
      assert.include(refused.text, `value="${fields.name}"`, "what was typed is shown again")
    }
    assert.strictEqual(await feedTitle(name), "Made <here>", "the refused Create did not rename it")
    assert.strictEqual(await feedTitle(refusals[1]![0].name!), 404)

    const forged = unique("forged")
    for (const csrf_token of [undefined, "x".repeat(43)]) {
      const refused = await browser.post("/console/newsletter/feeds", {
        ...(csrf_token === undefined ? {} : { csrf_token }),
        name: forged,
        title: "Forged"
      })
      assert.strictEqual(refused.status, 403)
    }
    assert.strictEqual(await feedTitle(forged), 404)
  })

  it("a feed is renamed and deleted with the session's token only; a deleted or unknown feed is not found", async () => {
    const browser = await owner()
    const name = await makeFeed("Before")
    const page = await browser.get(`/console/newsletter/feeds/${name}`)
    const token = ConsoleClient.token(page)

    assert.strictEqual((await browser.post(`/console/newsletter/feeds/${name}`, { title: "Forged" })).status, 403)
    assert.strictEqual(await feedTitle(name), "Before")
    const empty = await browser.post(`/console/newsletter/feeds/${name}`, { csrf_token: token, title: "" })
    assert.strictEqual(empty.status, 400)
    assert.include(empty.text, "Enter a title.")
    const renamed = await browser.post(`/console/newsletter/feeds/${name}`, { csrf_token: token, title: "After" })
    assert.strictEqual(renamed.status, 303)
    assert.strictEqual(await feedTitle(name), "After")

    const forged = await browser.post(`/console/newsletter/feeds/${name}/delete`, { csrf_token: "y".repeat(43) })
    assert.strictEqual(forged.status, 403)
    assert.strictEqual(await feedTitle(name), "After")
    const deleted = await browser.post(`/console/newsletter/feeds/${name}/delete`, { csrf_token: token })
    assert.strictEqual(deleted.status, 303)
    assert.strictEqual(deleted.headers.get("location"), "/console/newsletter")
    assert.strictEqual(await feedTitle(name), 404)
    assert.strictEqual(
      (await browser.post(`/console/newsletter/feeds/${name}/delete`, { csrf_token: token })).status,
      404
    )
    assert.strictEqual(
      (await browser.post(`/console/newsletter/feeds/${name}`, { csrf_token: token, title: "Back" })).status,
      404
    )
    assert.strictEqual(await feedTitle(name), 404, "renaming a deleted feed does not make it again")
    for (const path of [`/console/newsletter/feeds/${name}`, "/console/newsletter/feeds/NOT%20A%20FEED"]) {
      assert.strictEqual((await browser.get(path)).status, 404, path)
    }
  })

  it("a feed's subscribers: counts by status, a search by address, a page each, escaped, and the CSV export", async () => {
    const browser = await owner()
    const feed = await makeFeed()
    const hostile = "<script>alert(1)</script>"
    const emails = [unique("a"), unique("b"), unique("c")].map((n) => `${n}@example.com`)
    await subscribe(feed, hostile, emails[0]!)
    await subscribe(feed, "Bea", emails[1]!)
    await subscribe(feed, "Cy", emails[2]!)
    await subscribe("default", "Elsewhere", `${unique("d")}@example.com`)

    const page = await browser.get(`/console/newsletter/feeds/${feed}`)
    assert.strictEqual(page.status, 200)
    assertPageHeaders(page)
    const count = (status: string) =>
      new RegExp(`>${status}</a></th><td class="amount">(\\d+)</td>`).exec(page.text)?.[1]
    assert.deepStrictEqual([count("pending"), count("active"), count("unsubscribed")], ["3", "0", "0"])
    assert.include(page.text, "&lt;script&gt;alert(1)&lt;/script&gt;")
    assert.notInclude(page.text, hostile)
    assert.notInclude(page.text, "Elsewhere", "another feed's subscriber is not listed")

    const found = await browser.get(
      `/console/newsletter/feeds/${feed}?email=${encodeURIComponent(emails[1]!.toUpperCase())}`
    )
    const href = /Found: <a href="(\/console\/newsletter\/subscribers\/\d+)">Bea &lt;/.exec(found.text)?.[1]
    assert.isDefined(href, found.text)
    const missing = await browser.get(`/console/newsletter/feeds/${feed}?email=nobody%40example.com`)
    assert.include(missing.text, "No subscriber of this feed has the address nobody@example.com.")
    const typed = await browser.get(`/console/newsletter/feeds/${feed}?email=${encodeURIComponent(hostile)}`)
    assert.include(typed.text, "has the address &lt;script&gt;")
    assert.notInclude(typed.text, hostile)

    const hostileHref = new RegExp(`<a href="(/console/newsletter/subscribers/\\d+)">&lt;script&gt;`).exec(
      page.text
    )![1]!
    // The worker tries the confirmation mail against a closed port: the page shows the failure.
    await until(async () => (await browser.get(hostileHref)).text.includes("to be tried again"), "a failed attempt")
    const subscriber = await browser.get(hostileHref)
    assert.strictEqual(subscriber.status, 200)
    assertPageHeaders(subscriber)
    assert.include(subscriber.text, "<h1>Subscriber &lt;script&gt;alert(1)&lt;/script&gt;</h1>")
    assert.notInclude(subscriber.text, hostile)
    assert.include(subscriber.text, emails[0]!)
    assert.include(subscriber.text, "<dt>Signed up</dt>")
    assert.include(subscriber.text, "Not kept:")
    assert.notInclude(subscriber.text, "<dt>Confirmed</dt>")
    for (const bad of ["0", "abc", "99999999999"]) {
      assert.strictEqual((await browser.get(`/console/newsletter/subscribers/${bad}`)).status, 404, bad)
    }

    const csv = await browser.get(`/console/newsletter/feeds/${feed}/subscribers.csv?status=pending`)
    assert.strictEqual(csv.status, 200)
    assert.match(csv.headers.get("content-type") ?? "", /^text\/csv/)
    assert.match(
      csv.headers.get("content-disposition") ?? "",
      /^attachment; filename="feed-[\w-]+-pending-subscribers\.csv"$/
    )
    assert.strictEqual(csv.text.split("\r\n")[0], "id,email,name,feed,status,created,updated")
    for (const email of emails) assert.include(csv.text, email)
    assert.strictEqual(csv.text.trim().split("\r\n").length, 4)
    const active = await browser.get(`/console/newsletter/feeds/${feed}/subscribers.csv`)
    assert.strictEqual(active.text, "id,email,name,feed,status,created,updated\r\n", "active by default, as the API")
    const stranger = new ConsoleClient(app.appUrl)
    const refused = await stranger.get(`/console/newsletter/feeds/${feed}/subscribers.csv?status=pending`)
    assert.strictEqual(refused.status, 303)
    assert.notInclude(refused.text, emails[0]!)
  })

  it("the outbox: queued, sent today and failing, with the last error", async () => {
    const browser = await owner()
    await subscribe(await makeFeed(), "Fay", `${unique("fail")}@example.com`)
    // The SMTP server backs off as a whole after a failure: any failing mail will do.
    const failingShown = async () =>
      /Failing mails, most attempts first/.test((await browser.get("/console/newsletter/outbox")).text)
    await until(failingShown, "a failing mail", 30_000)
    const outbox = await browser.get("/console/newsletter/outbox")
    assert.strictEqual(outbox.status, 200)
    assertPageHeaders(outbox)
    const figure = (label: string) => Number(new RegExp(`<dt>${label}</dt><dd>(\\d+)`).exec(outbox.text)?.[1])
    assert.isAtLeast(figure("Failing"), 1)
    assert.strictEqual(figure("Sent today"), 0, "no mail could be sent")
    assert.isAtLeast(figure("Queued"), 1, "a failing mail is tried again")
    assert.match(outbox.text, /ECONNREFUSED/)
    assert.match(outbox.text, /<a href="\/console\/newsletter\/subscribers\/\d+">[\w.-]+@example\.com<\/a>/)
  }, 60_000)

  it("a merchant's session gets Not found on every page of the list owner, and its forms change nothing", async () => {
    const m = await createClient(app, "console-newsletter-merchant")
    const browser = new ConsoleClient(app.appUrl)
    assert.strictEqual((await browser.signIn(m.api_key)).status, 303)
    const token = ConsoleClient.token(await browser.get("/console/transfers"))
    const feed = await makeFeed("Kept")
    await subscribe(feed, "Private", `${unique("p")}@example.com`)
    for (
      const path of [
        "/console/newsletter",
        `/console/newsletter/feeds/${feed}`,
        `/console/newsletter/feeds/${feed}/subscribers.csv?status=pending`,
        "/console/newsletter/subscribers/1",
        "/console/newsletter/outbox"
      ]
    ) {
      const answer = await browser.get(path)
      assert.strictEqual(answer.status, 404, path)
      assert.notInclude(answer.text, "Private")
    }
    const posts: ReadonlyArray<readonly [string, Record<string, string>]> = [
      ["/console/newsletter/feeds", { name: unique("merchant"), title: "No" }],
      [`/console/newsletter/feeds/${feed}`, { title: "Renamed" }],
      [`/console/newsletter/feeds/${feed}/delete`, {}]
    ]
    for (const [path, fields] of posts) {
      assert.strictEqual((await browser.post(path, { csrf_token: token, ...fields })).status, 404, path)
    }
    assert.strictEqual(await feedTitle(feed), "Kept")
    assert.strictEqual(await feedTitle(posts[0]![1].name!), 404)
    const signedOut = new ConsoleClient(app.appUrl)
    assert.strictEqual((await signedOut.get("/console/newsletter/outbox")).status, 303)
  })
})
