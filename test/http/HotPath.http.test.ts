import { assert, describe, it } from "@effect/vitest"
import { afterAll, beforeAll } from "vitest"
import { AppProcess } from "../support/AppProcess.ts"
import {
  accountUri,
  breakLuhn,
  expiry,
  firstApiKey,
  MerchantApi,
  randomPan,
  transferBody,
  unlimitedEnv
} from "../support/Payments.ts"
import { header, RawConnection, type RawResponse } from "../support/RawHttp.ts"

// The Node app answers its three busiest requests itself (apps/http/HotPath.ts): a plain transfer POST, a
// transfer GET and a subscribe POST skip the HttpApi stack. That shortcut must be invisible to clients: every
// request it takes must get the answer the HttpApi would have given (status, header fields, body, error
// code/type/param/message). So each case here sends one logical request twice over a raw socket: in its plain
// form, which the hot path takes, and in a form that means the same but that the hot path leaves to the HttpApi
// (a POST body sent chunked instead of with Content-Length; a GET with an unknown query parameter, which the
// HttpApi ignores on that route). The two answers must be equal once ids, dates and request ids are set aside.
// The Deno app has no hot path: there both forms go through the HttpApi, and the suite must pass all the same.

let app: AppProcess
let key: string

beforeAll(async () => {
  app = await AppProcess.start({ env: unlimitedEnv })
  key = firstApiKey(app.output)
})
afterAll(async () => {
  await app?.stop()
})

// Requests

interface Request {
  readonly method: "GET" | "POST"
  readonly path: string
  readonly headers?: Readonly<Record<string, string>>
  readonly body?: string
}

// A chunked body in two chunks, cut in the middle of its bytes (possibly inside a UTF-8 character).
const chunked = (body: Buffer): Buffer => {
  const at = Math.max(1, Math.floor(body.length / 2))
  const chunks = [body.subarray(0, at), body.subarray(at)].filter((c) => c.length > 0)
  return Buffer.concat([
    ...chunks.flatMap((c) => [Buffer.from(`${c.length.toString(16)}\r\n`), c, Buffer.from("\r\n")]),
    Buffer.from("0\r\n\r\n")
  ])
}

// One request on its own connection; the body (UTF-8) framed by Content-Length or chunked.
const exchange = async (request: Request, framing: "content-length" | "chunked"): Promise<RawResponse> => {
  const body = request.body === undefined ? undefined : Buffer.from(request.body, "utf8")
  const lines = [
    `${request.method} ${request.path} HTTP/1.1`,
    `Host: 127.0.0.1:${app.port}`,
    ...Object.entries(request.headers ?? {}).map(([name, value]) => `${name}: ${value}`),
    ...(body === undefined ? [] : [
      framing === "chunked" ? "Transfer-Encoding: chunked" : `Content-Length: ${body.length}`
    ]),
    "Connection: close"
  ]
  const head = Buffer.from(`${lines.join("\r\n")}\r\n\r\n`, "latin1")
  const payload = body === undefined ? Buffer.alloc(0) : framing === "chunked" ? chunked(body) : body
  const connection = await RawConnection.open(app.port)
  try {
    await connection.write(Buffer.concat([head, payload]))
    return await connection.response()
  } finally {
    connection.destroy()
  }
}

// The plain form, which the Node app's hot path answers.
const plainForm = (request: Request) => exchange(request, "content-length")
// The same request in a form the hot path leaves to the HttpApi.
const httpApiForm = (request: Request) =>
  request.method === "GET"
    ? exchange({ ...request, path: `${request.path}?x=1` }, "content-length")
    : exchange(request, "chunked")

const TransfersPath = "/merchant/transfers/payment"

let counter = 0
const uniqueEmail = (tag: string) => `${tag}.${process.pid}.${++counter}@example.com`

const postTransfer = (body: unknown, apiKey = key, headers: Record<string, string> = {}): Request => ({
  method: "POST",
  path: TransfersPath,
  headers: { Authorization: `Bearer ${apiKey}`, "Content-Type": "application/json", ...headers },
  body: typeof body === "string" ? body : JSON.stringify(body)
})

const getTransfer = (id: string, headers: Record<string, string> = {}, apiKey = key): Request => ({
  method: "GET",
  path: `${TransfersPath}/${id}`,
  headers: { Authorization: `Bearer ${apiKey}`, ...headers }
})

const subscribeForm = (fields: Record<string, string>): Request => ({
  method: "POST",
  path: "/subscribe",
  headers: { "Content-Type": "application/x-www-form-urlencoded" },
  body: new URLSearchParams(fields).toString()
})

const subscribeJson = (body: unknown): Request => ({
  method: "POST",
  path: "/subscribe",
  headers: { "Content-Type": "application/json" },
  body: typeof body === "string" ? body : JSON.stringify(body)
})

// Answers

// Framing, which may differ between the two forms and says nothing about the answer itself.
const framingHeaders = new Set(["date", "connection", "keep-alive", "transfer-encoding", "content-length"])

const show = (response: RawResponse) =>
  `${response.statusLine}\n${response.headers.map(([n, v]) => `${n}: ${v}`).join("\n")}\n\n${
    response.body.toString("utf8")
  }`

const parsed = (response: RawResponse): any => {
  const text = response.body.toString("utf8")
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

// What a client can compare: status, every header field but the framing ones (sorted, names in lower case),
// and the body (parsed when it is JSON), with each volatile value replaced by a placeholder. The response's own
// request id is one of them, after checking that it is there, well-formed, and the same in the body.
const comparable = (
  response: RawResponse,
  volatile: Readonly<Record<string, string>>,
  requestId: string | undefined
) => {
  const id = header(response, "x-request-id")
  assert.isDefined(id, `no X-Request-Id:\n${show(response)}`)
  if (requestId === undefined) assert.match(id!, /^req_[0-9a-f]{32}$/, show(response))
  else assert.strictEqual(id, requestId, show(response))
  assert.isDefined(header(response, "date"), `no Date:\n${show(response)}`)
  const json = parsed(response)
  if (json?.error !== undefined) assert.strictEqual(json.error.request_id, id, show(response))
  const placeholders = Object.entries({ ...volatile, [id!]: "<request-id>" })
  const normal = (text: string) => placeholders.reduce((acc, [value, name]) => acc.split(value).join(name), text)
  const text = normal(response.body.toString("utf8"))
  return {
    status: response.status,
    headers: response.headers
      .filter(([name]) => !framingHeaders.has(name.toLowerCase()))
      .map(([name, value]) => `${name.toLowerCase()}: ${normal(value)}`)
      .sort(),
    body: json === undefined ? text : JSON.parse(text)
  }
}

// The volatile values of a transfer answer: its id (also in Location), reference and creation time.
const transferVolatiles = (response: RawResponse): Record<string, string> => {
  const t = parsed(response)?.payment_transfer
  if (t === undefined) return {}
  return { [t.id]: "<id>", [t.reference]: "<reference>", [t.created]: "<created>" }
}

interface Expected {
  readonly status: number
  readonly code?: string
  readonly type?: string
  readonly param?: string
}

// Sends `make()` in both forms (a fresh request each, e.g. for distinct references), checks the plain answer
// against what is expected and the HttpApi's answer against the plain one. Returns both answers.
const assertSameAnswer = async (
  make: () => Request,
  expected: Expected,
  options: {
    readonly volatiles?: (response: RawResponse) => Record<string, string>
    readonly requestId?: string
  } = {}
) => {
  const plainRequest = make()
  const plain = await plainForm(plainRequest)
  const viaHttpApi = await httpApiForm(make())
  const context = `${plainRequest.method} ${plainRequest.path} ${plainRequest.body ?? ""}\n--- plain form:\n${
    show(plain)
  }\n--- HttpApi form:\n${show(viaHttpApi)}`
  assert.strictEqual(plain.status, expected.status, context)
  const error = parsed(plain)?.error
  if (expected.code !== undefined) {
    assert.strictEqual(error?.code, expected.code, context)
    assert.strictEqual(error?.param, expected.param, context)
    if (expected.type !== undefined) assert.strictEqual(error?.type, expected.type, context)
    assert.strictEqual(error?.doc_url, `${app.baseUrl}/docs/errors#${expected.code}`, context)
  } else {
    assert.isUndefined(error, context)
  }
  const volatiles = options.volatiles ?? (() => ({}))
  assert.deepStrictEqual(
    comparable(viaHttpApi, volatiles(viaHttpApi), options.requestId),
    comparable(plain, volatiles(plain), options.requestId),
    context
  )
  return { plain, viaHttpApi }
}

// For requests where the HttpApi's answer is the reference: the plain form must get exactly that answer.
const assertSameAsHttpApi = async (make: () => Request) => {
  const viaHttpApi = await httpApiForm(make())
  const plain = await plainForm(make())
  assert.deepStrictEqual(
    comparable(plain, {}, undefined),
    comparable(viaHttpApi, {}, undefined),
    `--- plain form:\n${show(plain)}\n--- HttpApi form:\n${show(viaHttpApi)}`
  )
}

describe("POST /merchant/transfers/payment: the hot path answers as the HttpApi does", () => {
  it("approves with 201, Location and the transfer (distinct references)", async () => {
    const { plain, viaHttpApi } = await assertSameAnswer(() => postTransfer(transferBody()), { status: 201 }, {
      volatiles: transferVolatiles
    })
    for (const response of [plain, viaHttpApi]) {
      const t = parsed(response).payment_transfer
      assert.strictEqual(t.status, "approved")
      assert.strictEqual(header(response, "location"), `${app.baseUrl}${TransfersPath}/${t.id}`)
      assert.strictEqual(header(response, "content-type"), "application/json")
    }
    assert.notStrictEqual(parsed(plain).payment_transfer.id, parsed(viaHttpApi).payment_transfer.id)
  })

  it("echoes a client's X-Request-Id the same way", async () => {
    const requestId = `hot-path-parity.${process.pid}`
    const make = () => postTransfer(transferBody(), key, { "X-Request-Id": requestId })
    await assertSameAnswer(make, { status: 201 }, { volatiles: transferVolatiles, requestId })
    const invalid = () => postTransfer(transferBody({ amount: 1 }), key, { "X-Request-Id": requestId })
    await assertSameAnswer(invalid, { status: 400, code: "parameter_invalid", param: "payment_transfer.amount" }, {
      requestId
    })
  })

  it("accepts a Content-Type with a charset and non-ASCII names the same way", async () => {
    const make = () => ({
      ...postTransfer(transferBody({
        sender: { first_name: "Zoë", middle_name: "Ñandú", email: "zoe@example.com" },
        recipient: { first_name: "Jürgen 東京", email: "j@example.com", merchant_id: "merchant_1" }
      })),
      headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json; charset=utf-8" }
    })
    const { plain } = await assertSameAnswer(make, { status: 201 }, { volatiles: transferVolatiles })
    assert.strictEqual(parsed(plain).payment_transfer.recipient.first_name, "Jürgen 東京")
  })

  const declines: ReadonlyArray<readonly [string, string, string, string?]> = [
    ["a sandbox card that declines", accountUri("4000000000000002"), "card_declined", "generic_decline"],
    ["the sandbox's expired card", accountUri("4000000000000069"), "expired_card"],
    ["a card that expired last month", accountUri(randomPan(), expiry(-1)), "expired_card"],
    ["insufficient funds", accountUri("4000000000009995"), "insufficient_funds"],
    ["a Luhn-invalid number", accountUri(breakLuhn(randomPan())), "incorrect_number"],
    ["a card that needs authentication", accountUri("4000002760003184"), "authentication_required"]
  ]
  for (const [label, uri, code, declineCode] of declines) {
    it(`answers ${label} with 402 ${code}`, async () => {
      const { plain } = await assertSameAnswer(
        () => postTransfer(transferBody({ sender_account_uri: uri })),
        { status: 402, code, type: "card_error" }
      )
      assert.strictEqual(parsed(plain).error.decline_code, declineCode)
    })
  }

  const amount = "payment_transfer.amount"
  const invalid: ReadonlyArray<readonly [string, unknown, string, string?]> = [
    ["the amount as a JSON number", transferBody({ amount: 12.3 }), "parameter_invalid", amount],
    ["a missing amount", transferBody({ amount: undefined }), "parameter_missing", amount],
    ["an amount with 3 decimals in USD", transferBody({ amount: "1.234" }), "parameter_invalid", amount],
    ["an unknown currency", transferBody({ currency: "XYZ" }), "parameter_invalid", "payment_transfer.currency"],
    [
      "an invalid sender e-mail",
      transferBody({ sender: { first_name: "Ann", email: "ann.example.com" } }),
      "email_invalid",
      "payment_transfer.sender.email"
    ],
    [
      "a malformed card URI",
      transferBody({ sender_account_uri: "pan:4242424242424242;exp=2030-13;cvc=737" }),
      "parameter_invalid",
      "payment_transfer.sender_account_uri"
    ],
    ["a body without payment_transfer", { amount: "1.00" }, "parameter_missing", "payment_transfer"],
    ["malformed JSON", "{\"payment_transfer\": {", "body_invalid"],
    ["a JSON array", "[1, 2]", "body_invalid"],
    ["JSON null", "null", "body_invalid"],
    ["a body of blanks", "   ", "body_invalid"]
  ]
  for (const [label, body, code, param] of invalid) {
    it(`rejects ${label} with 400 ${code}${param === undefined ? "" : ` (${param})`}`, async () => {
      const expected = { status: 400, code, type: "invalid_request_error", ...(param === undefined ? {} : { param }) }
      await assertSameAnswer(() => postTransfer(body), expected)
    })
  }

  it("answers a used reference with 409 duplicate_reference naming the existing transfer", async () => {
    const first = transferBody()
    const created = await new MerchantApi(app.baseUrl, key).create(first)
    assert.strictEqual(created.status, 201, created.text)
    const again = () => postTransfer(transferBody({ reference: first.payment_transfer.reference as string }))
    const { plain } = await assertSameAnswer(again, {
      status: 409,
      code: "duplicate_reference",
      param: "payment_transfer.reference"
    })
    assert.include(parsed(plain).error.message, created.json.payment_transfer.id)
  })

  it("answers a wrong API key with 401, before looking at the body", async () => {
    const wrong = `sk_${"A".repeat(43)}`
    await assertSameAnswer(() => postTransfer(transferBody(), wrong), { status: 401, code: "api_key_invalid" })
    await assertSameAnswer(() => postTransfer("{\"payment_transfer\": {", wrong), {
      status: 401,
      code: "api_key_invalid"
    })
    await assertSameAnswer(() => postTransfer(transferBody(), ""), { status: 401, code: "api_key_invalid" })
  })
})

describe("GET /merchant/transfers/payment/{id}: the hot path answers as the HttpApi does", () => {
  // The HttpApi form adds `?x=1`: the HttpApi ignores query parameters it does not know on this route.
  let id: string
  let etag: string
  let lastModified: string

  beforeAll(async () => {
    const created = await new MerchantApi(app.baseUrl, key).create(transferBody())
    assert.strictEqual(created.status, 201, created.text)
    id = created.json.payment_transfer.id
    const read = await plainForm(getTransfer(id))
    etag = header(read, "etag")!
    lastModified = header(read, "last-modified")!
  })

  it("answers 200 with the transfer, ETag, Last-Modified and Cache-Control: private", async () => {
    const { plain, viaHttpApi } = await assertSameAnswer(() => getTransfer(id), { status: 200 })
    for (const response of [plain, viaHttpApi]) {
      assert.strictEqual(parsed(response).payment_transfer.id, id)
      assert.strictEqual(header(response, "etag"), etag)
      assert.strictEqual(header(response, "last-modified"), lastModified)
      assert.strictEqual(header(response, "cache-control"), "private")
      assert.strictEqual(header(response, "content-type"), "application/json")
    }
  })

  const conditional: ReadonlyArray<readonly [string, () => Record<string, string>, number]> = [
    ["If-None-Match with its ETag", () => ({ "If-None-Match": etag }), 304],
    ["If-None-Match with its weak ETag among others", () => ({ "If-None-Match": `"other", W/${etag}` }), 304],
    ["If-None-Match: *", () => ({ "If-None-Match": "*" }), 304],
    ["If-None-Match with another ETag", () => ({ "If-None-Match": "\"something-else\"" }), 200],
    ["If-Modified-Since its Last-Modified", () => ({ "If-Modified-Since": lastModified }), 304],
    ["If-Modified-Since long ago", () => ({ "If-Modified-Since": "Thu, 01 Jan 1998 00:00:00 GMT" }), 200]
  ]
  for (const [label, headers, status] of conditional) {
    it(`answers ${label} with ${status}`, async () => {
      const { plain, viaHttpApi } = await assertSameAnswer(() => getTransfer(id, headers()), { status })
      for (const response of [plain, viaHttpApi]) {
        assert.strictEqual(header(response, "etag"), etag)
        if (status === 304) assert.strictEqual(response.rawBody.length, 0, show(response))
      }
    })
  }

  it("answers an unknown id and a malformed one with 404 resource_missing", async () => {
    const { plain } = await assertSameAnswer(() => getTransfer(`tr_${"0".repeat(24)}`), {
      status: 404,
      code: "resource_missing",
      param: "id"
    })
    assert.include(parsed(plain).error.message, `tr_${"0".repeat(24)}`)
    await assertSameAnswer(() => getTransfer("not_a_transfer_id"), {
      status: 404,
      code: "resource_missing",
      param: "id"
    })
  })

  it("answers a wrong API key with 401", async () => {
    await assertSameAnswer(() => getTransfer(id, {}, `sk_${"B".repeat(43)}`), { status: 401, code: "api_key_invalid" })
  })
})

describe("POST /subscribe: the hot path answers as the HttpApi does", () => {
  // The answer is the same for a new address and one already pending (it must not tell which addresses are
  // subscribed), so both forms may use one address, and the answers must match to the subscription id.
  it("answers a form with 200 and the pending subscription", async () => {
    const email = uniqueEmail("form")
    const { plain } = await assertSameAnswer(() => subscribeForm({ name: "Ann Example", email }), { status: 200 })
    const body = parsed(plain)
    assert.deepStrictEqual(Object.keys(body).sort(), ["message", "subscription"])
    assert.deepStrictEqual(body.subscription, { id: body.subscription.id, name: "Ann Example", email, feed: "default" })
    assert.include(body.message, email)
    assert.strictEqual(header(plain, "content-type"), "application/json")
  })

  it("answers JSON with 200 and the pending subscription", async () => {
    const email = uniqueEmail("json")
    const { plain } = await assertSameAnswer(() => subscribeJson({ name: "Jay", email, feed: "default" }), {
      status: 200
    })
    assert.strictEqual(parsed(plain).subscription.email, email)
  })

  it("decodes a form's '+', percent escapes and UTF-8 the same way", async () => {
    const email = uniqueEmail("utf8")
    const make = (): Request => ({
      ...subscribeForm({}),
      headers: { "Content-Type": "application/x-www-form-urlencoded; charset=UTF-8" },
      body: `name=Zo%C3%AB+J%C3%BCrgen%20%E6%9D%B1%E4%BA%AC&email=${encodeURIComponent(email)}&extra=ignored`
    })
    const { plain } = await assertSameAnswer(make, { status: 200 })
    assert.strictEqual(parsed(plain).subscription.name, "Zoë Jürgen 東京")
  })

  it("reads raw UTF-8 in a JSON body the same way, even cut inside a character", async () => {
    const email = uniqueEmail("raw")
    const { plain } = await assertSameAnswer(() => subscribeJson(`{"name": "東京東京東京", "email": "${email}"}`), {
      status: 200
    })
    assert.strictEqual(parsed(plain).subscription.name, "東京東京東京")
  })

  const invalid: ReadonlyArray<readonly [string, () => Request, Expected]> = [
    [
      "an invalid e-mail in a form",
      () => subscribeForm({ name: "Ann", email: "ann.example.com" }),
      { status: 400, code: "email_invalid", param: "email" }
    ],
    [
      "an invalid e-mail in JSON",
      () => subscribeJson({ name: "Ann", email: "ann@" }),
      { status: 400, code: "email_invalid", param: "email" }
    ],
    [
      "an e-mail as a JSON number",
      () => subscribeJson({ name: "Ann", email: 42 }),
      { status: 400, code: "email_invalid", param: "email" }
    ],
    [
      "a missing name",
      () => subscribeForm({ email: "a@example.com" }),
      { status: 400, code: "parameter_missing", param: "name" }
    ],
    [
      "a blank name",
      () => subscribeJson({ name: "   ", email: "a@example.com" }),
      { status: 400, code: "parameter_invalid", param: "name" }
    ],
    [
      "a malformed feed name",
      () => subscribeForm({ name: "Ann", email: "a@example.com", feed: "Not A Feed" }),
      { status: 400, code: "parameter_invalid", param: "feed" }
    ],
    [
      "an unknown feed in a form",
      () => subscribeForm({ name: "Ann", email: "a@example.com", feed: "no-such-feed" }),
      { status: 404, code: "resource_missing", param: "feed" }
    ],
    [
      "an unknown feed in JSON",
      () => subscribeJson({ name: "Ann", email: "a@example.com", feed: "no-such-feed" }),
      { status: 404, code: "resource_missing", param: "feed" }
    ],
    ["malformed JSON", () => subscribeJson("{\"name\": \"Ann\","), { status: 400, code: "body_invalid" }],
    ["a JSON array", () => subscribeJson("[1, 2]"), { status: 400, code: "body_invalid" }]
  ]
  for (const [label, make, expected] of invalid) {
    it(`rejects ${label} with ${expected.status} ${expected.code}`, async () => {
      await assertSameAnswer(make, expected)
    })
  }
})

// Requests the hot path takes although the HttpApi decides them otherwise (found while writing this suite).
describe("less common requests the hot path takes", () => {
  // The edge refuses any request body that is neither JSON nor a form with 415, GETs included; the hot path
  // answers the GET without looking at the body's Content-Type.
  it("answers a GET carrying a text/plain body as the HttpApi does", async () => {
    const created = await new MerchantApi(app.baseUrl, key).create(transferBody())
    const id = created.json.payment_transfer.id
    const make = (): Request => ({
      ...getTransfer(id, { "Content-Type": "text/plain" }),
      body: "hello"
    })
    await assertSameAsHttpApi(make)
  })

  // The HttpApi picks the body's parser by substring ("application/json" anywhere in Content-Type wins); the
  // hot path by media type.
  it("answers a form whose Content-Type has a parameter mentioning application/json as the HttpApi does", async () => {
    const email = uniqueEmail("param")
    const make = (): Request => ({
      ...subscribeForm({ name: "Ann", email }),
      headers: { "Content-Type": "application/x-www-form-urlencoded; profile=\"application/json\"" }
    })
    await assertSameAsHttpApi(make)
  })
})
