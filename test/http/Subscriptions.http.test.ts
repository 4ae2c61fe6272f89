import { assert, describe, it } from "@effect/vitest"
import { request as httpRequest } from "node:http"
import { afterAll, beforeAll } from "vitest"
import { errorCodes } from "../../apps/http/pipeline/ErrorCatalog.ts"
import { AdminKey, AppProcess, postForm } from "../support/AppProcess.ts"
import { type ReceivedMail, SmtpTestServer } from "../support/SmtpTestServer.ts"

// Black-box: a real app process on a real socket, a real SMTP server receiving its mail.
let smtp: SmtpTestServer
let app: AppProcess

beforeAll(async () => {
  smtp = await SmtpTestServer.start()
  app = await AppProcess.start({ env: { MAIL_TRANSPORT: "smtp", SMTP_URL: smtp.url } })
})
afterAll(async () => {
  await app?.stop()
  await smtp?.stop()
})

let counter = 0
const uniqueEmail = (tag: string) => `${tag}.${process.pid}.${++counter}@example.com`
const subscribe = (fields: Record<string, string>) => postForm(app.baseUrl, "/subscribe", fields)
const mailTo = (address: string, timeoutMs = 10_000) => smtp.waitFor((m) => m.envelope.to.includes(address), timeoutMs)
const mailsTo = (address: string) => smtp.messages.filter((m) => m.envelope.to.includes(address))
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const admin = (path: string, key = AdminKey) =>
  fetch(`${app.baseUrl}${path}`, { headers: { authorization: `Bearer ${key}` } })
const statusOf = async (id: number) => ((await (await admin(`/subscriptions/${id}`)).json()) as any).subscription.status
const confirmLink = (mail: ReceivedMail) => mail.text!.match(/https?:\/\/\S+\/subscribe\/confirm\?token=[\w-]+/)![0]
const counts = () => ({
  subscriptions: app.query<{ n: number }>("SELECT count(*) AS n FROM subscriptions")[0]!.n,
  outbox: app.query<{ n: number }>("SELECT count(*) AS n FROM mail_outbox")[0]!.n
})

describe("POST /subscribe", () => {
  it("answers the interface's 200 example with exactly its body shape", async () => {
    const email = uniqueEmail("ann")
    const response = await subscribe({ name: "Ann Example", email })
    assert.strictEqual(response.status, 200)
    assert.match(response.headers.get("content-type")!, /^application\/json/)
    const body = (await response.json()) as any
    assert.deepStrictEqual(Object.keys(body).sort(), ["message", "subscription"])
    assert.deepStrictEqual(Object.keys(body.subscription).sort(), ["email", "feed", "id", "name"])
    assert.match(body.message, /pending/i)
    assert.match(body.message, /confirmation e-mail has been sent/i)
    assert.strictEqual(body.subscription.name, "Ann Example")
    assert.strictEqual(body.subscription.email, email)
    assert.strictEqual(body.subscription.feed, "default")
    assert.isTrue(Number.isInteger(body.subscription.id) && body.subscription.id > 0)
  })

  it("accepts JSON too", async () => {
    const email = uniqueEmail("json")
    const response = await fetch(`${app.baseUrl}/subscribe`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "Jay", email })
    })
    assert.strictEqual(response.status, 200)
    assert.strictEqual(((await response.json()) as any).subscription.email, email)
  })

  it("mails a confirmation over SMTP whose link confirms with POST, while GET only shows the page", async () => {
    const email = uniqueEmail("confirm")
    const { subscription } = (await (await subscribe({ name: "Cora", email })).json()) as any
    const mail = await mailTo(email)
    assert.strictEqual(mail.subject, "Confirm your subscription to Newsletter")
    const link = confirmLink(mail)
    assert.isTrue(link.startsWith(`${app.baseUrl}/subscribe/confirm?token=`))
    assert.include(mail.html!, link.replace(/&/g, "&amp;"))
    assert.match(mail.headers["list-unsubscribe"]!, /^<http:\/\/127\.0\.0\.1:\d+\/unsubscribe\?token=[\w-]{43}>$/)
    assert.strictEqual(mail.headers["list-unsubscribe-post"], "List-Unsubscribe=One-Click")

    const page = await fetch(link)
    assert.strictEqual(page.status, 200)
    assert.match(page.headers.get("content-type")!, /^text\/html; charset=utf-8/)
    const html = await page.text()
    assert.include(html, "<form method=\"post\"")
    assert.strictEqual(await statusOf(subscription.id), "pending", "GET must not confirm")

    const confirmed = await fetch(link, { method: "POST" })
    assert.strictEqual(confirmed.status, 200)
    assert.strictEqual(((await confirmed.json()) as any).subscription.status, "active")
    assert.strictEqual(await statusOf(subscription.id), "active")

    const again = await fetch(link, { method: "POST" })
    assert.strictEqual(again.status, 404, "a confirmation token is single use")
    assert.strictEqual(((await again.json()) as any).error.code, "token_invalid")
    const browser = await fetch(link, { method: "POST", headers: { accept: "text/html" } })
    assert.strictEqual(browser.status, 404)
    assert.include(await browser.text(), "This link is not valid")
  })

  it("stores only a hash of the token", async () => {
    const email = uniqueEmail("hash")
    await subscribe({ name: "Hal", email })
    const token = new URL(confirmLink(await mailTo(email))).searchParams.get("token")!
    const rows = app.query<{ hash: string }>("SELECT hash FROM subscription_tokens")
    assert.isTrue(rows.length > 0)
    assert.isFalse(rows.some((r) => r.hash === token || r.hash.includes(token)))
    assert.isTrue(rows.every((r) => /^[0-9a-f]{64}$/.test(r.hash)))
  })

  it("builds links from BASE_URL, never from the Host header", async () => {
    const email = uniqueEmail("host")
    await new Promise<void>((ok, fail) => {
      const body = new URLSearchParams({ name: "Hugo", email }).toString()
      const req = httpRequest(`${app.baseUrl}/subscribe`, {
        method: "POST",
        headers: {
          host: "evil.example",
          "content-type": "application/x-www-form-urlencoded",
          "content-length": body.length
        }
      }, (res) => (res.resume(), res.on("end", ok)))
      req.on("error", fail)
      req.end(body)
    })
    const mail = await mailTo(email)
    assert.notInclude(mail.raw, "evil.example")
    assert.isTrue(confirmLink(mail).startsWith(app.baseUrl))
  })

  const invalid: ReadonlyArray<[string, string | Record<string, string>, string, number, string, string | undefined]> =
    [
      ["missing name", { email: "a@example.com" }, "form", 400, "parameter_missing", "name"],
      ["empty name", { name: "", email: "a@example.com" }, "form", 400, "parameter_invalid", "name"],
      ["blank name", { name: "   ", email: "a@example.com" }, "form", 400, "parameter_invalid", "name"],
      ["over-long name", { name: "x".repeat(101), email: "a@example.com" }, "form", 400, "parameter_invalid", "name"],
      [
        "name with a line break",
        { name: "Eve\r\nBcc: x@example.com", email: "a@example.com" },
        "form",
        400,
        "parameter_invalid",
        "name"
      ],
      ["missing email", { name: "Ann" }, "form", 400, "parameter_missing", "email"],
      ["malformed email", { name: "Ann", email: "ann.example.com" }, "form", 400, "email_invalid", "email"],
      ["email with two @", { name: "Ann", email: "a@b@example.com" }, "form", 400, "email_invalid", "email"],
      [
        "over-long email",
        { name: "Ann", email: `${"a".repeat(64)}@${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(60)}.com` },
        "form",
        400,
        "email_invalid",
        "email"
      ],
      [
        "malformed feed name",
        { name: "Ann", email: "a@example.com", feed: "Not A Feed" },
        "form",
        400,
        "parameter_invalid",
        "feed"
      ],
      [
        "unknown feed",
        { name: "Ann", email: "a@example.com", feed: "no-such-feed" },
        "form",
        404,
        "resource_missing",
        "feed"
      ],
      ["wrong content type", "name=Ann&email=a@example.com", "text/plain", 415, "unsupported_media_type", undefined],
      ["no content type", "name=Ann&email=a@example.com", "", 415, "unsupported_media_type", undefined],
      ["malformed JSON", "{\"name\": \"Ann\",", "application/json", 400, "body_invalid", undefined],
      ["JSON array", "[1, 2]", "application/json", 400, "body_invalid", undefined],
      [
        "email as a JSON number",
        "{\"name\": \"Ann\", \"email\": 42}",
        "application/json",
        400,
        "email_invalid",
        "email"
      ],
      [
        "a form field the form does not have",
        { name: "Ann", email: "a@example.com", referrer: "newsletter" },
        "form",
        400,
        "parameter_unknown",
        "referrer"
      ],
      [
        "a JSON member the API does not take",
        "{\"name\": \"Ann\", \"email\": \"a@example.com\", \"age\": 40}",
        "application/json",
        400,
        "parameter_unknown",
        "age"
      ]
    ]

  for (const [label, body, type, status, code, param] of invalid) {
    it(`rejects ${label} with ${status} ${code}, storing nothing`, async () => {
      const before = counts()
      const response = typeof body === "string"
        ? await fetch(`${app.baseUrl}/subscribe`, {
          method: "POST",
          headers: type === "" ? {} : { "content-type": type },
          body: type === "" ? new Blob([body]) : body
        })
        : await subscribe(body)
      assert.strictEqual(response.status, status)
      assert.match(response.headers.get("content-type")!, /^application\/json/)
      const { error } = (await response.json()) as any
      assert.strictEqual(error.code, code)
      assert.strictEqual(error.param, param)
      assert.isString(error.message)
      assert.isTrue(error.message.length > 0)
      assert.strictEqual(error.doc_url, `${app.baseUrl}/docs/errors#${code}`)
      assert.strictEqual(error.request_id, response.headers.get("x-request-id"))
      assert.deepStrictEqual(counts(), before)
    })
  }
})

describe("abuse", () => {
  it("answers the same whether the address is new, pending or confirmed", async () => {
    const email = uniqueEmail("same")
    const shape = async () => {
      const response = await subscribe({ name: "Sam", email })
      const body = (await response.json()) as any
      return { status: response.status, keys: Object.keys(body.subscription).sort(), message: body.message, body }
    }
    const asNew = await shape()
    const asPending = await shape()
    await fetch(confirmLink(await mailTo(email)), { method: "POST" })
    assert.strictEqual(await statusOf(asNew.body.subscription.id), "active")
    const asActive = await shape()
    for (const later of [asPending, asActive]) {
      assert.strictEqual(later.status, asNew.status)
      assert.deepStrictEqual(later.keys, asNew.keys)
      assert.strictEqual(later.message, asNew.message)
      assert.deepStrictEqual(later.body, asNew.body)
    }
  })

  it("sends at most 3 confirmation mails for a burst of 10 requests", async () => {
    const email = uniqueEmail("burst")
    for (let i = 0; i < 10; i++) assert.strictEqual((await subscribe({ name: "Bo", email })).status, 200)
    await mailTo(email)
    await sleep(2_000)
    const sent = mailsTo(email).length
    assert.isTrue(sent >= 1 && sent <= 3, `sent ${sent} mails`)
    assert.strictEqual(app.query("SELECT id FROM subscriptions WHERE email = ?", email).length, 1)
  })

  it("stores and sends nothing when the honeypot field is filled, but answers the same", async () => {
    const email = uniqueEmail("bot")
    const response = await subscribe({ name: "Bot", email, website: "http://spam.example" })
    assert.strictEqual(response.status, 200)
    const body = (await response.json()) as any
    assert.deepStrictEqual(Object.keys(body.subscription).sort(), ["email", "feed", "id", "name"])
    assert.match(body.message, /pending/i)
    await sleep(1_500)
    assert.strictEqual(mailsTo(email).length, 0)
    assert.strictEqual(app.query("SELECT id FROM subscriptions WHERE email = ?", email).length, 0)
  })

  it("keeps one row under 20 concurrent identical requests", async () => {
    const email = uniqueEmail("race")
    const responses = await Promise.all(Array.from({ length: 20 }, () => subscribe({ name: "Rae", email })))
    const ids = new Set(await Promise.all(responses.map(async (r) => ((await r.json()) as any).subscription.id)))
    assert.isTrue(responses.every((r) => r.status === 200))
    assert.strictEqual(ids.size, 1)
    assert.strictEqual(app.query("SELECT id FROM subscriptions WHERE email = ?", email).length, 1)
  })
})

describe("unsubscribe", () => {
  it("works with one RFC 8058 POST, and its GET only shows a page", async () => {
    const email = uniqueEmail("leave")
    const { subscription } = (await (await subscribe({ name: "Lee", email })).json()) as any
    const url = (await mailTo(email)).headers["list-unsubscribe"]!.slice(1, -1)
    const page = await fetch(url)
    assert.strictEqual(page.status, 200)
    assert.include(await page.text(), "Unsubscribe")
    assert.strictEqual(await statusOf(subscription.id), "pending")
    const oneClick = await postForm(url, "", { "List-Unsubscribe": "One-Click" })
    assert.strictEqual(oneClick.status, 200)
    assert.strictEqual(await statusOf(subscription.id), "unsubscribed")
    assert.strictEqual((await postForm(url, "", { "List-Unsubscribe": "One-Click" })).status, 200)
  })

  it("answers 404 token_invalid for an unknown token", async () => {
    const response = await fetch(`${app.baseUrl}/unsubscribe?token=${"A".repeat(43)}`, { method: "POST" })
    assert.strictEqual(response.status, 404)
    assert.strictEqual(((await response.json()) as any).error.code, "token_invalid")
  })
})

describe("the token of confirm and unsubscribe", () => {
  const tokens = async (tag: string) => {
    const email = uniqueEmail(tag)
    const { subscription } = (await (await subscribe({ name: "Tia", email })).json()) as any
    const mail = await mailTo(email)
    const of = (url: string) => new URL(url).searchParams.get("token")!
    return {
      id: subscription.id,
      confirm: of(confirmLink(mail)),
      unsubscribe: of(mail.headers["list-unsubscribe"]!.slice(1, -1))
    }
  }
  const post = (path: string, body: string | undefined, type?: string) =>
    fetch(`${app.baseUrl}${path}`, {
      method: "POST",
      ...(type === undefined ? {} : { headers: { "content-type": type } }),
      ...(body === undefined ? {} : { body })
    })

  it("is taken from a form field: a page's hidden field, or a client that posts token=...", async () => {
    const t = await tokens("form-token")
    const confirmed = await postForm(app.baseUrl, "/subscribe/confirm", { token: t.confirm })
    assert.strictEqual(confirmed.status, 200, await confirmed.clone().text())
    assert.strictEqual(await statusOf(t.id), "active")
    const left = await postForm(app.baseUrl, "/unsubscribe", { token: t.unsubscribe, "List-Unsubscribe": "One-Click" })
    assert.strictEqual(left.status, 200)
    assert.strictEqual(await statusOf(t.id), "unsubscribed")
  })

  it("is taken from a JSON body", async () => {
    const t = await tokens("json-token")
    const confirmed = await post("/subscribe/confirm", JSON.stringify({ token: t.confirm }), "application/json")
    assert.strictEqual(confirmed.status, 200)
    assert.strictEqual(await statusOf(t.id), "active")
    const left = await post("/unsubscribe", JSON.stringify({ token: t.unsubscribe }), "application/json; charset=utf-8")
    assert.strictEqual(left.status, 200)
    assert.strictEqual(await statusOf(t.id), "unsubscribed")
  })

  it("may be in both places when they agree", async () => {
    const t = await tokens("both-token")
    const confirmed = await postForm(app.baseUrl, `/subscribe/confirm?token=${t.confirm}`, { token: t.confirm })
    assert.strictEqual(confirmed.status, 200)
    assert.strictEqual(await statusOf(t.id), "active")
  })

  it("in both places with different values answers 400 and changes nothing", async () => {
    const t = await tokens("differ-token")
    for (
      const response of [
        await postForm(app.baseUrl, `/subscribe/confirm?token=${t.confirm}`, { token: t.unsubscribe }),
        await post(`/unsubscribe?token=${t.unsubscribe}`, JSON.stringify({ token: t.confirm }), "application/json")
      ]
    ) {
      assert.strictEqual(response.status, 400)
      const { error } = (await response.json()) as any
      assert.strictEqual(error.code, "parameter_invalid")
      assert.strictEqual(error.param, "token")
      assert.notInclude(error.message, t.confirm)
    }
    assert.strictEqual(await statusOf(t.id), "pending")
  })

  it("missing from both answers 400 parameter_missing", async () => {
    for (
      const response of [await post("/subscribe/confirm", undefined), await postForm(app.baseUrl, "/unsubscribe", {})]
    ) {
      assert.strictEqual(response.status, 400)
      const { error } = (await response.json()) as any
      assert.strictEqual(error.code, "parameter_missing")
      assert.strictEqual(error.param, "token")
    }
  })
})

describe("admin and meta", () => {
  it("GET /subscriptions/{id} needs the admin key", async () => {
    const email = uniqueEmail("admin")
    const { subscription } = (await (await subscribe({ name: "Ada", email })).json()) as any
    const none = await fetch(`${app.baseUrl}/subscriptions/${subscription.id}`)
    assert.strictEqual(none.status, 401)
    assert.strictEqual(((await none.json()) as any).error.code, "api_key_invalid")
    assert.strictEqual((await admin(`/subscriptions/${subscription.id}`, "wrong")).status, 401)
    const ok = await admin(`/subscriptions/${subscription.id}`)
    assert.strictEqual(ok.status, 200)
    const body = (await ok.json()) as any
    assert.strictEqual(body.subscription.email, email)
    assert.strictEqual(body.subscription.status, "pending")
    const missing = await admin("/subscriptions/999999999")
    assert.strictEqual(missing.status, 404)
    assert.strictEqual(((await missing.json()) as any).error.param, "id")
  })

  it("documents every error code at an anchor of /docs/errors", async () => {
    const response = await fetch(`${app.baseUrl}/docs/errors`)
    assert.strictEqual(response.status, 200)
    assert.match(response.headers.get("content-type")!, /^text\/html; charset=utf-8/)
    const html = await response.text()
    for (const code of errorCodes) assert.include(html, `id="${code}"`)
  })

  it("sends Date, Content-Length and a request id on every response, 404 for unknown paths", async () => {
    for (const path of ["/healthz", "/readyz", "/docs/errors", "/no/such/path"]) {
      const response = await fetch(`${app.baseUrl}${path}`)
      assert.isNotNull(response.headers.get("date"))
      assert.isNotNull(response.headers.get("content-length"))
      assert.match(response.headers.get("x-request-id")!, /^req_[0-9a-f]{32}$/)
      if (path === "/no/such/path") {
        assert.strictEqual(response.status, 404)
        assert.strictEqual(((await response.json()) as any).error.code, "route_not_found")
      }
    }
  })
})
