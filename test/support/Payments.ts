// Helpers for the black-box payment suites: the API key the first start prints, more clients through the
// CLI, card numbers (Luhn), expiry dates relative to now, exact decimal money, request bodies, and a small
// HTTP client for the merchant API that can keep every response it received.
import { spawn } from "node:child_process"
import { randomInt } from "node:crypto"
import { resolve } from "node:path"
import { type AppProcess, cliBundle } from "./AppProcess.ts"

const root = resolve(import.meta.dirname, "../..")

// These suites send hundreds of requests with one key: the per-key rate limit must not be what they test.
export const unlimitedEnv: Readonly<Record<string, string>> = { MERCHANT_RATE_LIMIT: "1000000" }

// A short card-network time-out and reconciliation that asks again within a second, for suites that wait
// for unknown outcomes to settle (the defaults are 10 s, 30 s and 5 min).
export const ReconcileTimeoutMs = 1_000
export const reconcileEnv: Readonly<Record<string, string>> = {
  CARD_NETWORK_TIMEOUT_MS: String(ReconcileTimeoutMs),
  RECONCILE_LEASE_MS: "2500",
  RECONCILE_MAX_DELAY_MS: "1000"
}

// "Created the first API client cl_... Its secret key, shown only now:\n  sk_..."
export const firstApiKey = (output: string): string => {
  const match = /secret key, shown only now:\r?\n\s*(sk_[A-Za-z0-9_-]+)/.exec(output)
  if (match === null) throw new Error(`the app printed no API key:\n${output}`)
  return match[1]!
}

export interface CreatedClient {
  readonly id: string
  readonly api_key: string
}

// `npm run cli -- client create --name NAME` (the CLI's bundle, dist/cli/main.mjs) on the app's database;
// prints {"id", "api_key"}.
export const createClient = (app: AppProcess, name: string): Promise<CreatedClient> =>
  new Promise((ok, fail) => {
    const child = spawn(
      process.execPath,
      [cliBundle, "client", "create", "--name", name],
      { cwd: root, env: { ...process.env, DATABASE_URL: app.databaseUrl }, stdio: "pipe" }
    )
    let out = ""
    let err = ""
    child.stdout.on("data", (chunk) => (out += chunk))
    child.stderr.on("data", (chunk) => (err += chunk))
    child.on("error", fail)
    child.on("exit", (code) => {
      const line = out.trim().split("\n").pop() ?? ""
      try {
        const parsed = JSON.parse(line)
        if (code === 0 && typeof parsed.id === "string" && typeof parsed.api_key === "string") return ok(parsed)
      } catch {
        // reported below
      }
      fail(new Error(`client create exited with ${code}:\nstdout: ${out}\nstderr: ${err}`))
    })
  })

// Cards

export const isLuhnValid = (digits: string): boolean => {
  let sum = 0
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48
    if (i % 2 === 1) d = d * 2 > 9 ? d * 2 - 9 : d * 2
    sum += d
  }
  return digits.length > 0 && sum % 10 === 0
}

// The digits followed by the check digit that makes them Luhn-valid.
export const withCheckDigit = (partial: string): string => {
  for (let d = 0; d <= 9; d++) if (isLuhnValid(`${partial}${d}`)) return `${partial}${d}`
  throw new Error("unreachable")
}

// The same number with a wrong check digit.
export const breakLuhn = (pan: string): string => {
  const last = Number(pan.slice(-1))
  return `${pan.slice(0, -1)}${(last + 1) % 10}`
}

export const randomDigits = (n: number): string => Array.from({ length: n }, () => String(randomInt(10))).join("")

// A random Luhn-valid card number with the given prefix and length, none of the sandbox's special numbers.
export const randomPan = (prefix = "4", length = 16): string =>
  withCheckDigit(`${prefix}${randomDigits(length - prefix.length - 1)}`)

// `YYYY-MM` of the month `offset` months from now, in UTC (cards expire at the end of their month, UTC).
export const expiry = (offset: number, now = new Date()): string => {
  const d = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + offset, 1))
  return `${d.getUTCFullYear()}-${String(d.getUTCMonth() + 1).padStart(2, "0")}`
}

export const accountUri = (pan: string, exp = expiry(24), cvc = "737"): string => `pan:${pan};exp=${exp};cvc=${cvc}`

// Money, exactly: decimal strings <-> integer minor units.

export const toMinor = (amount: string, exponent: number): bigint => {
  const [whole, fraction = ""] = amount.split(".")
  if (fraction.length > exponent) throw new Error(`${amount} has more than ${exponent} decimals`)
  return BigInt(whole!) * 10n ** BigInt(exponent) + BigInt(fraction.padEnd(exponent, "0") || "0")
}

export const fromMinor = (minor: bigint, exponent: number): string => {
  const digits = minor.toString().padStart(exponent + 1, "0")
  return exponent === 0 ? digits : `${digits.slice(0, -exponent)}.${digits.slice(-exponent)}`
}

// Request bodies

let sequence = 0
// The time in letters only (base 26, a-z): a base-36 time put random digit runs into every reference, and the
// card-data sweep (CardData.http.test.ts) then "found" a 4-digit CVC in one (it failed a CI run that way).
const lettersOnly = (n: number) => [...n.toString(26)].map((c) => String.fromCharCode(97 + parseInt(c, 26))).join("")
export const uniqueReference = (tag: string): string => `${tag}-${process.pid}-${lettersOnly(Date.now())}-${++sequence}`

export interface TransferOverrides {
  readonly reference?: string | undefined
  readonly amount?: unknown
  readonly currency?: unknown
  readonly sender_account_uri?: unknown
  readonly sender?: unknown
  readonly recipient?: unknown
  readonly authentication_value?: unknown
}

// `{"payment_transfer": {...}}` for an approved card, with any field replaced; `undefined` leaves it out.
export const transferBody = (overrides: TransferOverrides = {}, merchantId = "merchant_1") => {
  const fields: Record<string, unknown> = {
    reference: uniqueReference("ref"),
    amount: "12.30",
    currency: "USD",
    sender_account_uri: accountUri("4242424242424242"),
    sender: { first_name: "Ann", middle_name: "Marie", email: "ann@example.com" },
    recipient: { first_name: "Bob", email: "bob@example.com", merchant_id: merchantId }
  }
  for (const [key, value] of Object.entries(overrides)) {
    if (value === undefined) delete fields[key]
    else fields[key] = value
  }
  return { payment_transfer: fields }
}

// HTTP

export interface Received {
  readonly method: string
  readonly url: string
  readonly status: number
  readonly headers: Headers
  readonly text: string
  readonly json: any
}

export interface RequestOptions {
  readonly idempotencyKey?: string
  readonly headers?: Record<string, string>
}

const parse = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

// The merchant API with one key (or none). Every response is read to the end and, when `received` is
// given, kept there: the card-data suite searches all of them.
export class MerchantApi {
  constructor(
    readonly baseUrl: string,
    readonly key: string | undefined,
    readonly received?: Array<Received>,
    // Sent with every request (before the request's own headers), e.g. a fixed X-Request-Id.
    readonly defaultHeaders: Record<string, string> = {}
  ) {}

  withKey(key: string | undefined): MerchantApi {
    return new MerchantApi(this.baseUrl, key, this.received, this.defaultHeaders)
  }

  async request(
    method: string,
    path: string,
    init: {
      readonly body?: BodyInit
      readonly headers?: Record<string, string>
      readonly duplex?: "half"
      readonly signal?: AbortSignal
    } = {}
  ): Promise<Received> {
    const url = path.startsWith("http") ? path : `${this.baseUrl}${path}`
    const response = await fetch(url, {
      method,
      headers: {
        ...this.defaultHeaders,
        ...(this.key === undefined ? {} : { authorization: `Bearer ${this.key}` }),
        ...init.headers
      },
      ...(init.body === undefined ? {} : { body: init.body }),
      ...(init.duplex === undefined ? {} : { duplex: init.duplex }),
      ...(init.signal === undefined ? {} : { signal: init.signal })
    } as RequestInit)
    const text = await response.text()
    const received: Received = {
      method,
      url,
      status: response.status,
      headers: response.headers,
      text,
      json: parse(text)
    }
    this.received?.push(received)
    return received
  }

  // POST a raw body with a Content-Type.
  postRaw(body: BodyInit, contentType: string | undefined, options: RequestOptions = {}): Promise<Received> {
    return this.request("POST", "/merchant/transfers/payment", {
      body,
      headers: {
        ...(contentType === undefined ? {} : { "content-type": contentType }),
        ...(options.idempotencyKey === undefined ? {} : { "idempotency-key": options.idempotencyKey }),
        ...options.headers
      }
    })
  }

  create(body: unknown, options: RequestOptions = {}): Promise<Received> {
    return this.postRaw(JSON.stringify(body), "application/json", options)
  }

  get(path: string, headers: Record<string, string> = {}): Promise<Received> {
    return this.request("GET", path, { headers })
  }

  transfer(id: string, headers: Record<string, string> = {}): Promise<Received> {
    return this.get(`/merchant/transfers/payment/${encodeURIComponent(id)}`, headers)
  }

  list(params: Record<string, string | number> = {}, headers: Record<string, string> = {}): Promise<Received> {
    const query = new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)])).toString()
    return this.get(`/merchant/transfers/payment${query === "" ? "" : `?${query}`}`, headers)
  }

  balance(headers: Record<string, string> = {}): Promise<Received> {
    return this.get("/merchant/balance", headers)
  }

  // POST /merchant/transfers/payment/{id}/refunds with a JSON body.
  refund(transferId: string, body: unknown = {}, options: RequestOptions = {}): Promise<Received> {
    return this.request("POST", `/merchant/transfers/payment/${encodeURIComponent(transferId)}/refunds`, {
      body: JSON.stringify(body),
      headers: {
        "content-type": "application/json",
        ...(options.idempotencyKey === undefined ? {} : { "idempotency-key": options.idempotencyKey }),
        ...options.headers
      }
    })
  }

  refunds(transferId: string, params: Record<string, string | number> = {}): Promise<Received> {
    const query = new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)])).toString()
    return this.get(
      `/merchant/transfers/payment/${encodeURIComponent(transferId)}/refunds${query === "" ? "" : `?${query}`}`
    )
  }

  refundById(id: string, headers: Record<string, string> = {}): Promise<Received> {
    return this.get(`/merchant/refunds/${encodeURIComponent(id)}`, headers)
  }

  // The transfer recorded under a reference (approved or declined), through the list endpoint.
  async byReference(reference: string): Promise<any> {
    const response = await this.list({ reference })
    if (response.status !== 200) throw new Error(`list by reference: ${response.status} ${response.text}`)
    return response.json.data
  }

  // The transfer once its status is one of `statuses` (polled), or an error after `timeoutMs`.
  async settled(id: string, statuses = ["approved", "declined"], timeoutMs = 20_000): Promise<any> {
    const deadline = Date.now() + timeoutMs
    let last: Received | undefined
    while (Date.now() < deadline) {
      last = await this.transfer(id)
      if (last.status === 200 && statuses.includes(last.json.payment_transfer.status)) return last.json.payment_transfer
      await new Promise((r) => setTimeout(r, 200))
    }
    throw new Error(`transfer ${id} not ${statuses.join("/")} within ${timeoutMs} ms: ${last?.status} ${last?.text}`)
  }
}
