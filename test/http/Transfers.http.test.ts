import { assert, describe, it } from "@effect/vitest"
import { afterAll, beforeAll } from "vitest"
import { sandboxCards, sandboxTimeoutCards } from "../../adapters/cardnetwork/SandboxCardNetwork.ts"
import { AppProcess } from "../support/AppProcess.ts"
import {
  accountUri,
  breakLuhn,
  createClient,
  expiry,
  firstApiKey,
  fromMinor,
  MerchantApi,
  randomPan,
  type Received,
  toMinor,
  transferBody,
  uniqueReference,
  unlimitedEnv
} from "../support/Payments.ts"

// Black-box: the app as a real process with a temp SQLite file, every request over the real socket.
let app: AppProcess
let api: MerchantApi

beforeAll(async () => {
  app = await AppProcess.start({ env: unlimitedEnv })
  api = new MerchantApi(app.baseUrl, firstApiKey(app.output))
})
afterAll(async () => {
  await app?.stop()
})

const count = (table: string) => app.query<{ n: number }>(`SELECT count(*) AS n FROM ${table}`)[0]!.n
const counts = () => ({ transfers: count("transfers"), idempotency_keys: count("idempotency_keys") })
// A client of its own, so that its list and balance hold only what the test made.
const newClient = async (name: string) => {
  const created = await createClient(app, name)
  return { id: created.id, api: api.withKey(created.api_key) }
}

const assertError = (response: Received, status: number, code: string, param?: string) => {
  assert.strictEqual(response.status, status, response.text)
  assert.match(response.headers.get("content-type")!, /^application\/json/)
  assert.isNotNull(response.headers.get("date"))
  const { error } = response.json
  assert.strictEqual(error.code, code, response.text)
  assert.strictEqual(error.param, param, response.text)
  assert.isString(error.type)
  assert.isString(error.message)
  assert.isTrue(error.message.length > 0)
  assert.strictEqual(error.doc_url, `${app.baseUrl}/docs/errors#${code}`)
  assert.strictEqual(error.request_id, response.headers.get("x-request-id"))
  return error
}

const assertCardError = (response: Received, code: string, declineCode?: string) => {
  const error = assertError(response, 402, code)
  assert.strictEqual(error.type, "card_error")
  assert.strictEqual(error.decline_code, declineCode, response.text)
  return error
}

const assertApproved = (response: Received, body: ReturnType<typeof transferBody>) => {
  assert.strictEqual(response.status, 201, response.text)
  assert.match(response.headers.get("content-type")!, /^application\/json/)
  assert.deepStrictEqual(Object.keys(response.json), ["payment_transfer"])
  const sent = body.payment_transfer as any
  const t = response.json.payment_transfer
  assert.match(t.id, /^tr_[0-9A-Za-z]{24}$/)
  assert.strictEqual(t.status, "approved")
  assert.strictEqual(t.reference, sent.reference)
  assert.strictEqual(t.amount, sent.amount)
  assert.strictEqual(t.currency, sent.currency)
  assert.strictEqual(response.headers.get("location"), `${app.baseUrl}/merchant/transfers/payment/${t.id}`)
  return t
}

describe("the interface's 402 example", () => {
  it("answers an expired card with 402 expired_card and records the declined transfer", async () => {
    const body = transferBody({ sender_account_uri: accountUri("4242424242424242", expiry(-1), "123") })
    const response = await api.create(body)
    const error = assertCardError(response, "expired_card")
    assert.strictEqual(response.headers.get("content-type"), "application/json")
    assert.isFalse(Number.isNaN(Date.parse(response.headers.get("date")!)))
    assert.deepStrictEqual(Object.keys(response.json), ["error"])
    assert.isTrue(error.doc_url.endsWith("/docs/errors#expired_card"))
    assert.match(error.message, /card has expired/i)
    assert.match(error.message, /check the expir(y|ation) date/i)
    assert.match(error.message, /(another|a different) card/i)

    const recorded = await api.byReference(body.payment_transfer.reference as string)
    assert.strictEqual(recorded.length, 1)
    assert.strictEqual(error.transfer, recorded[0].id, "the 402 names the transfer it recorded")
    assert.strictEqual(recorded[0].status, "declined")
    assert.strictEqual(recorded[0].failure_code, "expired_card")
    assert.strictEqual(recorded[0].sender.card.last4, "4242")
    const fetched = await api.transfer(recorded[0].id)
    assert.strictEqual(fetched.status, 200)
    assert.deepStrictEqual(fetched.json.payment_transfer, recorded[0])
  })
})

describe("card outcomes", () => {
  for (const card of sandboxCards) {
    const outcome = card.outcome
    if (outcome._tag === "Approved") {
      it(`approves sandbox card ${card.pan} (${card.description})`, async () => {
        const body = transferBody({ sender_account_uri: accountUri(card.pan) })
        const t = assertApproved(await api.create(body), body)
        assert.strictEqual(t.sender.card.last4, card.pan.slice(-4))
      })
    } else {
      it(`answers sandbox card ${card.pan} (${card.description}) with 402 ${outcome.code}`, async () => {
        const body = transferBody({ sender_account_uri: accountUri(card.pan) })
        const before = count("transfers")
        assertCardError(await api.create(body), outcome.code, outcome.declineCode)
        assert.strictEqual(count("transfers"), before + 1, "the declined transfer is recorded")
        const [recorded] = await api.byReference(body.payment_transfer.reference as string)
        assert.strictEqual(recorded.status, "declined")
        assert.strictEqual(recorded.failure_code, outcome.code)
        assert.strictEqual(recorded.decline_code, outcome.declineCode)
      })
    }
  }

  it("approves a random Luhn-valid card; Location leads to the same transfer, amount as sent", async () => {
    const pan = randomPan("4", 16)
    const exp = expiry(13)
    const body = transferBody({ sender_account_uri: accountUri(pan, exp, "321"), amount: "1234.50" })
    const created = await api.create(body)
    const t = assertApproved(created, body)
    assert.strictEqual(t.amount, "1234.50")
    assert.deepStrictEqual(t.sender.card.brand, "visa")
    assert.strictEqual(t.sender.card.last4, pan.slice(-4))
    assert.strictEqual(t.sender.card.exp_year, Number(exp.slice(0, 4)))
    assert.strictEqual(t.sender.card.exp_month, Number(exp.slice(5)))
    assert.deepStrictEqual(
      { ...t.sender, card: undefined },
      { ...(body.payment_transfer.sender as object), card: undefined }
    )
    assert.deepStrictEqual(t.recipient, body.payment_transfer.recipient)
    assert.isFalse(Number.isNaN(Date.parse(t.created)))

    const fetched = await api.get(created.headers.get("location")!)
    assert.strictEqual(fetched.status, 200)
    assert.match(fetched.headers.get("content-type")!, /^application\/json/)
    assert.deepStrictEqual(fetched.json, created.json)
    assert.strictEqual(fetched.json.payment_transfer.amount, "1234.50")
  })

  it("approves a card expiring this month and declines last month's as expired_card", async () => {
    const thisMonth = transferBody({ sender_account_uri: accountUri(randomPan(), expiry(0)) })
    assertApproved(await api.create(thisMonth), thisMonth)
    const lastMonth = transferBody({ sender_account_uri: accountUri(randomPan(), expiry(-1)) })
    assertCardError(await api.create(lastMonth), "expired_card")
  })

  it("answers a Luhn-invalid card number with 402 incorrect_number", async () => {
    const pan = breakLuhn(randomPan())
    const body = transferBody({ sender_account_uri: accountUri(pan) })
    assertCardError(await api.create(body), "incorrect_number")
    const [recorded] = await api.byReference(body.payment_transfer.reference as string)
    assert.strictEqual(recorded.status, "declined")
  })

  it("checks Luhn before expiry: an invalid number that has also expired is incorrect_number", async () => {
    const body = transferBody({ sender_account_uri: accountUri(breakLuhn(randomPan()), expiry(-3)) })
    assertCardError(await api.create(body), "incorrect_number")
  })

  it("asks 4000002760003184 for authentication, and approves it with a well-formed ucaf value", async () => {
    const uri = accountUri("4000002760003184")
    assertCardError(await api.create(transferBody({ sender_account_uri: uri })), "authentication_required")
    const body = transferBody({
      sender_account_uri: uri,
      authentication_value: "ucaf:jJJLtQa+Iws8AREAEbjsA1MAAAA="
    })
    assertApproved(await api.create(body), body)
  })
})

describe("sandbox time-out cards", () => {
  for (const card of sandboxTimeoutCards) {
    it(`answers ${card.pan} (${card.description}) with 202 unknown, then shows the reconciled outcome`, async () => {
      const { api: own } = await newClient(`timeout-${card.pan}`)
      const body = transferBody({ sender_account_uri: accountUri(card.pan) })
      const idempotencyKey = `key-${uniqueReference("sandbox-timeout")}`
      const accepted = await own.create(body, { idempotencyKey })
      assert.strictEqual(accepted.status, 202, accepted.text)
      assert.strictEqual(accepted.json.payment_transfer.status, "unknown")
      const settled = await own.settled(accepted.json.payment_transfer.id)
      const approved = card.outcome._tag === "Approved"
      assert.strictEqual(settled.status, approved ? "approved" : "declined")
      const replay = await own.create(body, { idempotencyKey })
      assert.strictEqual(replay.status, approved ? 201 : 402, replay.text)
      assert.strictEqual(replay.headers.get("idempotent-replayed"), "true")
      assert.deepStrictEqual(
        (await own.balance()).json.balances.map((b: any) => b.amount),
        approved ? ["12.30"] : []
      )
    })
  }
})

describe("bad input: 4xx naming the param, nothing stored", () => {
  const pan = "4242424242424242"
  const exp = expiry(12)
  type Case = readonly [label: string, make: () => Promise<Received>, status: number, code: string, param?: string]
  const json = (overrides: Parameters<typeof transferBody>[0]) => () => api.create(transferBody(overrides))
  const amount = "payment_transfer.amount"
  const uri = "payment_transfer.sender_account_uri"
  const cases: ReadonlyArray<Case> = [
    ["amount as a JSON number", json({ amount: 12.3 }), 400, "parameter_invalid", amount],
    ["amount with 3 decimals in USD", json({ amount: "1.234" }), 400, "parameter_invalid", amount],
    ["amount with decimals in JPY", json({ amount: "1.5", currency: "JPY" }), 400, "parameter_invalid", amount],
    ["amount with 4 decimals in BHD", json({ amount: "1.2345", currency: "BHD" }), 400, "parameter_invalid", amount],
    ["a zero amount", json({ amount: "0.00" }), 400, "parameter_invalid", amount],
    ["a zero amount without decimals", json({ amount: "0" }), 400, "parameter_invalid", amount],
    ["a negative amount", json({ amount: "-1.00" }), 400, "parameter_invalid", amount],
    ["an amount in exponent notation", json({ amount: "1e3" }), 400, "parameter_invalid", amount],
    ["an amount with a leading point", json({ amount: ".50" }), 400, "parameter_invalid", amount],
    ["an amount of 10^15 minor units", json({ amount: "10000000000000.00" }), 400, "parameter_invalid", amount],
    ["an empty amount", json({ amount: "" }), 400, "parameter_invalid", amount],
    ["a missing amount", json({ amount: undefined }), 400, "parameter_missing", amount],
    ["an unknown currency", json({ currency: "XYZ" }), 400, "parameter_invalid", "payment_transfer.currency"],
    ["a lower-case currency", json({ currency: "usd" }), 400, "parameter_invalid", "payment_transfer.currency"],
    [
      "sender_account_uri without the pan: prefix",
      json({ sender_account_uri: `${pan};exp=${exp};cvc=737` }),
      400,
      "parameter_invalid",
      uri
    ],
    ["expiry month 13", json({ sender_account_uri: `pan:${pan};exp=2030-13;cvc=737` }), 400, "parameter_invalid", uri],
    ["a 2-digit CVC", json({ sender_account_uri: `pan:${pan};exp=${exp};cvc=73` }), 400, "parameter_invalid", uri],
    [
      "an 11-digit card number",
      json({ sender_account_uri: `pan:42424242424;exp=${exp};cvc=737` }),
      400,
      "parameter_invalid",
      uri
    ],
    [
      "sender_account_uri without a CVC",
      json({ sender_account_uri: `pan:${pan};exp=${exp}` }),
      400,
      "parameter_invalid",
      uri
    ],
    [
      "a malformed authentication_value",
      json({ authentication_value: "ucaf:not base64!" }),
      400,
      "parameter_invalid",
      "payment_transfer.authentication_value"
    ],
    [
      "an invalid sender e-mail",
      json({ sender: { first_name: "Ann", email: "ann.example.com" } }),
      400,
      "email_invalid",
      "payment_transfer.sender.email"
    ],
    [
      "an invalid recipient e-mail",
      json({ recipient: { first_name: "Bob", email: "bob@", merchant_id: "merchant_1" } }),
      400,
      "email_invalid",
      "payment_transfer.recipient.email"
    ],
    ["a missing reference", json({ reference: undefined }), 400, "parameter_missing", "payment_transfer.reference"],
    [
      "a reference with a space",
      json({ reference: "two words" }),
      400,
      "parameter_invalid",
      "payment_transfer.reference"
    ],
    [
      "a 65-character reference",
      json({ reference: "r".repeat(65) }),
      400,
      "parameter_invalid",
      "payment_transfer.reference"
    ],
    [
      "a two-digit expiry year",
      json({ sender_account_uri: `pan:${pan};exp=30-01;cvc=737` }),
      400,
      "parameter_invalid",
      uri
    ],
    [
      "a blank sender first_name",
      json({ sender: { first_name: "  ", email: "ann@example.com" } }),
      400,
      "parameter_invalid",
      "payment_transfer.sender.first_name"
    ],
    [
      "a control character in the recipient's first_name",
      json({ recipient: { first_name: "Bob\u0007", email: "bob@example.com", merchant_id: "merchant_1" } }),
      400,
      "parameter_invalid",
      "payment_transfer.recipient.first_name"
    ],
    [
      "a malformed merchant_id",
      json({ recipient: { first_name: "Bob", email: "bob@example.com", merchant_id: "no spaces please" } }),
      400,
      "parameter_invalid",
      "payment_transfer.recipient.merchant_id"
    ],
    [
      "a missing merchant_id",
      json({ recipient: { first_name: "Bob", email: "bob@example.com" } }),
      400,
      "parameter_missing",
      "payment_transfer.recipient.merchant_id"
    ],
    [
      "a body without payment_transfer",
      () => api.create({}),
      400,
      "parameter_missing",
      "payment_transfer"
    ],
    ["a member beside payment_transfer", () => api.create({ amount: "1.00" }), 400, "parameter_unknown", "amount"],
    [
      "an unknown member of payment_transfer",
      json({ tip: "1.00" } as Parameters<typeof transferBody>[0]),
      400,
      "parameter_unknown",
      "payment_transfer.tip"
    ],
    [
      "an unknown member of the sender",
      json({ sender: { first_name: "Ann", email: "ann@example.com", nickname: "A" } }),
      400,
      "parameter_unknown",
      "payment_transfer.sender.nickname"
    ],
    ["malformed JSON", () => api.postRaw("{\"payment_transfer\": {", "application/json"), 400, "body_invalid"],
    ["a JSON array", () => api.postRaw("[1, 2]", "application/json"), 400, "body_invalid"],
    [
      "a body without Content-Type",
      () => api.postRaw(new Blob([JSON.stringify(transferBody())]), undefined),
      415,
      "unsupported_media_type"
    ],
    [
      "a form-encoded body",
      () =>
        api.postRaw(
          new URLSearchParams({ reference: uniqueReference("form"), amount: "1.00" }).toString(),
          "application/x-www-form-urlencoded"
        ),
      415,
      "unsupported_media_type"
    ],
    [
      "a text/plain body",
      () => api.postRaw(JSON.stringify(transferBody()), "text/plain"),
      415,
      "unsupported_media_type"
    ],
    [
      "a body over 64 KiB",
      () =>
        api.create(transferBody({
          sender: { first_name: "Ann", middle_name: "x".repeat(70_000), email: "ann@example.com" }
        })),
      413,
      "body_too_large"
    ],
    ["a missing API key", () => api.withKey(undefined).create(transferBody()), 401, "api_key_invalid"],
    ["a wrong API key", () => api.withKey(`sk_${"A".repeat(43)}`).create(transferBody()), 401, "api_key_invalid"],
    [
      "a malformed Authorization header",
      () => api.withKey(undefined).create(transferBody(), { headers: { authorization: "Basic Zm9vOmJhcg==" } }),
      401,
      "api_key_invalid"
    ]
  ]

  for (const [label, make, status, code, param] of cases) {
    it(`rejects ${label} with ${status} ${code}`, async () => {
      const before = counts()
      assertError(await make(), status, code, param)
      assert.deepStrictEqual(counts(), before)
    })
  }

  // Regression test: platform-node used to destroy the socket on "maxBytes exceeded" before the 413 was written.
  it("rejects a body over 64 KiB sent chunked, without Content-Length, with 413 body_too_large", async () => {
    const text = JSON.stringify(transferBody({
      sender: { first_name: "Ann", middle_name: "x".repeat(70_000), email: "ann@example.com" }
    }))
    const bytes = new TextEncoder().encode(text)
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < bytes.length; i += 8192) controller.enqueue(bytes.slice(i, i + 8192))
        controller.close()
      }
    })
    const before = counts()
    const response = await api.request("POST", "/merchant/transfers/payment", {
      body: stream,
      headers: { "content-type": "application/json" },
      duplex: "half"
    })
    assertError(response, 413, "body_too_large")
    assert.deepStrictEqual(counts(), before)
  })

  it("accepts exp and cvc in either order and a Content-Type with a charset", async () => {
    const swapped = transferBody({ sender_account_uri: `pan:${randomPan()};cvc=737;exp=${expiry(5)}` })
    assertApproved(await api.create(swapped), swapped)
    const charset = transferBody()
    assertApproved(
      await api.postRaw(JSON.stringify(charset), "application/json; charset=utf-8"),
      charset
    )
  })

  it("accepts 3 decimals in BHD and a whole number in JPY, echoing the amount as sent", async () => {
    const bhd = transferBody({ amount: "1.234", currency: "BHD" })
    assert.strictEqual(assertApproved(await api.create(bhd), bhd).amount, "1.234")
    const jpy = transferBody({ amount: "100", currency: "JPY" })
    assert.strictEqual(assertApproved(await api.create(jpy), jpy).amount, "100")
  })
})

describe("idempotency", () => {
  const key = () => `key-${uniqueReference("idem")}`

  it("replays the first response byte for byte, with Idempotent-Replayed: true", async () => {
    const body = transferBody()
    const idempotencyKey = key()
    const first = await api.create(body, { idempotencyKey })
    assertApproved(first, body)
    assert.isNull(first.headers.get("idempotent-replayed"))
    const before = count("transfers")
    const second = await api.create(body, { idempotencyKey })
    assert.strictEqual(second.status, first.status)
    assert.strictEqual(second.text, first.text)
    assert.strictEqual(second.headers.get("idempotent-replayed"), "true")
    assert.strictEqual(second.headers.get("location"), first.headers.get("location"))
    assert.strictEqual(count("transfers"), before)
  })

  it("treats the same parameters in another key order and spacing as the same request", async () => {
    const body = transferBody()
    const idempotencyKey = key()
    const first = await api.create(body, { idempotencyKey })
    const p = body.payment_transfer
    const reordered = `{ "payment_transfer" : ${
      JSON.stringify(Object.fromEntries(Object.entries(p).reverse()), null, 2)
    } }`
    const second = await api.postRaw(reordered, "application/json", { idempotencyKey })
    assert.strictEqual(second.status, first.status)
    assert.strictEqual(second.text, first.text)
    assert.strictEqual(second.headers.get("idempotent-replayed"), "true")
  })

  it("refuses a retry with the first request's very bytes and a query member, as it refuses any request with one", async () => {
    const body = JSON.stringify(transferBody())
    const idempotencyKey = key()
    const first = await api.postRaw(body, "application/json", { idempotencyKey })
    assert.strictEqual(first.status, 201)
    const replayed = await api.postRaw(body, "application/json", { idempotencyKey })
    assert.strictEqual(replayed.text, first.text)
    const withQuery = await api.request("POST", "/merchant/transfers/payment?expand=card", {
      body,
      headers: { "content-type": "application/json", "idempotency-key": idempotencyKey }
    })
    assertError(withQuery, 400, "parameter_unknown", "expand")
  })

  it("answers the same key with another body with 422 idempotency_key_reused", async () => {
    const idempotencyKey = key()
    const body = transferBody()
    assertApproved(await api.create(body, { idempotencyKey }), body)
    const before = counts()
    const other = transferBody({ ...(body.payment_transfer as any), amount: "99.99" })
    assertError(await api.create(other, { idempotencyKey }), 422, "idempotency_key_reused")
    assert.deepStrictEqual(counts(), before)
  })

  it("makes one transfer from 20 concurrent requests with one key", async () => {
    const idempotencyKey = key()
    const body = transferBody()
    const responses = await Promise.all(Array.from({ length: 20 }, () => api.create(body, { idempotencyKey })))
    const created = responses.filter((r) => r.status === 201)
    const inUse = responses.filter((r) => r.status === 409)
    assert.strictEqual(created.length + inUse.length, 20, responses.map((r) => `${r.status} ${r.text}`).join("\n"))
    assert.isTrue(created.length >= 1)
    assert.strictEqual(new Set(created.map((r) => r.text)).size, 1)
    for (const r of inUse) assert.strictEqual(r.json.error.code, "idempotency_key_in_use")
    const rows = app.query("SELECT id FROM transfers WHERE reference = ?", body.payment_transfer.reference)
    assert.strictEqual(rows.length, 1)
    assert.strictEqual((rows[0] as any).id, created[0]!.json.payment_transfer.id)
  })

  it("replays a 402 byte for byte", async () => {
    const idempotencyKey = key()
    const body = transferBody({ sender_account_uri: accountUri("4000000000000002") })
    const first = await api.create(body, { idempotencyKey })
    assertCardError(first, "card_declined", "generic_decline")
    const [recorded] = await api.byReference(body.payment_transfer.reference as string)
    assert.strictEqual(first.json.error.transfer, recorded.id)
    const before = count("transfers")
    const second = await api.create(body, { idempotencyKey })
    assert.strictEqual(second.status, 402)
    assert.strictEqual(second.text, first.text)
    assert.strictEqual(second.headers.get("idempotent-replayed"), "true")
    assert.strictEqual(count("transfers"), before)
  })

  it("replays a 409 duplicate_reference and a 402 of our own checks byte for byte, with the first request id", async () => {
    const taken = transferBody()
    assertApproved(await api.create(taken), taken)
    const declinedHere = transferBody({ sender_account_uri: accountUri(breakLuhn(randomPan())) })
    for (
      const [body, status, code] of [
        [transferBody({ ...(taken.payment_transfer as any), amount: "1.00" }), 409, "duplicate_reference"],
        [declinedHere, 402, "incorrect_number"]
      ] as const
    ) {
      const idempotencyKey = key()
      const first = await api.create(body, { idempotencyKey })
      assert.strictEqual(first.status, status, first.text)
      assert.strictEqual(first.json.error.code, code)
      const before = counts()
      const second = await api.create(body, { idempotencyKey })
      assert.strictEqual(second.status, status)
      assert.strictEqual(second.text, first.text)
      assert.strictEqual(second.headers.get("idempotent-replayed"), "true")
      assert.notStrictEqual(second.headers.get("x-request-id"), first.headers.get("x-request-id"))
      assert.deepStrictEqual(counts(), before)
    }
  })

  it("answers a used reference with 409 duplicate_reference naming the existing transfer", async () => {
    const body = transferBody()
    const first = assertApproved(await api.create(body), body)
    const before = counts()
    const again = transferBody({ ...(body.payment_transfer as any), amount: "1.00" })
    const error = assertError(await api.create(again), 409, "duplicate_reference", "payment_transfer.reference")
    assert.include(error.message, first.id)
    assert.deepStrictEqual(counts(), before)
  })

  it("answers a used reference of a declined transfer with 409 too", async () => {
    const body = transferBody({ sender_account_uri: accountUri("4000000000009995") })
    await api.create(body)
    const [declined] = await api.byReference(body.payment_transfer.reference as string)
    const retry = transferBody({ ...(body.payment_transfer as any), sender_account_uri: accountUri(randomPan()) })
    const error = assertError(await api.create(retry), 409, "duplicate_reference", "payment_transfer.reference")
    assert.include(error.message, declined.id)
  })

  it("keeps keys per client: another client may use the same key and body", async () => {
    const other = await newClient("idempotency-peer")
    const idempotencyKey = key()
    const body = transferBody()
    const mine = await api.create(body, { idempotencyKey })
    const theirs = await other.api.create(body, { idempotencyKey })
    assertApproved(mine, body)
    assertApproved(theirs, body)
    assert.isNull(theirs.headers.get("idempotent-replayed"))
    assert.notStrictEqual(theirs.json.payment_transfer.id, mine.json.payment_transfer.id)
    // Each client's key replays its own first response.
    const second = await other.api.create(body, { idempotencyKey })
    assert.strictEqual(second.text, theirs.text)
  })
})

describe("clients see only their own transfers", () => {
  it("404s another client's transfer and leaves it out of list and balance", async () => {
    const other = await newClient("isolation-peer")
    const merchantId = `isolated_${process.pid}`
    const body = transferBody({}, merchantId)
    const theirs = assertApproved(await other.api.create(body), body)
    assert.strictEqual((await other.api.transfer(theirs.id)).status, 200)

    assertError(await api.transfer(theirs.id), 404, "resource_missing", "id")
    assert.deepStrictEqual(await api.byReference(body.payment_transfer.reference as string), [])
    assertError(await api.list({ starting_after: theirs.id }), 404, "resource_missing", "starting_after")
    const listed = await api.list({ limit: 100 })
    assert.isFalse(listed.json.data.some((t: any) => t.id === theirs.id))
    const balance = (await api.balance()).json.balances
    assert.isFalse(balance.some((b: any) => b.merchant_id === merchantId))
    assert.deepStrictEqual((await other.api.balance()).json.balances, [
      { merchant_id: merchantId, currency: "USD", amount: "12.30" }
    ])
    // Its reference is free for this client.
    assertApproved(await api.create(body), body)
  })
})

describe("GET a transfer", () => {
  it("sends ETag and Cache-Control: private, no Last-Modified; If-None-Match gives 304 with no body", async () => {
    const body = transferBody()
    const { id } = assertApproved(await api.create(body), body)
    const first = await api.transfer(id)
    assert.strictEqual(first.status, 200)
    const etag = first.headers.get("etag")!
    assert.match(etag, /^(W\/)?"[^"]+"$/)
    // A transfer changes when it is refunded or reconciled: no date to revalidate by, only its ETag.
    assert.isNull(first.headers.get("last-modified"))
    assert.match(first.headers.get("cache-control")!, /\bprivate\b/)
    const since = await api.transfer(id, { "if-modified-since": new Date(Date.now() + 86_400_000).toUTCString() })
    assert.strictEqual(since.status, 200)

    const cached = await api.transfer(id, { "if-none-match": etag })
    assert.strictEqual(cached.status, 304)
    assert.strictEqual(cached.text, "")
    assert.strictEqual(cached.headers.get("etag"), etag)

    const changed = await api.transfer(id, { "if-none-match": "\"something-else\"" })
    assert.strictEqual(changed.status, 200)
    assert.strictEqual(changed.text, first.text)
  })

  it("404s an unknown or malformed id", async () => {
    assertError(await api.transfer(`tr_${"0".repeat(24)}`), 404, "resource_missing", "id")
    assertError(await api.transfer("not-an-id"), 404, "resource_missing", "id")
  })
})

describe("list", () => {
  it("walks 5 transfers newest first with limit=2 and starting_after, each exactly once", async () => {
    const client = await newClient("pagination")
    const ids: Array<string> = []
    const references: Array<string> = []
    for (let i = 0; i < 5; i++) {
      const body = transferBody({ amount: `${i + 1}.00` })
      ids.push(assertApproved(await client.api.create(body), body).id)
      references.push(body.payment_transfer.reference as string)
    }
    const seen: Array<string> = []
    let startingAfter: string | undefined
    for (let page = 0; page < 10; page++) {
      const response = await client.api.list({ limit: 2, ...(startingAfter ? { starting_after: startingAfter } : {}) })
      assert.strictEqual(response.status, 200, response.text)
      assert.strictEqual(response.json.object, "list")
      assert.isTrue(response.json.data.length <= 2)
      seen.push(...response.json.data.map((t: any) => t.id))
      if (!response.json.has_more) break
      startingAfter = seen[seen.length - 1]
    }
    assert.deepStrictEqual(seen, [...ids].reverse())

    const one = await client.api.list({ reference: references[2]! })
    assert.strictEqual(one.json.object, "list")
    assert.deepStrictEqual(one.json.data.map((t: any) => t.id), [ids[2]])
    assert.isFalse(one.json.has_more)
    assert.deepStrictEqual((await client.api.list({ reference: "no-such-reference" })).json.data, [])
  })

  it("refuses a limit outside 1-100 naming the param", async () => {
    for (const limit of ["0", "101", "two"]) assertError(await api.list({ limit }), 400, "parameter_invalid", "limit")
  })

  it("refuses a query parameter it does not take, naming it, also where it takes none", async () => {
    assertError(await api.list({ limit: "2", colour: "red" }), 400, "parameter_unknown", "colour")
    assertError(await api.get("/merchant/balance?colour=red"), 400, "parameter_unknown", "colour")
  })
})

describe("balance", () => {
  it("is the exact sum of approved amounts per merchant and currency", async () => {
    const client = await newClient("balance")
    const sends = [
      { merchant: "shop_a", currency: "USD", amount: "0.10", pan: "4242424242424242" },
      { merchant: "shop_a", currency: "USD", amount: "0.20", pan: "5555555555554444" },
      { merchant: "shop_a", currency: "USD", amount: "1000000.01", pan: randomPan() },
      { merchant: "shop_a", currency: "USD", amount: "5.00", pan: "4000000000000002" }, // declined
      { merchant: "shop_a", currency: "USD", amount: "7.00", pan: breakLuhn(randomPan()) }, // declined
      { merchant: "shop_a", currency: "JPY", amount: "100", pan: randomPan() },
      { merchant: "shop_b", currency: "BHD", amount: "1.234", pan: randomPan() },
      { merchant: "shop_b", currency: "BHD", amount: "0.001", pan: randomPan() },
      { merchant: "shop_b", currency: "USD", amount: "0.01", pan: randomPan() }
    ]
    const exponents: Record<string, number> = { USD: 2, JPY: 0, BHD: 3 }
    const expected = new Map<string, bigint>()
    for (const s of sends) {
      const body = transferBody(
        { amount: s.amount, currency: s.currency, sender_account_uri: accountUri(s.pan) },
        s.merchant
      )
      const response = await client.api.create(body)
      if (response.status === 201) {
        const k = `${s.merchant} ${s.currency}`
        expected.set(k, (expected.get(k) ?? 0n) + toMinor(s.amount, exponents[s.currency]!))
      } else {
        assert.strictEqual(response.status, 402, response.text)
      }
    }
    assert.strictEqual(fromMinor(expected.get("shop_a USD")!, 2), "1000000.31")
    const balance = await client.api.balance()
    assert.strictEqual(balance.status, 200)
    const got = [...balance.json.balances].sort((a: any, b: any) =>
      `${a.merchant_id} ${a.currency}`.localeCompare(`${b.merchant_id} ${b.currency}`)
    )
    const want = [...expected.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([k, minor]) => {
      const [merchant_id, currency] = k.split(" ")
      return { merchant_id, currency, amount: fromMinor(minor, exponents[currency!]!) }
    })
    assert.deepStrictEqual(got, want)
  })

  it("stays exact past 2^53 minor units", async () => {
    const client = await newClient("big-balance")
    const amount = "9999999999999.99" // 10^15 - 1 minor units, the largest amount
    for (let i = 0; i < 10; i++) {
      const body = transferBody({ amount, sender_account_uri: accountUri(randomPan()) }, "big")
      assert.strictEqual((await client.api.create(body)).status, 201)
    }
    const total = toMinor(amount, 2) * 10n
    assert.isTrue(total > 2n ** 53n)
    assert.deepStrictEqual((await client.api.balance()).json.balances, [
      { merchant_id: "big", currency: "USD", amount: fromMinor(total, 2) }
    ])
  })
})
