// Black-box: the console's sign-in, sessions and merchant pages over the app's real socket (any runtime, any
// database): headers, cookies, CSRF, rate limit, escaping and who sees what.
import { assert, describe, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import { afterAll, beforeAll } from "vitest"
import { AdminKey, AppProcess, cliBundle, inMemory } from "../support/AppProcess.ts"
import {
  accountUri,
  createClient,
  firstApiKey,
  MerchantApi,
  transferBody,
  uniqueReference,
  unlimitedEnv
} from "../support/Payments.ts"
import { type Answer, ConsoleClient } from "./ConsoleClient.ts"

let app: AppProcess
beforeAll(async () => {
  app = await AppProcess.start({ env: { ...unlimitedEnv, CONSOLE_SIGNIN_RATE_LIMIT: "0" } })
})
afterAll(() => app?.stop())

const merchant = async (name: string) => {
  const created = await createClient(app, name)
  return { ...created, api: new MerchantApi(app.baseUrl, created.api_key) }
}
const cookieLine = (answer: Answer, name: string) => answer.setCookies.find((c) => c.startsWith(`${name}=`))
const approved = async (api: MerchantApi, overrides: Parameters<typeof transferBody>[0] = {}) => {
  const made = await api.create(transferBody({ reference: uniqueReference("console"), ...overrides }))
  assert.strictEqual(made.status, 201, made.text)
  return made.json.payment_transfer as { id: string; reference: string }
}

const assertConsoleHeaders = (answer: Answer) => {
  const csp = answer.headers.get("content-security-policy") ?? ""
  assert.include(csp, "default-src 'none'")
  assert.include(csp, "frame-ancestors 'none'")
  assert.notInclude(csp, "unsafe-inline")
  assert.notInclude(csp, "script-src")
  assert.strictEqual(answer.headers.get("referrer-policy"), "same-origin")
  assert.strictEqual(answer.headers.get("x-frame-options"), "DENY")
  assert.strictEqual(answer.headers.get("cache-control"), "no-store")
  assert.notInclude(answer.text, "<script")
}

// On every storage, `memory:` included (whose clients no CLI reaches): the sandbox's first client.
describe("the console on any storage", () => {
  it("the first client's key signs in, sees a transfer made through the API, and signs out", async () => {
    const key = firstApiKey(app.output)
    const transfer = await approved(new MerchantApi(app.baseUrl, key))
    const browser = new ConsoleClient(app.appUrl)
    assert.strictEqual((await browser.signIn(key)).status, 303)
    const list = await browser.get("/console/transfers")
    assert.include(list.text, `>${transfer.reference}</a>`)
    const out = await browser.post("/console/sign-out", { csrf_token: ConsoleClient.token(list) })
    assert.strictEqual(out.status, 303)
    assert.strictEqual((await browser.get("/console/transfers")).status, 303)
  })
})

describe.skipIf(inMemory)("the console over HTTP", () => {
  it("the sign-in page: a form with an API key field, a Sign in button, a CSRF token, the page's headers", async () => {
    const browser = new ConsoleClient(app.appUrl)
    const page = await browser.get("/console")
    assert.strictEqual(page.status, 200)
    assert.match(page.headers.get("content-type") ?? "", /^text\/html; charset=utf-8/)
    assertConsoleHeaders(page)
    assert.match(page.text, /<label for="api_key">API key<\/label>/)
    assert.match(page.text, /<input id="api_key" name="api_key" type="password"/)
    assert.match(page.text, /<button type="submit">Sign in<\/button>/)
    const formCookie = cookieLine(page, "paysub_console_form")!
    assert.match(formCookie, /HttpOnly/)
    assert.match(formCookie, /SameSite=Strict/)
    assert.notMatch(formCookie, /Secure/, "BASE_URL is http")
    assert.strictEqual(ConsoleClient.token(page), browser.cookies.get("paysub_console_form"))
  })

  it("a merchant's key opens its transfers; the session cookie holds neither key nor what is stored", async () => {
    const m = await merchant("console-merchant")
    const transfer = await approved(m.api)
    const browser = new ConsoleClient(app.appUrl)
    const signedIn = await browser.signIn(m.api_key)
    assert.strictEqual(signedIn.status, 303)
    assert.strictEqual(signedIn.headers.get("location"), "/console/transfers")
    assertConsoleHeaders(signedIn)
    const session = cookieLine(signedIn, "paysub_console")!
    assert.match(session, /HttpOnly/)
    assert.match(session, /SameSite=Strict/)
    assert.match(session, /Path=\/console/)
    const id = browser.cookies.get("paysub_console")!
    assert.match(id, /^[\w-]{43}$/)
    assert.notInclude(session, m.api_key)
    const list = await browser.get("/console/transfers")
    assert.strictEqual(list.status, 200)
    assertConsoleHeaders(list)
    assert.include(list.text, `>${transfer.reference}</a>`)
    assert.notInclude(list.text, m.api_key)
    const rows = app.query<Record<string, unknown>>("SELECT * FROM console_sessions WHERE client_id = ?", m.id)
    assert.lengthOf(rows, 1)
    const stored = JSON.stringify(rows)
    assert.notInclude(stored, m.api_key)
    assert.notInclude(stored, id)
    assert.notInclude(app.output, m.api_key)
  })

  it("signing in again ends the session the browser held", async () => {
    const m = await merchant("console-again")
    const browser = new ConsoleClient(app.appUrl)
    // The sign-in page, left open in a tab, is posted twice.
    const fields = { api_key: m.api_key, csrf_token: ConsoleClient.token(await browser.get("/console")) }
    assert.strictEqual((await browser.post("/console/sign-in", fields)).status, 303)
    const first = browser.cookies.get("paysub_console")!
    assert.strictEqual((await browser.post("/console/sign-in", fields)).status, 303)
    const second = browser.cookies.get("paysub_console")!
    assert.notStrictEqual(first, second)
    assert.strictEqual((await browser.get("/console/transfers")).status, 200)
    const old = new ConsoleClient(app.appUrl)
    old.cookies.set("paysub_console", first)
    assert.strictEqual((await old.get("/console/transfers")).status, 303)
    assert.lengthOf(app.query("SELECT * FROM console_sessions WHERE client_id = ?", m.id), 1)
  })

  it("a sign-in without the form's CSRF token, or with another, is refused and opens nothing", async () => {
    const m = await merchant("console-csrf")
    const browser = new ConsoleClient(app.appUrl)
    await browser.get("/console")
    for (const fields of [{ api_key: m.api_key }, { api_key: m.api_key, csrf_token: "x".repeat(43) }]) {
      const refused = await browser.post("/console/sign-in", fields)
      assert.strictEqual(refused.status, 403)
      assertConsoleHeaders(refused)
      assert.include(refused.text, "This form has expired")
      assert.isUndefined(cookieLine(refused, "paysub_console"))
    }
    // Without the form's cookie (another site's form posting here), the token alone is not enough.
    const page = await browser.get("/console")
    const stranger = new ConsoleClient(app.appUrl)
    const forged = await stranger.post("/console/sign-in", {
      api_key: m.api_key,
      csrf_token: ConsoleClient.token(page)
    })
    assert.strictEqual(forged.status, 403)
    assert.isUndefined(cookieLine(forged, "paysub_console"))
  })

  it("every wrong key gets the same answer", async () => {
    const m = await merchant("console-wrong")
    const answers = []
    for (const key of ["", "sk_unknown", `${m.api_key}x`, m.api_key.slice(0, -1), `${AdminKey}!`]) {
      const browser = new ConsoleClient(app.appUrl)
      const refused = await browser.signIn(key)
      assert.strictEqual(refused.status, 401)
      assert.isUndefined(cookieLine(refused, "paysub_console"))
      answers.push(refused.text.replace(/name="csrf_token" value="[^"]+"/, ""))
    }
    assert.strictEqual(new Set(answers).size, 1)
    assert.include(answers[0], "This key does not open a console.")
  })

  it("signing out needs the session's CSRF token, ends the session, and its cookie is refused after", async () => {
    const m = await merchant("console-out")
    const browser = new ConsoleClient(app.appUrl)
    await browser.signIn(m.api_key)
    const id = browser.cookies.get("paysub_console")!
    const list = await browser.get("/console/transfers")
    assert.match(list.text, /<button type="submit">Sign out<\/button>/)
    const noToken = await browser.post("/console/sign-out", {})
    assert.strictEqual(noToken.status, 403)
    assert.strictEqual((await browser.get("/console/transfers")).status, 200, "still signed in")
    const out = await browser.post("/console/sign-out", { csrf_token: ConsoleClient.token(list) })
    assert.strictEqual(out.status, 303)
    assert.strictEqual(out.headers.get("location"), "/console")
    assert.match(cookieLine(out, "paysub_console")!, /Expires=Thu, 01 Jan 1970|Max-Age=0/i)
    // The old cookie, sent again (as a copy of it would be), opens nothing.
    const replayed = new ConsoleClient(app.appUrl)
    replayed.cookies.set("paysub_console", id)
    const after = await replayed.get("/console/transfers")
    assert.strictEqual(after.status, 303)
    assert.strictEqual(after.headers.get("location"), "/console")
    assert.lengthOf(app.query("SELECT * FROM console_sessions WHERE client_id = ?", m.id), 0)
  })

  it("what people wrote is shown as text, and another merchant's transfer is not found", async () => {
    const m = await merchant("console-escape")
    const hostile = "<script>alert(1)</script>"
    const transfer = await approved(m.api, {
      reference: `"><img-src=x>${Date.now()}`,
      sender: { first_name: hostile, email: "ann@example.com" },
      recipient: { first_name: `<b>${hostile}</b>`, email: "bob@example.com", merchant_id: "merchant_1" }
    })
    const browser = new ConsoleClient(app.appUrl)
    await browser.signIn(m.api_key)
    const page = await browser.get(`/console/transfers/${transfer.id}`)
    assert.strictEqual(page.status, 200)
    assertConsoleHeaders(page)
    assert.notInclude(page.text, hostile)
    assert.notInclude(page.text, "<img-src")
    assert.include(page.text, "&lt;script&gt;alert(1)&lt;/script&gt;")
    assert.include(page.text, "&quot;&gt;&lt;img-src=x&gt;")
    const list = await browser.get(`/console/transfers?reference=${encodeURIComponent(transfer.reference)}`)
    assert.notInclude(list.text, "<img-src")
    assert.include(list.text, "&quot;&gt;&lt;img-src=x&gt;")

    const other = await merchant("console-other")
    const stranger = new ConsoleClient(app.appUrl)
    await stranger.signIn(other.api_key)
    const hidden = await stranger.get(`/console/transfers/${transfer.id}`)
    assert.strictEqual(hidden.status, 404)
    assert.notInclude(hidden.text, transfer.reference.slice(2))
    assert.strictEqual((await stranger.get("/console/transfers/not-an-id")).status, 404)
  })

  it("the admin key opens the list owner's console, which shows no merchant's transfers", async () => {
    const browser = new ConsoleClient(app.appUrl)
    const signedIn = await browser.signIn(AdminKey)
    assert.strictEqual(signedIn.status, 303)
    assert.strictEqual(signedIn.headers.get("location"), "/console/newsletter")
    const home = await browser.get("/console")
    assert.strictEqual(home.headers.get("location"), "/console/newsletter")
    assert.strictEqual((await browser.get("/console/newsletter")).status, 200)
    assert.strictEqual((await browser.get("/console/transfers")).status, 404)
    const rows = app.query<{ role: string; client_id: unknown }>(
      "SELECT role, client_id FROM console_sessions WHERE role = ?",
      "admin"
    )
    assert.isAtLeast(rows.length, 1)
    assert.isNull(rows[0]!.client_id)
  })

  it("rotating a merchant's key with the CLI ends its console sessions", async () => {
    const m = await merchant("console-rotate")
    const browser = new ConsoleClient(app.appUrl)
    await browser.signIn(m.api_key)
    assert.strictEqual((await browser.get("/console/transfers")).status, 200)
    const rotated = spawnSync(process.execPath, [cliBundle, "client", "rotate-key", m.id], {
      env: { ...process.env, DATABASE_URL: app.databaseUrl },
      encoding: "utf8"
    })
    assert.strictEqual(rotated.status, 0, rotated.stderr)
    assert.strictEqual((await browser.get("/console/transfers")).status, 303)
  })
})

describe.skipIf(inMemory)("the merchant's transfers in the console", () => {
  const rowsOf = (page: Answer) =>
    [...page.text.matchAll(
      /<tr><td><a href="\/console\/transfers\/(tr_\w+)">([^<]*)<\/a><\/td><td class="amount">([^<]*)<\/td><td>([A-Z]{3})<\/td><td>(\w+)<\/td><td><time datetime="([^"]+)">/g
    )]
      .map(([, id, reference, amount, currency, status, time]) => ({ id, reference, amount, currency, status, time }))
  const nextOf = (page: Answer) =>
    /<a href="([^"]+)" rel="next">Next page<\/a>/.exec(page.text)?.[1]?.replaceAll("&amp;", "&")

  it("newest first, 25 a page, filtered by status, searched by reference; each row its fields", async () => {
    const m = await merchant("console-list")
    const made: Array<{ id: string; reference: string; status: string }> = []
    for (let i = 0; i < 28; i++) {
      const declined = i % 4 === 0
      const body = transferBody({
        reference: uniqueReference(`list${i}`),
        amount: `${i + 1}.05`,
        ...(declined ? { sender_account_uri: accountUri("4000000000000002") } : {})
      })
      const answer = await m.api.create(body)
      assert.strictEqual(answer.status, declined ? 402 : 201, answer.text)
      made.push({
        id: declined ? answer.json.error.transfer : answer.json.payment_transfer.id,
        reference: body.payment_transfer.reference as string,
        status: declined ? "declined" : "approved"
      })
    }
    const newestFirst = [...made].reverse()
    const browser = new ConsoleClient(app.appUrl)
    await browser.signIn(m.api_key)

    const first = await browser.get("/console/transfers")
    const rows = rowsOf(first)
    assert.deepStrictEqual(rows.map((r) => r.id), newestFirst.slice(0, 25).map((t) => t.id))
    assert.deepStrictEqual(rows[0], {
      id: made[27]!.id,
      reference: made[27]!.reference,
      amount: "28.05",
      currency: "USD",
      status: "approved",
      time: rows[0]!.time
    })
    assert.isTrue(Date.now() - Date.parse(rows[0]!.time) < 120_000)
    const second = await browser.get(nextOf(first)!)
    assert.deepStrictEqual(rowsOf(second).map((r) => r.id), newestFirst.slice(25).map((t) => t.id))
    assert.isUndefined(nextOf(second))
    assert.include(second.text, ">First page</a>")

    const declined = await browser.get("/console/transfers?status=declined")
    assert.deepStrictEqual(
      rowsOf(declined).map((r) => [r.id, r.status]),
      newestFirst.filter((t) => t.status === "declined").map((t) => [t.id, "declined"])
    )
    assert.include(declined.text, "<option value=\"declined\" selected>")

    // Days two apart from today: the transfers were made seconds ago, whatever the time of day.
    const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10)
    const around = await browser.get(`/console/transfers?from=${day(-2)}&to=${day(2)}`)
    assert.deepStrictEqual(rowsOf(around).map((r) => r.id), newestFirst.slice(0, 25).map((t) => t.id))
    assert.include(around.text, `name="from" type="date" value="${day(-2)}"`)
    assert.include(nextOf(around)!, `from=${day(-2)}&to=${day(2)}`)
    assert.lengthOf(rowsOf(await browser.get(`/console/transfers?to=${day(-2)}`)), 0)
    assert.lengthOf(rowsOf(await browser.get(`/console/transfers?from=${day(2)}`)), 0)
    const declinedAround = await browser.get(`/console/transfers?status=declined&from=${day(-2)}&to=${day(2)}`)
    assert.lengthOf(rowsOf(declinedAround), 7)
    // A date that is not one is no filter.
    assert.lengthOf(rowsOf(await browser.get("/console/transfers?from=2026-02-31&to=yesterday")), 25)

    const target = made[10]!
    const found = await browser.get(`/console/transfers?reference=${encodeURIComponent(target.reference)}`)
    assert.deepStrictEqual(rowsOf(found).map((r) => r.id), [target.id])
    assert.lengthOf(rowsOf(await browser.get("/console/transfers?reference=no-such-reference")), 0)
    assert.lengthOf(rowsOf(await browser.get("/console/transfers?reference=has%20a%20space")), 0)
  })

  it("a transfer's page: its fields, the card as the API shows it, its refunds", async () => {
    const m = await merchant("console-page")
    const pan = "5555555555554444"
    const transfer = await approved(m.api, { amount: "40.00", sender_account_uri: accountUri(pan) })
    const refund = await m.api.refund(transfer.id, { amount: "15.00", reason: "requested_by_customer" })
    assert.strictEqual(refund.status, 201, refund.text)
    const browser = new ConsoleClient(app.appUrl)
    await browser.signIn(m.api_key)
    const page = await browser.get(`/console/transfers/${transfer.id}`)
    assert.strictEqual(page.status, 200)
    for (
      const shown of [
        `<code>${transfer.id}</code>`,
        "<dd>40.00 USD</dd>",
        "<dt>Refunded</dt><dd>15.00 USD</dd>",
        "<dd>approved</dd>",
        "mastercard ending 4444",
        "Ann Marie &lt;ann@example.com&gt;",
        "<dd>merchant_1</dd>",
        `<code>${refund.json.refund.id}</code>`,
        "15.00 USD</td><td>succeeded</td><td>requested_by_customer</td>"
      ]
    ) assert.include(page.text, shown)
    assert.notInclude(page.text, pan)
    assert.notInclude(page.text, pan.slice(0, 12))
    // Random ids and tokens (the transfer's and refund's ids, the CSRF token, the refund form's key) spell
    // "cvc" by chance about once in a hundred runs; the label or the account URI's "cvc=" never sits in one.
    assert.notMatch(page.text.replace(/[A-Za-z0-9_-]{16,}/g, "#"), /cvc/i)
  })
})

describe.skipIf(inMemory)("refunds from the console", () => {
  const refundsOf = async (api: MerchantApi, id: string) => {
    const list = await api.get(`/merchant/transfers/payment/${id}/refunds`)
    assert.strictEqual(list.status, 200, list.text)
    return list.json.data as Array<{ id: string; amount: string; status: string }>
  }
  const refundFields = (page: Answer) => ({
    csrf_token: ConsoleClient.token(page),
    idempotency_key: /name="idempotency_key" value="([^"]+)"/.exec(page.text)![1]!
  })

  it("the Amount field and Refund button make a refund the API shows; a double click makes one", async () => {
    const m = await merchant("console-refund")
    const transfer = await approved(m.api, { amount: "30.00" })
    const browser = new ConsoleClient(app.appUrl)
    await browser.signIn(m.api_key)
    const page = await browser.get(`/console/transfers/${transfer.id}`)
    assert.match(page.text, /<label for="amount">Amount<\/label>/)
    assert.match(page.text, /<button type="submit">Refund<\/button>/)
    const fields = { ...refundFields(page), amount: "7.50" }
    // Two posts of one form at once, as a double click sends them.
    const [first, second] = await Promise.all([
      browser.post(`/console/transfers/${transfer.id}/refunds`, fields),
      browser.post(`/console/transfers/${transfer.id}/refunds`, fields)
    ])
    for (const answer of [first!, second!]) {
      assert.strictEqual(answer.status, 303, answer.text)
      assert.strictEqual(answer.headers.get("location"), `/console/transfers/${transfer.id}`)
    }
    const made = await refundsOf(m.api, transfer.id)
    assert.deepStrictEqual(made.map((r) => [r.amount, r.status]), [["7.50", "succeeded"]])
    // Later, the same form again: still that one refund.
    assert.strictEqual((await browser.post(`/console/transfers/${transfer.id}/refunds`, fields)).status, 303)
    assert.lengthOf(await refundsOf(m.api, transfer.id), 1)
    const after = await browser.get(`/console/transfers/${transfer.id}`)
    assert.include(after.text, `<code>${made[0]!.id}</code>`)
    assert.include(after.text, "<dt>Refunded</dt><dd>7.50 USD</dd>")
    // An empty amount refunds what is left.
    assert.strictEqual(
      (await browser.post(`/console/transfers/${transfer.id}/refunds`, refundFields(after))).status,
      303
    )
    assert.deepStrictEqual((await refundsOf(m.api, transfer.id)).map((r) => r.amount), ["22.50", "7.50"])
    const refunded = await browser.get(`/console/transfers/${transfer.id}`)
    assert.notInclude(refunded.text, "<button type=\"submit\">Refund</button>", "nothing left to refund")
  })

  it("a refund without the session's CSRF token, too large, or of another's transfer makes none", async () => {
    const m = await merchant("console-refund-no")
    const transfer = await approved(m.api, { amount: "10.00" })
    const browser = new ConsoleClient(app.appUrl)
    await browser.signIn(m.api_key)
    const page = await browser.get(`/console/transfers/${transfer.id}`)
    const fields = refundFields(page)
    const path = `/console/transfers/${transfer.id}/refunds`
    const noToken = await browser.post(path, { amount: "1.00", idempotency_key: fields.idempotency_key })
    assert.strictEqual(noToken.status, 403)
    assert.include(noToken.text, "This form has expired")
    const tooLarge = await browser.post(path, { ...fields, amount: "10.01" })
    assert.strictEqual(tooLarge.status, 400)
    assert.include(tooLarge.text, "The amount is more than is left to refund: 10.00 USD.")
    assert.include(tooLarge.text, "value=\"10.01\"")
    const hostile = await browser.post(path, { ...refundFields(tooLarge), amount: "\"><script>alert(1)</script>" })
    assert.strictEqual(hostile.status, 400)
    assert.notInclude(hostile.text, "<script>")
    assert.lengthOf(await refundsOf(m.api, transfer.id), 0)

    const other = await merchant("console-refund-other")
    const stranger = new ConsoleClient(app.appUrl)
    await stranger.signIn(other.api_key)
    const own = await stranger.get("/console/transfers")
    const theirs = await stranger.post(path, { ...fields, csrf_token: ConsoleClient.token(own), amount: "1.00" })
    assert.strictEqual(theirs.status, 404)
    assert.lengthOf(await refundsOf(m.api, transfer.id), 0)
  })
})

describe.skipIf(inMemory)("the console's webhook endpoints", () => {
  const endpointsOf = async (key: string) => {
    const answer = await fetch(`${app.baseUrl}/webhook_endpoints`, { headers: { authorization: `Bearer ${key}` } })
    assert.strictEqual(answer.status, 200)
    return ((await answer.json()) as {
      data: Array<{
        id: string
        url: string
        enabled_events: Array<string>
        status: string
        disabled_reason?: string
      }>
    }).data
  }
  const secretOn = (page: Answer) => /<code id="secret">(whsec_[^<]+)<\/code>/.exec(page.text)?.[1]
  const hostileUrl = "https://93.184.216.34/hook?x=\"><script>alert(1)</script>"

  it("adds an endpoint through the API's use case, shows its secret once, and lists it escaped", async () => {
    const m = await merchant("console-hooks")
    const browser = new ConsoleClient(app.appUrl)
    await browser.signIn(m.api_key)
    const empty = await browser.get("/console/webhooks")
    assert.strictEqual(empty.status, 200)
    assertConsoleHeaders(empty)
    assert.include(empty.text, "No webhook endpoints.")
    assert.match(empty.text, /<input id="url" name="url"/)
    assert.include(empty.text, "name=\"transfer.approved\"")
    assert.notInclude(empty.text, "name=\"subscription.confirmed\"", "the admin's types are not offered")
    const added = await browser.post("/console/webhooks", {
      csrf_token: ConsoleClient.token(empty),
      url: hostileUrl,
      "transfer.approved": "on",
      "refund.created": "on"
    })
    assert.strictEqual(added.status, 201)
    assertConsoleHeaders(added)
    const secret = secretOn(added)
    assert.isDefined(secret)
    assert.notInclude(added.text, "<script>alert(1)")
    assert.include(added.text, "&lt;script&gt;alert(1)&lt;/script&gt;")
    const [endpoint] = await endpointsOf(m.api_key)
    assert.strictEqual(endpoint!.url, hostileUrl)
    assert.deepStrictEqual(endpoint!.enabled_events, ["transfer.approved", "refund.created"])
    const list = await browser.get("/console/webhooks")
    assert.include(list.text, `<code>${endpoint!.id}</code>`)
    assert.include(list.text, "&lt;script&gt;alert(1)&lt;/script&gt;")
    assert.notInclude(list.text, "<script>alert(1)")
    assert.notInclude(list.text, secret!, "the secret is shown once")
    assert.notInclude(app.output, secret!, "never logged")

    const rotated = await browser.post(`/console/webhooks/${endpoint!.id}/rotate`, {
      csrf_token: ConsoleClient.token(list)
    })
    assert.strictEqual(rotated.status, 200)
    const next = secretOn(rotated)
    assert.isDefined(next)
    assert.notStrictEqual(next, secret)
    assert.notInclude((await browser.get("/console/webhooks")).text, next!)
    assert.notInclude(app.output, next!)

    const removed = await browser.post(`/console/webhooks/${endpoint!.id}/delete`, {
      csrf_token: ConsoleClient.token(list)
    })
    assert.strictEqual(removed.status, 303)
    assert.strictEqual(removed.headers.get("location"), "/console/webhooks")
    assert.lengthOf(await endpointsOf(m.api_key), 0)
  })

  it("disables an endpoint, which the API then shows disabled by its owner, and enables it again", async () => {
    const m = await merchant("console-hooks-off")
    const browser = new ConsoleClient(app.appUrl)
    await browser.signIn(m.api_key)
    const csrf_token = ConsoleClient.token(await browser.get("/console/webhooks"))
    await browser.post("/console/webhooks", { csrf_token, url: "https://93.184.216.34/hook", "*": "on" })
    const [endpoint] = await endpointsOf(m.api_key)
    assert.strictEqual(endpoint!.status, "enabled")
    const off = await browser.post(`/console/webhooks/${endpoint!.id}/disable`, { csrf_token })
    assert.strictEqual(off.status, 303)
    const [disabled] = await endpointsOf(m.api_key)
    assert.strictEqual(disabled!.status, "disabled")
    assert.strictEqual(disabled!.disabled_reason, "Disabled by its owner")
    const list = await browser.get("/console/webhooks")
    assert.include(list.text, "Disabled by its owner")
    assert.include(list.text, `action="/console/webhooks/${endpoint!.id}/enable"`)
    assert.notInclude(list.text, `action="/console/webhooks/${endpoint!.id}/disable"`)
    const on = await browser.post(`/console/webhooks/${endpoint!.id}/enable`, { csrf_token })
    assert.strictEqual(on.status, 303)
    const [enabled] = await endpointsOf(m.api_key)
    assert.strictEqual(enabled!.status, "enabled")
    assert.isUndefined(enabled!.disabled_reason)
    assert.include((await browser.get("/console/webhooks")).text, `action="/console/webhooks/${endpoint!.id}/disable"`)
  })

  it("refuses what the API refuses: a private address, another owner's types, no types", async () => {
    const m = await merchant("console-hooks-refused")
    const browser = new ConsoleClient(app.appUrl)
    await browser.signIn(m.api_key)
    const csrf_token = ConsoleClient.token(await browser.get("/console/webhooks"))
    const privateUrl = await browser.post("/console/webhooks", {
      csrf_token,
      url: "https://169.254.169.254/latest",
      "*": "on"
    })
    assert.strictEqual(privateUrl.status, 400)
    assert.include(privateUrl.text, "role=\"alert\"")
    assert.include(privateUrl.text, "value=\"https://169.254.169.254/latest\"", "what was typed is kept")
    const notHttps = await browser.post("/console/webhooks", { csrf_token, url: "ftp://x", "*": "on" })
    assert.strictEqual(notHttps.status, 400)
    assert.include(notHttps.text, "url is an absolute https URL")
    const foreign = await browser.post("/console/webhooks", {
      csrf_token,
      url: "https://93.184.216.34/hook",
      "subscription.confirmed": "on"
    })
    assert.strictEqual(foreign.status, 400)
    assert.include(foreign.text, "This key cannot receive subscription.confirmed events")
    const none = await browser.post("/console/webhooks", { csrf_token, url: "https://93.184.216.34/hook" })
    assert.strictEqual(none.status, 400)
    assert.include(none.text, "Choose at least one event type.")
    assert.lengthOf(await endpointsOf(m.api_key), 0)
  })

  it("without the session's CSRF token nothing changes; another merchant's endpoint is not found", async () => {
    const m = await merchant("console-hooks-csrf")
    const browser = new ConsoleClient(app.appUrl)
    await browser.signIn(m.api_key)
    const page = await browser.get("/console/webhooks")
    const noToken = await browser.post("/console/webhooks", {
      url: "https://93.184.216.34/hook",
      "*": "on"
    })
    assert.strictEqual(noToken.status, 403)
    assert.include(noToken.text, "This form has expired")
    assert.lengthOf(await endpointsOf(m.api_key), 0)
    await browser.post("/console/webhooks", {
      csrf_token: ConsoleClient.token(page),
      url: "https://93.184.216.34/hook",
      "*": "on"
    })
    const [endpoint] = await endpointsOf(m.api_key)
    for (const action of ["rotate", "disable", "enable", "delete"]) {
      const refused = await browser.post(`/console/webhooks/${endpoint!.id}/${action}`, { csrf_token: "x".repeat(43) })
      assert.strictEqual(refused.status, 403, action)
    }

    const other = await merchant("console-hooks-other")
    const stranger = new ConsoleClient(app.appUrl)
    await stranger.signIn(other.api_key)
    const csrf_token = ConsoleClient.token(await stranger.get("/console/webhooks"))
    for (const action of ["rotate", "disable", "enable", "delete"]) {
      const theirs = await stranger.post(`/console/webhooks/${endpoint!.id}/${action}`, { csrf_token })
      assert.strictEqual(theirs.status, 404, action)
      assert.notMatch(theirs.text, /whsec_/)
    }
    assert.lengthOf(await endpointsOf(m.api_key), 1)
    assert.notInclude((await stranger.get("/console/webhooks")).text, endpoint!.id)
  })
})

describe.skipIf(inMemory)("the console's events", () => {
  const addEndpoint = async (key: string) => {
    const answer = await fetch(`${app.baseUrl}/webhook_endpoints`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ url: "https://93.184.216.34/resent", enabled_events: ["refund.created"] })
    })
    assert.strictEqual(answer.status, 201)
    return ((await answer.json()) as { id: string }).id
  }
  const deliveries = (event: string) =>
    app.query<{ n: number }>("SELECT COUNT(*) AS n FROM webhook_deliveries WHERE event_id = ?", event)[0]!.n

  it("lists the merchant's events, and resends one to an endpoint with the session's CSRF token", async () => {
    const m = await merchant("console-events")
    const transfer = await approved(m.api)
    const endpoint = await addEndpoint(m.api_key)
    const browser = new ConsoleClient(app.appUrl)
    await browser.signIn(m.api_key)
    const page = await browser.get("/console/events")
    assert.strictEqual(page.status, 200)
    assertConsoleHeaders(page)
    const event = /<code>(evt_\w+)<\/code>/.exec(page.text)![1]!
    assert.include(page.text, "transfer.approved")
    assert.include(page.text, `href="/console/transfers/${transfer.id}"`)
    assert.include(page.text, `<option value="${endpoint}">`)
    assert.strictEqual(deliveries(event), 0, "the endpoint did not ask for transfer events")

    const path = `/console/events/${event}/resend`
    const noToken = await browser.post(path, { webhook_endpoint: endpoint })
    assert.strictEqual(noToken.status, 403)
    assert.strictEqual(deliveries(event), 0)
    const resent = await browser.post(path, { webhook_endpoint: endpoint, csrf_token: ConsoleClient.token(page) })
    assert.strictEqual(resent.status, 200)
    assert.include(resent.text, `Event <code>${event}</code> will be sent again to <code>${endpoint}</code>`)
    // A second connection to the SQLite file sees the delivery's row a moment after the answer.
    for (let i = 0; i < 40 && deliveries(event) === 0; i++) await new Promise((r) => setTimeout(r, 50))
    assert.strictEqual(deliveries(event), 1)

    const other = await merchant("console-events-other")
    const stranger = new ConsoleClient(app.appUrl)
    await stranger.signIn(other.api_key)
    const theirs = await stranger.get("/console/events")
    assert.notInclude(theirs.text, event)
    const refused = await stranger.post(path, {
      webhook_endpoint: endpoint,
      csrf_token: ConsoleClient.token(theirs)
    })
    assert.strictEqual(refused.status, 404)
    assert.strictEqual(deliveries(event), 1)
    await fetch(`${app.baseUrl}/webhook_endpoints/${endpoint}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${m.api_key}` }
    })
  })
})

describe.skipIf(inMemory)("the console behind https, with a sign-in limit", () => {
  let limited: AppProcess
  beforeAll(async () => {
    limited = await AppProcess.start({
      env: { ...unlimitedEnv, BASE_URL: "https://console.example", CONSOLE_SIGNIN_RATE_LIMIT: "3" }
    })
  })
  afterAll(() => limited?.stop())

  it("cookies are Secure; sign-in attempts past the limit from one address get 429", async () => {
    const browser = new ConsoleClient(limited.appUrl)
    const page = await browser.get("/console")
    assert.match(cookieLine(page, "paysub_console_form")!, /; Secure/)
    const token = ConsoleClient.token(page)
    const statuses = []
    for (let i = 0; i < 5; i++) {
      statuses.push((await browser.post("/console/sign-in", { api_key: `sk_wrong${i}`, csrf_token: token })).status)
    }
    assert.deepStrictEqual(statuses, [401, 401, 401, 429, 429])
    const last = await browser.post("/console/sign-in", { api_key: AdminKey, csrf_token: token })
    assert.strictEqual(last.status, 429, "the right key too, once the limit is reached")
    assert.isNotNull(last.headers.get("retry-after"))
  })
})
