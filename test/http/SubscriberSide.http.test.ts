// Black-box: the subscriber's side over HTTP (the signup page, form answers as pages, CORS for listed origins)
// and the operator's view (listing by cursor, the CSV export streamed), on the app and database under test.
import Database from "better-sqlite3"
import mysql from "mysql2/promise"
import { readFileSync } from "node:fs"
import pg from "pg"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { AdminKey, AppProcess, postForm } from "../support/AppProcess.ts"

const Origin = "https://news.example.org"
const BrowserAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
let app: AppProcess

beforeAll(async () => {
  app = await AppProcess.start({ env: { SUBSCRIBE_ALLOWED_ORIGINS: ` ${Origin}/ , https://other.example.net` } })
})
afterAll(() => app?.stop())

let counter = 0
const uniqueEmail = (tag: string) => `${tag}.${process.pid}.${++counter}@example.com`
const admin = (path: string, headers: Record<string, string> = {}) =>
  fetch(`${app.baseUrl}${path}`, { headers: { authorization: `Bearer ${AdminKey}`, ...headers } })
const putFeed = (name: string, title: string) =>
  fetch(`${app.baseUrl}/feeds/${name}`, {
    method: "PUT",
    headers: { authorization: `Bearer ${AdminKey}`, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ title })
  })

describe("the signup page", () => {
  it("GET /subscribe is a page with the feed's title, labelled fields, the honeypot and the form", async () => {
    assert.strictEqual((await putFeed("releases", "Release <notes>")).status, 201)
    const response = await fetch(`${app.baseUrl}/subscribe?feed=releases`)
    assert.strictEqual(response.status, 200)
    assert.match(response.headers.get("content-type")!, /^text\/html; charset=utf-8/)
    const html = await response.text()
    assert.include(html, "<h1>Subscribe to Release &lt;notes&gt;</h1>")
    assert.include(html, "<form id=\"signup\" method=\"post\" action=\"/subscribe\" novalidate>")
    assert.include(html, "<input type=\"hidden\" name=\"feed\" value=\"releases\">")
    assert.include(html, "<label for=\"name\">Name</label>")
    assert.include(html, "<label for=\"email\">E-mail address</label>")
    assert.match(html, /<div class="hp" aria-hidden="true">[^]*name="website" tabindex="-1"/)
    assert.include(html, "name=\"viewport\"")
  })

  it("an unknown or malformed feed is a 404 page", async () => {
    for (const feed of ["no-such-feed", "Not A Feed"]) {
      const response = await fetch(`${app.baseUrl}/subscribe?feed=${encodeURIComponent(feed)}`)
      assert.strictEqual(response.status, 404)
      assert.include(await response.text(), "No such newsletter")
    }
  })
})

describe("POST /subscribe from a browser's form", () => {
  it("answers a page with the pending message when Accept prefers text/html", async () => {
    const email = uniqueEmail("page")
    const response = await postForm(app.baseUrl, "/subscribe", { name: "Ann", email }, { accept: BrowserAccept })
    assert.strictEqual(response.status, 200)
    assert.match(response.headers.get("content-type")!, /^text\/html/)
    const html = await response.text()
    assert.include(html, "<h1>Check your inbox</h1>")
    assert.include(html, `Your subscription is pending: a confirmation e-mail has been sent to ${email}.`)
    assert.strictEqual(app.query("SELECT id FROM subscriptions WHERE email = ?", email).length, 1)
  })

  it("answers the form again with the error next to its field and the values kept", async () => {
    const response = await postForm(app.baseUrl, "/subscribe", { name: "Ann <b>", email: "ann@" }, {
      accept: BrowserAccept
    })
    assert.strictEqual(response.status, 400)
    const html = await response.text()
    assert.include(html, "aria-invalid=\"true\" value=\"ann@\"")
    assert.include(
      html,
      "<p id=\"email-error\" class=\"error\">Enter a valid e-mail address, like name@example.com.</p>"
    )
    assert.include(html, "value=\"Ann &lt;b&gt;\"")
    assert.include(html, "<p id=\"name-error\" class=\"error\"></p>")

    const missing = await postForm(app.baseUrl, "/subscribe", { email: "ann@example.com" }, { accept: BrowserAccept })
    assert.strictEqual(missing.status, 400)
    assert.include(await missing.text(), "<p id=\"name-error\" class=\"error\">Missing required parameter: name.</p>")

    const feed = await postForm(app.baseUrl, "/subscribe", { name: "Ann", email: "a@example.com", feed: "gone" }, {
      accept: BrowserAccept
    })
    assert.strictEqual(feed.status, 404)
    assert.include(await feed.text(), "<p id=\"form-error\" class=\"error\" role=\"alert\">No feed has this name.</p>")
  })

  it("never shows card data typed into a field again", async () => {
    const response = await postForm(
      app.baseUrl,
      "/subscribe",
      { name: "4242 4242 4242 4242", email: "c@example.com" },
      {
        accept: BrowserAccept
      }
    )
    assert.strictEqual(response.status, 400)
    const html = await response.text()
    assert.include(html, "<p id=\"name-error\" class=\"error\">A name cannot hold card data.</p>")
    assert.notMatch(html, /4242/)
  })

  // The interface's answer, byte for byte, whatever else a client's Accept says, unless it prefers HTML.
  for (const accept of [undefined, "*/*", "application/json", "application/json, text/html;q=0.5"]) {
    it(`keeps the JSON answer with Accept: ${accept ?? "(none)"}`, async () => {
      const email = uniqueEmail("json")
      const response = await postForm(app.baseUrl, "/subscribe", { name: "Jo", email }, accept ? { accept } : {})
      assert.strictEqual(response.status, 200)
      assert.strictEqual(response.headers.get("content-type"), "application/json")
      const id = app.query<{ id: number }>("SELECT id FROM subscriptions WHERE email = ?", email)[0]!.id
      assert.strictEqual(
        await response.text(),
        `{"message":"Your subscription is pending: a confirmation e-mail has been sent to ${email}. Follow the link in it to confirm.","subscription":{"id":${id},"name":"Jo","email":"${email}","feed":"default"}}`
      )
      const error = await postForm(app.baseUrl, "/subscribe", { name: "Jo", email: "x" }, accept ? { accept } : {})
      assert.strictEqual(error.status, 400)
      assert.strictEqual(((await error.json()) as any).error.code, "email_invalid")
    })
  }
})

describe("CORS for POST /subscribe (SUBSCRIBE_ALLOWED_ORIGINS)", () => {
  const preflight = (origin: string, path = "/subscribe") =>
    fetch(`${app.baseUrl}${path}`, {
      method: "OPTIONS",
      headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": "content-type" }
    })

  it("answers a listed origin's preflight", async () => {
    const response = await preflight(Origin)
    assert.strictEqual(response.status, 204)
    assert.strictEqual(response.headers.get("access-control-allow-origin"), Origin)
    assert.strictEqual(response.headers.get("access-control-allow-methods"), "POST")
    assert.match(response.headers.get("access-control-allow-headers")!, /Content-Type/)
    assert.strictEqual(response.headers.get("vary"), "Origin")
    assert.include(response.headers.get("allow")!, "POST")
  })

  it("gives other origins and other paths no CORS header", async () => {
    for (const response of [await preflight("https://evil.example"), await preflight(Origin, "/feeds")]) {
      assert.strictEqual(response.status, 204)
      assert.isNull(response.headers.get("access-control-allow-origin"))
    }
    const post = await postForm(app.baseUrl, "/subscribe", { name: "E", email: uniqueEmail("evil") }, {
      origin: "https://evil.example"
    })
    assert.strictEqual(post.status, 200)
    assert.isNull(post.headers.get("access-control-allow-origin"))
  })

  it("lets a listed origin read the answer, errors included", async () => {
    const ok = await fetch(`${app.baseUrl}/subscribe`, {
      method: "POST",
      headers: { origin: "https://other.example.net", "content-type": "application/json" },
      body: JSON.stringify({ name: "Cy", email: uniqueEmail("cors") })
    })
    assert.strictEqual(ok.status, 200)
    assert.strictEqual(ok.headers.get("access-control-allow-origin"), "https://other.example.net")
    assert.strictEqual(ok.headers.get("access-control-expose-headers"), "X-Request-Id")
    const bad = await postForm(app.baseUrl, "/subscribe", { name: "Cy", email: "nope" }, { origin: Origin })
    assert.strictEqual(bad.status, 400)
    assert.strictEqual(bad.headers.get("access-control-allow-origin"), Origin)
  })
})

// Rows written straight into the app's database: `count` active subscribers of `feed` with long names, as many
// as a real export of a large list would read.
const seed = async (feed: string, count: number) => {
  const name = (i: string) => `'Subscriber ' || ${i} || ' ${"x".repeat(80)}'`
  if (app.onPostgres) {
    const client = new pg.Client({ connectionString: app.databaseUrl })
    await client.connect()
    try {
      await client.query(
        `INSERT INTO subscriptions (email, email_key, name, feed, status, created_at, updated_at)
        SELECT 'bulk' || i || '@example.com', 'bulk' || i || '@example.com', ${name("i")}, $1, 'active', now(), now()
        FROM generate_series(1, ${count}) AS i`,
        [feed]
      )
    } finally {
      await client.end()
    }
    return
  }
  if (app.onMariaDb) {
    const client = await mysql.createConnection({ uri: app.databaseUrl })
    try {
      // MariaDB stops a recursive CTE after max_recursive_iterations rows (1000 on some installs).
      await client.query(`SET SESSION max_recursive_iterations = ${count + 1}`)
      await client.query(
        `INSERT INTO subscriptions (email, email_key, name, feed, status, created_at, updated_at)
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${count})
        SELECT concat('bulk', i, '@example.com'), concat('bulk', i, '@example.com'),
          concat('Subscriber ', i, ' ${"x".repeat(80)}'), ?, 'active', ?, ? FROM n`,
        [feed, Date.now(), Date.now()]
      )
    } finally {
      await client.end()
    }
    return
  }
  const db = new Database(app.databaseFile)
  try {
    db.pragma("busy_timeout = 5000")
    db.prepare(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${count})
      INSERT INTO subscriptions (email, email_key, name, feed, status, created_at, updated_at)
      SELECT 'bulk' || i || '@example.com', 'bulk' || i || '@example.com', ${name("i")}, ?, 'active', ?, ? FROM n`)
      .run(feed, Date.now(), Date.now())
  } finally {
    db.close()
  }
}

const rssKb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1])

describe("GET /subscriptions (admin)", () => {
  let ids: Array<number>
  beforeAll(async () => {
    assert.strictEqual((await putFeed("listing", "Listing")).status, 201)
    ids = []
    for (let i = 0; i < 5; i++) {
      const email = uniqueEmail("list")
      const response = await postForm(app.baseUrl, "/subscribe", { name: `L${i}`, email, feed: "listing" })
      ids.push(((await response.json()) as any).subscription.id)
    }
  })

  it("pages through a feed by cursor, oldest first", async () => {
    const seen: Array<number> = []
    let after: number | undefined
    for (;;) {
      const query = `/subscriptions?feed=listing&limit=2${after === undefined ? "" : `&starting_after=${after}`}`
      const response = await admin(query)
      assert.strictEqual(response.status, 200)
      const page = (await response.json()) as any
      assert.strictEqual(page.object, "list")
      assert.isAtMost(page.data.length, 2)
      for (const s of page.data) {
        assert.strictEqual(s.feed, "listing")
        assert.deepStrictEqual(Object.keys(s).sort(), ["created", "email", "feed", "id", "name", "status", "updated"])
      }
      seen.push(...page.data.map((s: any) => s.id))
      if (!page.has_more) break
      after = page.data.at(-1).id
    }
    assert.deepStrictEqual(seen, ids)
  })

  it("filters by status", async () => {
    const pending = (await (await admin("/subscriptions?feed=listing&status=pending&limit=100")).json()) as any
    assert.strictEqual(pending.data.length, 5)
    const active = (await (await admin("/subscriptions?feed=listing&status=active")).json()) as any
    assert.deepStrictEqual(active, { object: "list", data: [], has_more: false })
  })

  it("refuses bad parameters and requests without the admin key", async () => {
    for (
      const [query, param] of [["limit=0", "limit"], ["status=gone", "status"], ["starting_after=x", "starting_after"]]
    ) {
      const response = await admin(`/subscriptions?${query}`)
      assert.strictEqual(response.status, 400)
      assert.strictEqual(((await response.json()) as any).error.param, param)
    }
    assert.strictEqual((await fetch(`${app.baseUrl}/subscriptions`)).status, 401)
    assert.strictEqual((await fetch(`${app.baseUrl}/subscriptions`, { headers: { accept: "text/csv" } })).status, 401)
  })

  it("exports a feed as CSV, quoting and defusing what needs it", async () => {
    assert.strictEqual((await putFeed("csv", "CSV")).status, 201)
    const tricky = [["=1+2", uniqueEmail("formula")], ["Doe, \"Jay\"", uniqueEmail("quote")]]
    for (const [name, email] of tricky) {
      await postForm(app.baseUrl, "/subscribe", { name: name!, email: email!, feed: "csv" })
    }
    const response = await admin("/subscriptions?feed=csv&status=pending", { accept: "text/csv" })
    assert.strictEqual(response.status, 200)
    assert.strictEqual(response.headers.get("content-type"), "text/csv; charset=utf-8")
    assert.strictEqual(response.headers.get("content-disposition"), "attachment; filename=\"csv-subscribers.csv\"")
    const lines = (await response.text()).split("\r\n")
    assert.strictEqual(lines[0], "id,email,name,feed,status,created,updated")
    assert.match(lines[1]!, new RegExp(`^\\d+,${tricky[0]![1]!.replace(/\./g, "\\.")},'=1\\+2,csv,pending,`))
    assert.match(lines[2]!, /^\d+,[^,]+,"Doe, ""Jay""",csv,pending,/)
    assert.strictEqual(lines[3], "")
    // Active subscribers by default: none yet.
    const active = await admin("/subscriptions?feed=csv", { accept: "text/csv" })
    assert.strictEqual(await active.text(), "id,email,name,feed,status,created,updated\r\n")
  })

  it("asks for a feed to export, and knows which exist", async () => {
    const none = await admin("/subscriptions", { accept: "text/csv" })
    assert.strictEqual(none.status, 400)
    assert.strictEqual(((await none.json()) as any).error.param, "feed")
    const unknown = await admin("/subscriptions?feed=no-such-feed", { accept: "text/csv" })
    assert.strictEqual(unknown.status, 404)
  })

  it("streams 10,000 subscribers in chunks, within the app's memory cap", async () => {
    assert.strictEqual((await putFeed("big", "Big")).status, 201)
    await seed("big", 10_000)
    const pid = app.pid!
    const before = rssKb(pid)
    let peak = before
    const sampler = setInterval(() => (peak = Math.max(peak, rssKb(pid))), 10)
    try {
      const response = await admin("/subscriptions?feed=big", { accept: "text/csv" })
      assert.strictEqual(response.status, 200)
      // Streamed: no length known up front, sent in chunks as the pages are read.
      assert.isNull(response.headers.get("content-length"))
      assert.strictEqual(response.headers.get("transfer-encoding"), "chunked")
      let chunks = 0
      let text = ""
      const decoder = new TextDecoder()
      const reader = response.body!.getReader()
      for (let next = await reader.read(); !next.done; next = await reader.read()) {
        chunks++
        text += decoder.decode(next.value, { stream: true })
      }
      const lines = text.split("\r\n")
      assert.strictEqual(lines.length, 10_002)
      assert.strictEqual(lines[10_001], "")
      assert.match(lines[10_000]!, /^\d+,bulk10000@example\.com,Subscriber 10000 x{80},big,active,/)
      assert.strictEqual(new Set(lines.slice(1, -1).map((l) => l.split(",")[1])).size, 10_000)
      assert.isAtLeast(chunks, 10, "one chunk per page of rows, not one body")
    } finally {
      clearInterval(sampler)
    }
    // The app runs with a 512 MB heap cap (npm start's --max-old-space-size, Deno's --v8-flags); the export
    // holds one page of rows at a time.
    assert.isBelow(peak, 512 * 1024, `peak RSS ${peak} kB`)
    assert.isBelow(peak - before, 64 * 1024, `the export grew the app by ${peak - before} kB`)
  })
})
