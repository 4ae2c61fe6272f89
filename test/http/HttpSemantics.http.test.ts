import { assert, describe, it } from "@effect/vitest"
import { Validator } from "@seriousme/openapi-schema-validator"
import { afterAll, beforeAll } from "vitest"
import { AdminKey, AppProcess, form } from "../support/AppProcess.ts"
import {
  bodyJson,
  header,
  headerNames,
  rawRequest,
  type RawResponse,
  type RequestSpec,
  requestText
} from "../support/RawHttp.ts"

// Black-box: DESIGN.md section 3 "Feeds and subscriptions (admin)" and "HTTP semantics" (interface 4.3),
// against one real app process (default configuration, HTTP_TRACE on) on a real socket. Methods and framings
// fetch cannot send or show (HEAD bytes, TRACE, exact header case) go over node:net (test/support/RawHttp.ts).
// The app with TRACE off and small limits is in HttpSemantics.limits.http.test.ts.
let app: AppProcess
let sandboxKey: string
let subscriptionId: number

const firstApiKey = (output: string): string => {
  const match = /secret key, shown only now:\r?\n\s*(sk_[A-Za-z0-9_-]+)/.exec(output)
  if (match === null) throw new Error(`the app printed no API key:\n${output}`)
  return match[1]!
}

let counter = 0
const unique = (tag: string) => `${tag}-${process.pid}-${++counter}`
const uniqueEmail = (tag: string) => `${unique(tag)}@example.com`
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const adminHeaders = { authorization: `Bearer ${AdminKey}` }
const formHeaders = { "content-type": "application/x-www-form-urlencoded" }

const putFeed = (name: string, title: string, headers: Record<string, string> = adminHeaders) =>
  fetch(`${app.baseUrl}/feeds/${name}`, {
    method: "PUT",
    headers: { ...formHeaders, ...headers },
    body: form({ title })
  })
const deleteFeed = (name: string, headers: Record<string, string> = adminHeaders) =>
  fetch(`${app.baseUrl}/feeds/${name}`, { method: "DELETE", headers })
const subscribe = (fields: Record<string, string>) =>
  fetch(`${app.baseUrl}/subscribe`, { method: "POST", headers: formHeaders, body: form(fields) })
const subscriptionStatus = async (id: number) => {
  const response = await fetch(`${app.baseUrl}/subscriptions/${id}`, { headers: adminHeaders })
  assert.strictEqual(response.status, 200)
  return ((await response.json()) as any).subscription.status as string
}
const raw = (spec: RequestSpec) => rawRequest(app.port, spec)

const assertError = async (
  response: Response,
  status: number,
  code: string,
  param?: string
): Promise<any> => {
  const text = await response.text()
  assert.strictEqual(response.status, status, text)
  const body = JSON.parse(text)
  assert.strictEqual(body.error.code, code, text)
  if (param !== undefined) assert.strictEqual(body.error.param, param, text)
  assert.strictEqual(body.error.request_id, response.headers.get("x-request-id"))
  return body
}

// IMF-fixdate (RFC 9110 5.6.7), the one HTTP-date form a server generates.
const imfFixdate =
  /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/

beforeAll(async () => {
  app = await AppProcess.start()
  sandboxKey = firstApiKey(app.output)
  const response = await subscribe({ name: "Semantics", email: uniqueEmail("head") })
  assert.strictEqual(response.status, 200)
  subscriptionId = ((await response.json()) as any).subscription.id
})
afterAll(async () => {
  await app?.stop()
})

describe("feeds administration", () => {
  it("PUT /feeds/{name} with the admin key: 201 + Location when new (form), 200 when replaced (JSON)", async () => {
    const name = unique("feed")
    const created = await putFeed(name, "First title")
    assert.strictEqual(created.status, 201)
    assert.strictEqual(created.headers.get("location"), `${app.baseUrl}/feeds/${name}`)
    const body = (await created.json()) as any
    assert.strictEqual(body.feed.name, name)
    assert.strictEqual(body.feed.title, "First title")

    const replaced = await fetch(`${app.baseUrl}/feeds/${name}`, {
      method: "PUT",
      headers: { ...adminHeaders, "content-type": "application/json" },
      body: JSON.stringify({ title: "Second title" })
    })
    assert.strictEqual(replaced.status, 200)
    assert.isNull(replaced.headers.get("location"))
    assert.strictEqual(((await replaced.json()) as any).feed.title, "Second title")

    const read = await fetch(created.headers.get("location")!)
    assert.strictEqual(read.status, 200)
    assert.strictEqual(((await read.json()) as any).feed.title, "Second title")
  })

  it("PUT /feeds/{name} with JSON creates too (201)", async () => {
    const name = unique("json")
    const created = await fetch(`${app.baseUrl}/feeds/${name}`, {
      method: "PUT",
      headers: { ...adminHeaders, "content-type": "application/json" },
      body: JSON.stringify({ title: "From JSON" })
    })
    assert.strictEqual(created.status, 201)
    assert.strictEqual(created.headers.get("location"), `${app.baseUrl}/feeds/${name}`)
  })

  it("PUT and DELETE without the admin key (or with a wrong one) are 401 and change nothing", async () => {
    const name = unique("nokey")
    await assertError(await putFeed(name, "T", {}), 401, "api_key_invalid")
    await assertError(await putFeed(name, "T", { authorization: "Bearer wrong-key" }), 401, "api_key_invalid")
    assert.strictEqual((await fetch(`${app.baseUrl}/feeds/${name}`)).status, 404)
    await assertError(await deleteFeed("default", {}), 401, "api_key_invalid")
    assert.strictEqual((await fetch(`${app.baseUrl}/feeds/default`)).status, 200)
  })

  it("a bad feed name is 400 naming param name", async () => {
    await assertError(await putFeed("Bad%20Name", "T"), 400, "parameter_invalid", "name")
    await assertError(await putFeed("-leading-hyphen", "T"), 400, "parameter_invalid", "name")
  })

  it("an empty (or blank) title is 400 naming param title", async () => {
    const name = unique("empty")
    await assertError(await putFeed(name, ""), 400, "parameter_invalid", "title")
    await assertError(await putFeed(name, "   "), 400, "parameter_invalid", "title")
    assert.strictEqual((await fetch(`${app.baseUrl}/feeds/${name}`)).status, 404, "nothing stored")
  })

  it("DELETE /feeds/{name}: 204 with no body, again 404 resource_missing", async () => {
    const name = unique("del")
    assert.strictEqual((await putFeed(name, "To delete")).status, 201)
    const deleted = await raw({ method: "DELETE", target: `/feeds/${name}`, headers: adminHeaders })
    assert.strictEqual(deleted.status, 204)
    assert.strictEqual(deleted.rawBody.length, 0)
    await assertError(await deleteFeed(name), 404, "resource_missing")
    await assertError(await fetch(`${app.baseUrl}/feeds/${name}`), 404, "resource_missing")
  })

  for (const target of ["/feeds", "/feeds/default"]) {
    it(`GET ${target} is public and cacheable: ETag, Last-Modified, Cache-Control, Expires, Date, Content-Length`, async () => {
      const response = await raw({ method: "GET", target })
      assert.strictEqual(response.status, 200)
      assert.match(header(response, "etag")!, /^"[^"]+"$/)
      assert.match(header(response, "last-modified")!, imfFixdate)
      const cacheControl = header(response, "cache-control")!.split(",").map((d) => d.trim().toLowerCase())
      assert.include(cacheControl, "public")
      assert.include(cacheControl, "max-age=60")
      const date = header(response, "date")!
      const expires = header(response, "expires")!
      assert.match(date, imfFixdate)
      assert.match(expires, imfFixdate)
      const ahead = Date.parse(expires) - Date.parse(date)
      assert.isTrue(ahead >= 59_000 && ahead <= 61_000, `Expires ${expires} is ${ahead} ms after Date ${date}`)
      assert.strictEqual(Number(header(response, "content-length")), response.body.length)
      // Deno.serve refreshes its Date header once a second, so it may trail a change made this second.
      assert.isTrue(Date.parse(header(response, "last-modified")!) <= Date.parse(date) + 1000)
    })
  }

  it("If-None-Match with the ETag is 304 with no body and the same ETag; a changed title changes the ETag", async () => {
    const name = unique("etag")
    assert.strictEqual((await putFeed(name, "Before")).status, 201)
    const first = await raw({ method: "GET", target: `/feeds/${name}` })
    const etag = header(first, "etag")!

    const notModified = await raw({ method: "GET", target: `/feeds/${name}`, headers: { "If-None-Match": etag } })
    assert.strictEqual(notModified.status, 304)
    assert.strictEqual(notModified.rawBody.length, 0, "a 304 has no body")
    assert.strictEqual(header(notModified, "etag"), etag)
    assert.strictEqual(header(notModified, "last-modified"), header(first, "last-modified"))
    assert.isDefined(header(notModified, "cache-control"))

    const listEtag = header(await raw({ method: "GET", target: "/feeds" }), "etag")!
    assert.strictEqual(
      (await raw({ method: "GET", target: "/feeds", headers: { "If-None-Match": listEtag } })).status,
      304
    )

    assert.strictEqual((await putFeed(name, "After")).status, 200)
    const changed = await raw({ method: "GET", target: `/feeds/${name}`, headers: { "If-None-Match": etag } })
    assert.strictEqual(changed.status, 200, "the old ETag no longer matches")
    assert.notStrictEqual(header(changed, "etag"), etag)
    assert.strictEqual(bodyJson(changed).feed.title, "After")
    const list = await raw({ method: "GET", target: "/feeds", headers: { "If-None-Match": listEtag } })
    assert.strictEqual(list.status, 200, "the collection's old ETag no longer matches either")
  })

  it("If-None-Match takes precedence over If-Modified-Since, and matches weakly and in lists", async () => {
    const first = await raw({ method: "GET", target: "/feeds/default" })
    const etag = header(first, "etag")!
    const lastModified = header(first, "last-modified")!
    const other = await raw({
      method: "GET",
      target: "/feeds/default",
      headers: { "If-None-Match": "\"something-else\"", "If-Modified-Since": lastModified }
    })
    assert.strictEqual(other.status, 200)
    for (const value of [`W/${etag}`, `"x", ${etag}`, "*"]) {
      const response = await raw({ method: "GET", target: "/feeds/default", headers: { "If-None-Match": value } })
      assert.strictEqual(response.status, 304, value)
    }
  })

  it("If-Modified-Since equal to Last-Modified is 304, one day before is 200", async () => {
    for (const target of ["/feeds/default", "/feeds"]) {
      const first = await raw({ method: "GET", target })
      const lastModified = header(first, "last-modified")!
      const same = await raw({ method: "GET", target, headers: { "If-Modified-Since": lastModified } })
      assert.strictEqual(same.status, 304, target)
      assert.strictEqual(same.rawBody.length, 0)
      const dayBefore = new Date(Date.parse(lastModified) - 86_400_000).toUTCString()
      const older = await raw({ method: "GET", target, headers: { "If-Modified-Since": dayBefore } })
      assert.strictEqual(older.status, 200, target)
      assert.deepStrictEqual(older.body, first.body)
    }
  })

  it("subscribing to a feed that does not exist is 404 resource_missing param feed; to a new feed it works", async () => {
    const name = unique("sub")
    await assertError(
      await subscribe({ name: "Ann", email: uniqueEmail("ann"), feed: name }),
      404,
      "resource_missing",
      "feed"
    )
    assert.strictEqual((await putFeed(name, "Fresh")).status, 201)
    const ok = await subscribe({ name: "Ann", email: uniqueEmail("ann"), feed: name })
    assert.strictEqual(ok.status, 200)
    assert.strictEqual(((await ok.json()) as any).subscription.feed, name)
  })

  it("deleting a feed unsubscribes its subscribers, refuses new ones, and changes the collection's validators", async () => {
    const name = unique("gone")
    assert.strictEqual((await putFeed(name, "Short-lived")).status, 201)
    const ids: Array<number> = []
    for (const tag of ["one", "two"]) {
      const response = await subscribe({ name: "Sub", email: uniqueEmail(tag), feed: name })
      assert.strictEqual(response.status, 200)
      ids.push(((await response.json()) as any).subscription.id)
    }
    assert.strictEqual(await subscriptionStatus(ids[0]!), "pending")
    const before = await raw({ method: "GET", target: "/feeds" })
    assert.include(bodyJson(before).feeds.map((f: any) => f.name), name)
    // HTTP dates have a resolution of one second: let the delete fall in a later second than the PUT.
    await sleep(1_100)

    assert.strictEqual((await deleteFeed(name)).status, 204)
    for (const id of ids) assert.strictEqual(await subscriptionStatus(id), "unsubscribed")
    await assertError(
      await subscribe({ name: "Late", email: uniqueEmail("late"), feed: name }),
      404,
      "resource_missing",
      "feed"
    )

    const after = await raw({ method: "GET", target: "/feeds" })
    assert.notInclude(bodyJson(after).feeds.map((f: any) => f.name), name)
    assert.notStrictEqual(header(after, "etag"), header(before, "etag"))
    assert.isTrue(
      Date.parse(header(after, "last-modified")!) > Date.parse(header(before, "last-modified")!),
      `Last-Modified ${header(after, "last-modified")} after the delete, ${header(before, "last-modified")} before`
    )
    const stale = await raw({
      method: "GET",
      target: "/feeds",
      headers: { "If-Modified-Since": header(before, "last-modified")! }
    })
    assert.strictEqual(stale.status, 200, "If-Modified-Since from before the delete is no longer current")
    const staleTag = await raw({
      method: "GET",
      target: "/feeds",
      headers: { "If-None-Match": header(before, "etag")! }
    })
    assert.strictEqual(staleTag.status, 200)
  })
})

describe("HEAD answers every GET route like GET, without a body", () => {
  const invalidToken = "A".repeat(43)
  const routes: ReadonlyArray<[string, () => Record<string, string>]> = [
    ["/healthz", () => ({})],
    ["/readyz", () => ({})],
    ["/docs/errors", () => ({})],
    ["/openapi.json", () => ({})],
    ["/feeds", () => ({})],
    ["/feeds/default", () => ({})],
    ["/feeds/no-such-feed", () => ({})],
    ["/subscribe", () => ({})],
    ["/subscriptions", () => adminHeaders],
    ["/subscriptions/{id}", () => adminHeaders],
    ["/subscriptions/{id} (no key)", () => ({})],
    ["/merchant/balance", () => ({ authorization: `Bearer ${sandboxKey}` })],
    ["/merchant/transfers/payment", () => ({ authorization: `Bearer ${sandboxKey}` })],
    ["/merchant/transfers/payment/tr_missing", () => ({ authorization: `Bearer ${sandboxKey}` })],
    [`/subscribe/confirm?token=${invalidToken}`, () => ({ accept: "text/html" })],
    [`/unsubscribe?token=${invalidToken}`, () => ({ accept: "text/html" })],
    ["/no/such/route", () => ({})]
  ]
  const ignored = new Set(["date", "x-request-id", "expires"])
  const compared = ["content-type", "content-length", "etag", "cache-control", "last-modified", "allow"]

  for (const [route, headers] of routes) {
    it(`HEAD ${route}`, async () => {
      const target = route.replace("{id}", String(subscriptionId)).replace(/ \(.*\)$/, "")
      const get = await raw({ method: "GET", target, headers: headers() })
      const head = await raw({ method: "HEAD", target, headers: headers() })
      assert.strictEqual(head.status, get.status)
      assert.isAbove(get.body.length, 0, "the GET has a body to leave out")
      assert.strictEqual(head.rawBody.length, 0, `HEAD sent a body: ${head.rawBody.toString("latin1").slice(0, 200)}`)
      for (const name of compared) assert.strictEqual(header(head, name), header(get, name), name)
      assert.deepStrictEqual(
        headerNames(head).filter((n) => !ignored.has(n)).sort(),
        headerNames(get).filter((n) => !ignored.has(n)).sort()
      )
      assert.strictEqual(Number(header(head, "content-length")), get.body.length)
      assert.isDefined(header(head, "date"))
      assert.isDefined(header(head, "x-request-id"))
    })
  }

  it("HEAD of a feed with If-None-Match is 304 like GET", async () => {
    const etag = header(await raw({ method: "GET", target: "/feeds/default" }), "etag")!
    const head = await raw({ method: "HEAD", target: "/feeds/default", headers: { "If-None-Match": etag } })
    assert.strictEqual(head.status, 304)
    assert.strictEqual(head.rawBody.length, 0)
    assert.strictEqual(header(head, "etag"), etag)
  })
})

describe("TRACE", () => {
  const secrets = {
    authorization: "Bearer trace-secret-authorization-7f3a",
    cookie: "session=trace-secret-cookie-91bc",
    proxy: "Basic trace-secret-proxy-d04e"
  }
  const sent = (target: string): RequestSpec => ({
    method: "TRACE",
    target,
    headers: [
      ["Host", `127.0.0.1:${app.port}`],
      ["X-Custom-Header", "Value-1"],
      ["x-lower-case", "lower value"],
      ["Accept", "*/*"],
      ["Authorization", secrets.authorization],
      ["Cookie", secrets.cookie],
      ["proxy-authorization", secrets.proxy],
      ["Connection", "close"]
    ]
  })

  for (const target of ["/some/path?x=1", "/feeds/default", "/subscribe?a=b&c=d", "/healthz"]) {
    it(`TRACE ${target} echoes the request line and header lines as sent, without credentials`, async () => {
      const spec = sent(target)
      const response = await raw(spec)
      assert.strictEqual(response.status, 200)
      assert.match(header(response, "content-type")!, /^message\/http\b/)
      const echo = response.body.toString("latin1")
      assert.isTrue(echo.startsWith(`TRACE ${target} HTTP/1.1\r\n`), echo)
      for (const [name, value] of spec.headers as ReadonlyArray<[string, string]>) {
        if (["authorization", "cookie", "proxy-authorization"].includes(name.toLowerCase())) continue
        // Deno hands the app header names in lower case (docs/operations.md, "Deno": one of the differences between runtimes).
        const line = process.env.APP_RUNTIME === "deno" ? `${name.toLowerCase()}: ${value}` : `${name}: ${value}`
        assert.include(echo, `\r\n${line}\r\n`, `${name} as sent`)
      }
      for (const secret of Object.values(secrets)) assert.notInclude(echo, secret)
      for (const part of ["7f3a", "91bc", "d04e"]) assert.notInclude(echo, part)
      assert.strictEqual(Number(header(response, "content-length")), response.body.length)
      assert.isDefined(header(response, "x-request-id"))
    })
  }
})

describe("OPTIONS, 405 and 404", () => {
  const allowOf = (value: string | undefined) => (value ?? "").split(",").map((m) => m.trim()).filter((m) => m !== "")
  const table: ReadonlyArray<[string, ReadonlyArray<string>]> = [
    ["/feeds/x", ["GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"]],
    ["/feeds", ["GET", "HEAD", "OPTIONS", "TRACE"]],
    ["/subscribe", ["GET", "HEAD", "POST", "OPTIONS", "TRACE"]],
    ["/subscriptions", ["GET", "HEAD", "OPTIONS", "TRACE"]],
    ["/subscribe/confirm", ["GET", "HEAD", "POST", "OPTIONS", "TRACE"]],
    ["/unsubscribe", ["GET", "HEAD", "POST", "OPTIONS", "TRACE"]],
    ["/subscriptions/1", ["GET", "HEAD", "OPTIONS", "TRACE"]],
    ["/merchant/transfers/payment", ["GET", "HEAD", "POST", "OPTIONS", "TRACE"]],
    ["/merchant/transfers/payment/tr_1", ["GET", "HEAD", "OPTIONS", "TRACE"]],
    ["/merchant/balance", ["GET", "HEAD", "OPTIONS", "TRACE"]],
    ["/healthz", ["GET", "HEAD", "OPTIONS", "TRACE"]],
    ["/openapi.json", ["GET", "HEAD", "OPTIONS", "TRACE"]]
  ]
  for (const [path, methods] of table) {
    it(`OPTIONS ${path}: 204 with Allow: ${methods.join(", ")}`, async () => {
      const response = await raw({ method: "OPTIONS", target: path })
      assert.strictEqual(response.status, 204)
      assert.strictEqual(response.rawBody.length, 0)
      assert.sameMembers(allowOf(header(response, "allow")), [...methods])
      assert.strictEqual(allowOf(header(response, "allow")).length, methods.length, "no method listed twice")
    })
  }

  const notAllowed: ReadonlyArray<[string, string, ReadonlyArray<string>]> = [
    ["DELETE", "/subscribe", ["GET", "HEAD", "POST", "OPTIONS", "TRACE"]],
    ["POST", "/healthz", ["GET", "HEAD", "OPTIONS", "TRACE"]],
    ["PATCH", "/feeds/x", ["GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"]],
    ["PUT", "/feeds", ["GET", "HEAD", "OPTIONS", "TRACE"]],
    ["DELETE", "/merchant/balance", ["GET", "HEAD", "OPTIONS", "TRACE"]]
  ]
  for (const [method, path, methods] of notAllowed) {
    it(`${method} ${path}: 405 method_not_allowed with Allow`, async () => {
      const response = await raw({ method, target: path, headers: adminHeaders })
      assert.strictEqual(response.status, 405)
      assert.sameMembers(allowOf(header(response, "allow")), [...methods])
      const body = bodyJson(response)
      assert.strictEqual(body.error.code, "method_not_allowed")
      assert.strictEqual(body.error.type, "invalid_request_error")
      assert.strictEqual(body.error.request_id, header(response, "x-request-id"))
      assert.match(body.error.doc_url, /\/docs\/errors#method_not_allowed$/)
    })
  }

  it("PUT /subscribe (a path with GET and POST): 405 with Allow, and no body for HEAD", async () => {
    const response = await raw({ method: "PUT", target: "/subscribe" })
    assert.strictEqual(response.status, 405)
    assert.sameMembers(allowOf(header(response, "allow")), ["GET", "HEAD", "POST", "OPTIONS", "TRACE"])
    const head = await raw({ method: "HEAD", target: "/subscribe" })
    assert.strictEqual(head.status, 200)
    assert.strictEqual(head.rawBody.length, 0)
  })

  for (const [method, path] of [["GET", "/no/such/route"], ["OPTIONS", "/nope"], ["POST", "/feeds/x/y"]] as const) {
    it(`${method} ${path} (unknown path): 404 route_not_found`, async () => {
      const response = await raw({ method, target: path })
      assert.strictEqual(response.status, 404)
      assert.isUndefined(header(response, "allow"))
      const body = bodyJson(response)
      assert.strictEqual(body.error.code, "route_not_found")
      assert.strictEqual(body.error.request_id, header(response, "x-request-id"))
    })
  }
})

describe("every response carries Date, X-Request-Id and its framing", () => {
  it("samples successes, errors, 201, 204, 304 and HTML pages", async () => {
    const feed = unique("every")
    const etag = header(await raw({ method: "GET", target: "/feeds/default" }), "etag")!
    const samples: ReadonlyArray<[string, RequestSpec]> = [
      ["GET /healthz", { method: "GET", target: "/healthz" }],
      ["GET /openapi.json", { method: "GET", target: "/openapi.json" }],
      ["GET /docs/errors (HTML)", { method: "GET", target: "/docs/errors" }],
      ["PUT new feed (201)", {
        method: "PUT",
        target: `/feeds/${feed}`,
        headers: { ...adminHeaders, ...formHeaders },
        body: "title=T"
      }],
      ["PUT same feed (200)", {
        method: "PUT",
        target: `/feeds/${feed}`,
        headers: { ...adminHeaders, ...formHeaders },
        body: "title=U"
      }],
      ["DELETE feed (204)", { method: "DELETE", target: `/feeds/${feed}`, headers: adminHeaders }],
      ["GET feed If-None-Match (304)", { method: "GET", target: "/feeds/default", headers: { "If-None-Match": etag } }],
      ["OPTIONS (204)", { method: "OPTIONS", target: "/subscribe" }],
      ["POST /subscribe (200)", {
        method: "POST",
        target: "/subscribe",
        headers: formHeaders,
        body: form({ name: "E", email: uniqueEmail("every") })
      }],
      ["POST /subscribe bad email (400)", {
        method: "POST",
        target: "/subscribe",
        headers: formHeaders,
        body: "name=E&email=nope"
      }],
      ["POST /subscribe text/plain (415)", {
        method: "POST",
        target: "/subscribe",
        headers: { "content-type": "text/plain" },
        body: "hi"
      }],
      ["PUT feed without key (401)", { method: "PUT", target: "/feeds/x", headers: formHeaders, body: "title=T" }],
      ["GET unknown feed (404)", { method: "GET", target: "/feeds/no-such-feed" }],
      ["GET unknown route (404)", { method: "GET", target: "/nope" }],
      ["DELETE /subscribe (405)", { method: "DELETE", target: "/subscribe" }],
      ["confirm page, bad token (404 HTML)", {
        method: "GET",
        target: `/subscribe/confirm?token=${"B".repeat(43)}`,
        headers: { accept: "text/html" }
      }],
      ["confirm POST, bad token (404 HTML)", {
        method: "POST",
        target: `/subscribe/confirm?token=${"B".repeat(43)}`,
        headers: { accept: "text/html" }
      }],
      ["merchant balance (200)", {
        method: "GET",
        target: "/merchant/balance",
        headers: { authorization: `Bearer ${sandboxKey}` }
      }],
      ["merchant bad key (401)", {
        method: "GET",
        target: "/merchant/balance",
        headers: { authorization: "Bearer sk_wrong" }
      }],
      ["merchant POST form (415)", {
        method: "POST",
        target: "/merchant/transfers/payment",
        headers: { authorization: `Bearer ${sandboxKey}`, ...formHeaders },
        body: "a=b"
      }],
      ["TRACE (200 message/http)", { method: "TRACE", target: "/anything" }],
      ["HEAD /feeds", { method: "HEAD", target: "/feeds" }]
    ]
    const statuses = new Set<number>()
    for (const [label, spec] of samples) {
      const response: RawResponse = await raw(spec)
      statuses.add(response.status)
      const date = header(response, "date")
      assert.isDefined(date, `${label}: Date`)
      assert.match(date!, imfFixdate, `${label}: Date`)
      assert.isTrue(Math.abs(Date.parse(date!) - Date.now()) < 60_000, `${label}: Date is now`)
      const requestId = header(response, "x-request-id")
      assert.match(requestId ?? "", /^[\w.-]{1,64}$/, `${label}: X-Request-Id`)
      const chunked = /(^|,)\s*chunked\s*$/i.test(header(response, "transfer-encoding") ?? "")
      const length = header(response, "content-length")
      if (response.status === 204 || response.status === 304) {
        assert.strictEqual(response.rawBody.length, 0, `${label}: no body`)
      } else {
        assert.isTrue(length !== undefined || chunked, `${label}: Content-Length or chunked`)
        if (length !== undefined && spec.method !== "HEAD") {
          assert.strictEqual(Number(length), response.body.length, `${label}: Content-Length is the body's length`)
        }
      }
      const contentType = header(response, "content-type")
      if (contentType !== undefined && /^text\//i.test(contentType)) {
        assert.match(contentType, /;\s*charset=utf-8/i, `${label}: ${contentType}`)
      }
      if (response.status >= 400 && /json/.test(contentType ?? "")) {
        const body = bodyJson(response)
        assert.strictEqual(body.error.request_id, requestId, `${label}: error.request_id`)
      }
    }
    for (const status of [200, 201, 204, 304, 400, 401, 404, 405, 415]) assert.isTrue(statuses.has(status), `${status}`)
  })

  it("echoes a client's X-Request-Id, in the header and in error bodies", async () => {
    const mine = `client-${process.pid}.abc_1`
    const response = await raw({ method: "GET", target: "/nope", headers: { "X-Request-Id": mine } })
    assert.strictEqual(header(response, "x-request-id"), mine)
    assert.strictEqual(bodyJson(response).error.request_id, mine)
  })

  it("the raw request helper sends what it is told (sanity check of the test tooling)", () => {
    const text = requestText(1234, { method: "TRACE", target: "/a?b=1", headers: [["X-A", "B"]] })
    assert.strictEqual(text, "TRACE /a?b=1 HTTP/1.1\r\nHost: 127.0.0.1:1234\r\nX-A: B\r\nConnection: close\r\n\r\n")
  })
})

describe("GET /openapi.json", () => {
  let doc: any
  beforeAll(async () => {
    const response = await fetch(`${app.baseUrl}/openapi.json`)
    assert.strictEqual(response.status, 200)
    assert.match(response.headers.get("content-type")!, /^application\/json/)
    doc = await response.json()
  })

  it("validates as an OpenAPI 3 document", async () => {
    assert.match(doc.openapi, /^3\./)
    const result = await new Validator().validate(doc)
    assert.isTrue(result.valid, JSON.stringify(result.errors, null, 2))
  })

  const operations: ReadonlyArray<[string, string, ReadonlyArray<number>]> = [
    ["post", "/subscribe", [400, 404, 413, 415, 429]],
    ["get", "/subscribe", [404]],
    ["get", "/subscriptions", [400, 401, 404]],
    ["get", "/subscribe/confirm", [404]],
    ["post", "/subscribe/confirm", [400, 404, 415]],
    ["get", "/unsubscribe", [404]],
    ["post", "/unsubscribe", [400, 404, 415]],
    ["get", "/subscriptions/{id}", [401, 404]],
    ["get", "/feeds", []],
    ["get", "/feeds/{name}", [404]],
    ["put", "/feeds/{name}", [400, 401, 413, 415]],
    ["delete", "/feeds/{name}", [401, 404]],
    ["post", "/merchant/transfers/payment", [400, 401, 402, 409, 413, 415, 422, 429, 503]],
    ["get", "/merchant/transfers/payment", [400, 401, 429]],
    ["get", "/merchant/transfers/payment/{id}", [401, 404, 429]],
    ["get", "/merchant/balance", [401, 429]],
    ["post", "/merchant/transfers/payment/{id}/refunds", [400, 401, 404, 409, 413, 415, 422, 429, 503]],
    ["get", "/merchant/transfers/payment/{id}/refunds", [400, 401, 404, 429]],
    ["get", "/merchant/refunds/{id}", [401, 404, 429]],
    ["get", "/healthz", []],
    ["get", "/readyz", []],
    ["get", "/docs/errors", []],
    ["get", "/openapi.json", []],
    ["get", "/docs", []],
    ["get", "/metrics", [401]],
    ["post", "/webhook_endpoints", [400, 401, 413, 415]],
    ["get", "/webhook_endpoints", [401]],
    ["get", "/webhook_endpoints/{id}", [401, 404]],
    ["delete", "/webhook_endpoints/{id}", [401, 404]],
    ["post", "/webhook_endpoints/{id}/rotate_secret", [401, 404]],
    ["get", "/events", [400, 401]],
    ["get", "/events/{id}", [401, 404]],
    ["post", "/events/{id}/resend", [400, 401, 404, 413, 415]]
  ]

  it("lists every route of the API, and no other; HEAD beside every GET, OPTIONS and TRACE on every path", () => {
    const listed = Object.entries<any>(doc.paths).flatMap(([path, item]) =>
      Object.keys(item).filter((k) => ["get", "put", "post", "delete", "patch"].includes(k))
        .map((method) => `${method.toUpperCase()} ${path}`)
    )
    assert.sameMembers(listed, operations.map(([method, path]) => `${method.toUpperCase()} ${path}`))
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      assert.strictEqual(item.head !== undefined, item.get !== undefined, path)
      assert.isDefined(item.options?.responses[204].headers.Allow, path)
      assert.isDefined(item.trace?.responses[405], path)
    }
  })

  for (const [method, path, statuses] of operations) {
    it(`${method.toUpperCase()} ${path} documents ${statuses.length > 0 ? statuses.join(", ") : "its answers"}`, () => {
      const operation = doc.paths[path]?.[method]
      assert.isDefined(operation)
      const documented = Object.keys(operation.responses).map(Number)
      for (const status of statuses) assert.include(documented, status, `${method} ${path} lacks ${status}`)
      assert.isTrue(documented.some((s) => s >= 200 && s < 300), "a success answer")
    })
  }

  it("the 402 of POST /merchant/transfers/payment documents the transfer it names", () => {
    const resolve = (schema: any): any =>
      schema?.$ref ? resolve(doc.components.schemas[schema.$ref.replace("#/components/schemas/", "")]) : schema
    const body = resolve(
      doc.paths["/merchant/transfers/payment"].post.responses[402].content["application/json"].schema
    )
    assert.strictEqual(resolve(resolve(body.properties.error).properties.transfer).type, "string")
  })

  it("every 4xx/5xx response is the one error body; no HttpApiDecodeError is left", () => {
    const text = JSON.stringify(doc)
    assert.notInclude(text, "HttpApiDecodeError")
    const resolve = (schema: any): any =>
      schema?.$ref ? resolve(doc.components.schemas[schema.$ref.replace("#/components/schemas/", "")]) : schema
    const isErrorBody = (schema: any): boolean => {
      const s = resolve(schema)
      if (s === undefined) return false
      if (s.anyOf) return s.anyOf.length > 0 && s.anyOf.every(isErrorBody)
      const error = resolve(s.properties?.error)
      return s.type === "object" && (s.required ?? []).includes("error") &&
        ["type", "code", "message"].every((k) => error?.required?.includes(k)) &&
        ["param", "doc_url", "request_id"].every((k) => error?.properties?.[k] !== undefined)
    }
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, operation] of Object.entries<any>(item)) {
        for (const [status, declared] of Object.entries<any>(operation.responses ?? {})) {
          // HEAD answers the GET's header fields only.
          if (Number(status) < 400 || method === "head") continue
          const response = declared.$ref ? doc.components.responses[declared.$ref.split("/").pop()] : declared
          // Pages people reach in a browser answer their errors as pages too (text/html), beside the JSON.
          const content = response.content ?? {}
          assert.includeMembers(["application/json", "text/html"], Object.keys(content), `${method} ${path} ${status}`)
          assert.isTrue(isErrorBody(content["application/json"]?.schema), `${method} ${path} ${status}`)
        }
      }
    }
  })
})
