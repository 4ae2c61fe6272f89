import { assert, describe, it } from "@effect/vitest"
import { afterAll, beforeAll } from "vitest"
import { AppProcess, form } from "../support/AppProcess.ts"
import {
  accountUri,
  expiry,
  firstApiKey,
  MerchantApi,
  type Received,
  transferBody,
  uniqueReference,
  unlimitedEnv
} from "../support/Payments.ts"

// What real senders send, field by field, and what the service decided to do with it (docs/api.md, "Request
// rules"): liberal where a value is opaque or its spelling carries no meaning, strict for money, currency
// and card numbers.
let app: AppProcess
let api: MerchantApi

beforeAll(async () => {
  app = await AppProcess.start({ env: unlimitedEnv })
  api = new MerchantApi(app.baseUrl, firstApiKey(app.output))
})
afterAll(async () => {
  await app?.stop()
})

const assertInvalid = (response: Received, param: string) => {
  assert.strictEqual(response.status, 400, response.text)
  assert.strictEqual(response.json.error.param, param, response.text)
}

// The interface's example request, as its source writes it (its trailing comma taken out): an unpadded ucaf
// value, as 3-D Secure servers send them.
const interfaceExample = (reference: string, exp: string) =>
  `{
  "payment_transfer": {
    "reference": "${reference}",
    "amount": "10.00",
    "currency": "USD",
    "sender_account_uri": "pan:5299920000000149;exp=${exp};cvc=123",
    "sender": {
      "first_name": "John",
      "middle_name": "Tyler",
      "email": "john.jones@mastercard.com"
    },
    "recipient": {
      "first_name": "Jane",
      "middle_name": "Tyler",
      "email": "jane.jones@mastercard.com",
      "merchant_id": "DLmerch-1"
    },
    "authentication_value": "ucaf:jJJLtQa+Iws8AREAEbjsA1MAAAA"
  }
}`

describe("payment transfers", () => {
  it("the interface's 402 example, with its unpadded ucaf value, answers 402 expired_card", async () => {
    const response = await api.postRaw(interfaceExample(uniqueReference("example"), expiry(-1)), "application/json")
    assert.strictEqual(response.status, 402, response.text)
    assert.strictEqual(response.json.error.code, "expired_card")
  })

  it("authentication_value with or without padding is one value: the same Idempotency-Key replays", async () => {
    const reference = uniqueReference("padding")
    const padded = interfaceExample(reference, expiry(12)).replace("AAAA\"", "AAAA=\"")
    const first = await api.postRaw(padded, "application/json", { idempotencyKey: `${reference}-key` })
    assert.strictEqual(first.status, 201, first.text)
    const unpadded = await api.postRaw(interfaceExample(reference, expiry(12)), "application/json", {
      idempotencyKey: `${reference}-key`
    })
    assert.strictEqual(unpadded.status, 201, unpadded.text)
    assert.strictEqual(unpadded.headers.get("idempotent-replayed"), "true")
    assert.strictEqual(unpadded.text, first.text)
  })

  it("takes media-type parameters and any case of the media type", async () => {
    for (const type of ["application/json; charset=utf-8", "Application/JSON; Charset=\"UTF-8\"", "APPLICATION/JSON"]) {
      const response = await api.postRaw(JSON.stringify(transferBody()), type)
      assert.strictEqual(response.status, 201, `${type}: ${response.text}`)
    }
  })

  it("takes a UTF-8 byte order mark and any JSON white space", async () => {
    const bom = await api.postRaw(`\ufeff${JSON.stringify(transferBody())}`, "application/json")
    assert.strictEqual(bom.status, 201, bom.text)
    const pretty = await api.postRaw(
      JSON.stringify(transferBody(), null, "\t").replaceAll("\n", "\r\n"),
      "application/json"
    )
    assert.strictEqual(pretty.status, 201, pretty.text)
  })

  it("takes the auth scheme in any case (RFC 9110)", async () => {
    const response = await api.withKey(undefined).create(transferBody(), {
      headers: { authorization: `bearer ${api.key}` }
    })
    assert.strictEqual(response.status, 201, response.text)
  })

  it("trims white space around e-mail addresses; keeps names as sent", async () => {
    const body = transferBody({ sender: { first_name: " Ann ", email: " ann@example.com\t" } })
    const response = await api.create(body)
    assert.strictEqual(response.status, 201, response.text)
    assert.strictEqual(response.json.payment_transfer.sender.email, "ann@example.com")
    assert.strictEqual(response.json.payment_transfer.sender.first_name, " Ann ")
  })

  it("is strict about the amount: no white space, sign, exponent, comma or JSON number", async () => {
    for (const amount of [" 12.30", "12.30 ", "+12.30", "1.23e1", "12,30", "12.", ".5", 12.3]) {
      assertInvalid(await api.create(transferBody({ amount })), "payment_transfer.amount")
    }
  })

  it("is strict about the currency: upper-case ISO 4217, no white space", async () => {
    for (const currency of ["usd", "Usd", " USD", "USD ", "US$", 840]) {
      assertInvalid(await api.create(transferBody({ currency })), "payment_transfer.currency")
    }
  })

  it("is strict about the card number: digits only, no spaces or dashes", async () => {
    for (const pan of ["4242 4242 4242 4242", "4242-4242-4242-4242", " 4242424242424242"]) {
      const response = await api.create(transferBody({ sender_account_uri: accountUri(pan) }))
      assertInvalid(response, "payment_transfer.sender_account_uri")
      assert.notInclude(response.text, "4242")
    }
  })

  it("is strict about the reference: no white space is trimmed from a key that must be unique", async () => {
    assertInvalid(
      await api.create(transferBody({ reference: ` ${uniqueReference("ws")}` })),
      "payment_transfer.reference"
    )
  })
})

describe("subscriptions", () => {
  const post = (body: string, type: string) =>
    fetch(`${app.baseUrl}/subscribe`, { method: "POST", headers: { "content-type": type }, body })
  let n = 0
  const email = () => `real.${process.pid}.${++n}@example.com`

  it("reads + in a form as a space, and trims names and addresses", async () => {
    const address = email()
    const response = await post(
      `name=+Ann+Example+&email=+${encodeURIComponent(address)}+`,
      "application/x-www-form-urlencoded"
    )
    assert.strictEqual(response.status, 200)
    const body = (await response.json()) as any
    assert.strictEqual(body.subscription.name, "Ann Example")
    assert.strictEqual(body.subscription.email, address)
  })

  it("takes media-type parameters and any case of the media type", async () => {
    for (
      const type of [
        "application/x-www-form-urlencoded; charset=UTF-8",
        "Application/X-WWW-Form-URLEncoded;charset=utf-8",
        "application/json; charset=utf-8"
      ]
    ) {
      const fields = { name: "Ann", email: email() }
      const response = await post(type.includes("json") ? JSON.stringify(fields) : form(fields), type)
      assert.strictEqual(response.status, 200, `${type}: ${await response.text()}`)
    }
  })

  it("refuses multipart/form-data with 415", async () => {
    const data = new FormData()
    data.set("name", "Ann")
    data.set("email", email())
    const response = await fetch(`${app.baseUrl}/subscribe`, { method: "POST", body: data })
    assert.strictEqual(response.status, 415)
  })
})

describe("bad input", () => {
  it("deeply nested JSON is 400 body_invalid, never 500", async () => {
    for (const depth of [33, 5_000, 30_000]) {
      const nested = `${"[".repeat(depth)}${"]".repeat(depth)}`
      for (const body of [nested, `{"payment_transfer": ${nested}}`, `{"payment_transfer": {"sender": ${nested}}}`]) {
        const response = await api.postRaw(body, "application/json")
        assert.strictEqual(response.status, 400, `${depth}: ${response.text}`)
        assert.strictEqual(response.json.error.code, "body_invalid")
      }
      const signup = await fetch(`${app.baseUrl}/subscribe`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: `{"name": ${nested}, "email": "ann@example.com"}`
      })
      assert.strictEqual(signup.status, 400)
    }
  })

  it("32 levels are still read: the member is decoded (and refused as unknown), not refused as too deep", async () => {
    const body = transferBody({
      sender: { first_name: "Ann", email: "ann@example.com", extra: JSON.parse(`${"[".repeat(29)}${"]".repeat(29)}`) }
    })
    const response = await api.create(body)
    assert.strictEqual(response.status, 400, response.text)
    assert.deepInclude(response.json.error, { code: "parameter_unknown", param: "payment_transfer.sender.extra" })
  })
})
