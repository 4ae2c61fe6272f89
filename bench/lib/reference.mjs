// The two reference servers' shared work, written the plain way: better-sqlite3 called directly, the same
// validation rules as core/ (the same regular expressions and checks, in the same order), the same rows
// and the same response bodies as the service. Only the HTTP layer differs between bench/ref-node-http.mjs
// and bench/ref-fastify.mjs, so the pair measures what the framework costs on top of this work.
//
// Durability is the service's: WAL, synchronous=FULL, foreign keys on, one BEGIN IMMEDIATE transaction per
// write (an approved transfer is two: the pending row reserved, then settled, as core/Transfers.ts does).
import Database from "better-sqlite3"
import { createHash, createHmac, randomBytes, randomUUID } from "node:crypto"
import { readFileSync } from "node:fs"

export const MaxBodyBytes = 64 * 1024

// ISO 4217 minor units: read from the core's own table, so the two cannot drift apart.
const currencySource = readFileSync(new URL("../../core/Currency.ts", import.meta.url), "utf8")
const exponentBlock = /const exponents[^{]*\{([\s\S]*?)\n\}/.exec(currencySource)
const exponents = new Map([...(exponentBlock?.[1] ?? "").matchAll(/\b([A-Z]{3}): (\d)\b/g)].map((m) => [
  m[1],
  Number(m[2])
]))
if (exponents.size < 150) throw new Error(`could not read the currency table of core/Currency.ts (${exponents.size})`)

// apps/http/ErrorCatalog.ts: the type and status of every code the reference can answer with.
const catalog = {
  parameter_missing: ["invalid_request_error", 400],
  parameter_invalid: ["invalid_request_error", 400],
  email_invalid: ["invalid_request_error", 400],
  body_invalid: ["invalid_request_error", 400],
  unsupported_media_type: ["invalid_request_error", 415],
  api_key_invalid: ["authentication_error", 401],
  resource_missing: ["invalid_request_error", 404],
  route_not_found: ["invalid_request_error", 404],
  method_not_allowed: ["invalid_request_error", 405],
  body_too_large: ["invalid_request_error", 413],
  duplicate_reference: ["invalid_request_error", 409],
  internal_error: ["api_error", 500],
  card_declined: ["card_error", 402],
  expired_card: ["card_error", 402],
  incorrect_number: ["card_error", 402],
  incorrect_cvc: ["card_error", 402],
  insufficient_funds: ["card_error", 402],
  processing_error: ["card_error", 402],
  authentication_required: ["card_error", 402]
}

// core/CardNetwork.ts
const cardErrorMessages = {
  card_declined: "Your card was declined.",
  expired_card: "Your card has expired. Check the expiration date or use a different card.",
  incorrect_number: "Your card number is incorrect.",
  incorrect_cvc: "Your card's security code is incorrect.",
  insufficient_funds: "Your card has insufficient funds.",
  processing_error: "An error occurred while processing your card. Try again in a little bit.",
  authentication_required: "Your card was declined. This transaction requires authentication."
}

// ---- validation, after core/Email.ts, core/Subscription.ts, core/Feed.ts, core/Transfer.ts, core/Card.ts,
// core/Money.ts

const localPart = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/
const label = /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/
const topLabel = /^[A-Za-z]{2,63}$/
const isEmail = (s) => {
  if (s.length > 254) return false
  const at = s.lastIndexOf("@")
  if (at < 1 || at !== s.indexOf("@")) return false
  const local = s.slice(0, at)
  const labels = s.slice(at + 1).split(".")
  return local.length <= 64 && localPart.test(local) && labels.length >= 2 && labels.every((l) => label.test(l)) &&
    topLabel.test(labels[labels.length - 1])
}
const noControl = /^[^\p{Cc}]*$/u
const feedName = /^[a-z0-9][a-z0-9-]{0,63}$/
const referencePattern = /^[\x21-\x7E]{1,64}$/
const merchantIdPattern = /^[A-Za-z0-9_.:-]{1,64}$/
const authenticationPattern = /^ucaf:(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/
const transferIdPattern = /^tr_[0-9A-Za-z]{24}$/
const decimal = /^(0|[1-9][0-9]{0,17})(?:\.([0-9]{1,18}))?$/
const MaxMinorUnits = 10n ** 15n

class Invalid extends Error {
  constructor(code, message, param) {
    super(message)
    this.code = code
    this.param = param
  }
}
const missing = (param) => new Invalid("parameter_missing", `Missing required parameter: ${param}.`, param)
const invalid = (param, message) =>
  new Invalid(param.split(".").pop() === "email" ? "email_invalid" : "parameter_invalid", message, param)
const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v)

const email = (value, param) => {
  if (value === undefined) throw missing(param)
  if (typeof value !== "string") throw invalid(param, "email must be a string.")
  const s = value.trim()
  if (s.length === 0) throw invalid(param, "Enter an e-mail address.")
  if (s.length > 254) throw invalid(param, "An e-mail address has at most 254 characters.")
  if (!isEmail(s)) throw invalid(param, "Enter a valid e-mail address, like name@example.com.")
  return s
}

const text = (value, param, what, max) => {
  if (typeof value !== "string") throw invalid(param, `${what} must be a string.`)
  if (value.length > max) throw invalid(param, `${what} has at most ${max} characters.`)
  if (!noControl.test(value)) throw invalid(param, `${what} cannot contain control characters.`)
  return value
}

export const validateSubscribe = (body) => {
  if (!isObject(body)) throw new Invalid("body_invalid", "The request body must be an object of parameters.")
  if (body.name === undefined) throw missing("name")
  if (typeof body.name !== "string") throw invalid("name", "Expected string")
  const name = body.name.trim()
  if (name.length === 0) throw invalid("name", "Enter a name.")
  if (name.length > 100) throw invalid("name", "A name has at most 100 characters.")
  if (!noControl.test(name)) throw invalid("name", "A name cannot contain control characters.")
  const address = email(body.email, "email")
  const feed = body.feed === undefined ? "default" : body.feed
  if (typeof feed !== "string" || !feedName.test(feed)) {
    throw invalid("feed", "A feed name is 1-64 characters: lowercase letters, digits and hyphens.")
  }
  if (body.website !== undefined && typeof body.website !== "string") throw invalid("website", "Expected string")
  return { name, email: address, feed, website: body.website }
}

// core/Card.ts parseAccountUri: the messages never repeat the input.
const parseAccountUri = (input, param) => {
  if (input.length > 128 || !input.startsWith("pan:")) {
    throw invalid(param, "sender_account_uri must look like pan:<card number>;exp=<YYYY-MM>;cvc=<CVC>.")
  }
  const [pan, ...parameters] = input.slice(4).split(";")
  if (!/^[0-9]{12,19}$/.test(pan)) throw invalid(param, "The card number must be 12 to 19 digits.")
  const values = new Map()
  for (const parameter of parameters) {
    const eq = parameter.indexOf("=")
    const key = eq < 0 ? parameter : parameter.slice(0, eq)
    if ((key !== "exp" && key !== "cvc") || eq < 0) {
      throw invalid(param, "sender_account_uri takes exactly the parameters exp and cvc.")
    }
    if (values.has(key)) throw invalid(param, `sender_account_uri has the parameter ${key} twice.`)
    values.set(key, parameter.slice(eq + 1))
  }
  const exp = /^([0-9]{4})-([0-9]{2})$/.exec(values.get("exp") ?? "")
  if (exp === null) throw invalid(param, "The expiry (exp) must be YYYY-MM.")
  const month = Number(exp[2])
  if (month < 1 || month > 12) throw invalid(param, "The expiry month (exp) must be 01 to 12.")
  const cvc = values.get("cvc") ?? ""
  if (!/^[0-9]{3,4}$/.test(cvc)) throw invalid(param, "The CVC must be 3 or 4 digits.")
  return { pan, expiry: { year: Number(exp[1]), month }, cvc }
}

const party = (value, param, withMerchant) => {
  if (value === undefined) throw missing(param)
  if (!isObject(value)) throw invalid(param, `Expected an object`)
  if (value.first_name === undefined) throw missing(`${param}.first_name`)
  const firstName = text(value.first_name, `${param}.first_name`, "first_name", 100)
  if (firstName.trim().length === 0) throw invalid(`${param}.first_name`, "first_name cannot be empty.")
  const middleName = value.middle_name === undefined
    ? undefined
    : text(value.middle_name, `${param}.middle_name`, "middle_name", 100)
  const address = email(value.email, `${param}.email`)
  const result = middleName === undefined
    ? { first_name: firstName, email: address }
    : { first_name: firstName, middle_name: middleName, email: address }
  if (withMerchant) {
    const id = value.merchant_id
    if (id === undefined) throw missing(`${param}.merchant_id`)
    if (typeof id !== "string") throw invalid(`${param}.merchant_id`, "merchant_id must be a string.")
    if (!merchantIdPattern.test(id)) {
      throw invalid(`${param}.merchant_id`, "merchant_id is 1-64 letters, digits, '_', '.', ':' or '-'.")
    }
    result.merchant_id = id
  }
  return result
}

const parseAmount = (text, currency) => {
  const exponent = exponents.get(currency)
  const match = decimal.exec(text)
  if (match === null) {
    return "An amount is a decimal string such as \"12.34\": digits, at most one point, no sign."
  }
  const fraction = match[2] ?? ""
  if (fraction.length > exponent) {
    return exponent === 0
      ? `${currency} has no minor unit: send a whole number.`
      : `${currency} allows at most ${exponent} decimal places.`
  }
  const minor = BigInt(match[1]) * 10n ** BigInt(exponent) + BigInt(fraction.padEnd(exponent, "0") || "0")
  if (minor <= 0n) return "The amount must be greater than zero."
  if (minor >= MaxMinorUnits) return "The amount is too large."
  return minor
}

const formatAmount = (minor, currency) => {
  const exponent = exponents.get(currency)
  const digits = minor.toString().padStart(exponent + 1, "0")
  return exponent === 0 ? digits : `${digits.slice(0, -exponent)}.${digits.slice(-exponent)}`
}

export const validateTransfer = (body) => {
  if (!isObject(body)) throw new Invalid("body_invalid", "The request body must be an object of parameters.")
  const t = body.payment_transfer
  const p = "payment_transfer"
  if (t === undefined) throw missing(p)
  if (!isObject(t)) throw invalid(p, "Expected an object")
  if (t.reference === undefined) throw missing(`${p}.reference`)
  if (typeof t.reference !== "string") throw invalid(`${p}.reference`, "reference must be a string.")
  if (!referencePattern.test(t.reference)) {
    throw invalid(`${p}.reference`, "reference is 1-64 printable ASCII characters without spaces.")
  }
  if (t.amount === undefined) throw missing(`${p}.amount`)
  if (typeof t.amount !== "string") {
    throw invalid(`${p}.amount`, "amount must be a decimal string such as \"12.34\", not a number.")
  }
  if (t.currency === undefined) throw missing(`${p}.currency`)
  if (typeof t.currency !== "string" || !exponents.has(t.currency)) {
    throw invalid(`${p}.currency`, "Enter an ISO 4217 currency code in upper case, such as USD, EUR or JPY.")
  }
  if (t.sender_account_uri === undefined) throw missing(`${p}.sender_account_uri`)
  if (typeof t.sender_account_uri !== "string") {
    throw invalid(`${p}.sender_account_uri`, "sender_account_uri must be a string.")
  }
  const account = parseAccountUri(t.sender_account_uri, `${p}.sender_account_uri`)
  const sender = party(t.sender, `${p}.sender`, false)
  const recipient = party(t.recipient, `${p}.recipient`, true)
  let authenticated = false
  if (t.authentication_value !== undefined) {
    const v = t.authentication_value
    if (typeof v !== "string") throw invalid(`${p}.authentication_value`, "authentication_value must be a string.")
    if (!(v.length <= 205 && authenticationPattern.test(v) && v.length > 5)) {
      throw invalid(`${p}.authentication_value`, "authentication_value must be ucaf: followed by base64.")
    }
    authenticated = true
  }
  // core/Transfers.ts: the amount's digits are checked once the currency is known.
  const amount = parseAmount(t.amount, t.currency)
  if (typeof amount === "string") throw invalid(`${p}.amount`, amount)
  return { reference: t.reference, amount, currency: t.currency, account, sender, recipient, authenticated }
}

const luhn = (digits) => {
  let sum = 0
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48
    if (i % 2 === 1) d = d * 2 > 9 ? d * 2 - 9 : d * 2
    sum += d
  }
  return digits.length > 0 && sum % 10 === 0
}

const brandOf = (pan) => {
  const n = (digits) => Number(pan.slice(0, digits))
  if (pan.startsWith("4")) return "visa"
  if ((n(2) >= 51 && n(2) <= 55) || (n(4) >= 2221 && n(4) <= 2720)) return "mastercard"
  if (n(2) === 34 || n(2) === 37) return "amex"
  if (pan.startsWith("6011") || pan.startsWith("65") || (n(3) >= 644 && n(3) <= 649)) return "discover"
  if (n(4) >= 3528 && n(4) <= 3589) return "jcb"
  if (n(2) === 36 || n(2) === 38 || n(2) === 39 || (n(3) >= 300 && n(3) <= 305)) return "diners"
  if (pan.startsWith("62")) return "unionpay"
  return "unknown"
}

// Valid through the last day of the expiry month, UTC.
const isExpired = (expiry, nowMs) => {
  const date = new Date(0)
  date.setUTCFullYear(expiry.year, expiry.month, 1)
  return nowMs >= date.getTime()
}

// adapters/cardnetwork/SandboxCardNetwork.ts
const sandbox = new Map([
  ["4000000000000069", { code: "expired_card" }],
  ["4000000000000002", { code: "card_declined", declineCode: "generic_decline" }],
  ["4000000000009995", { code: "insufficient_funds" }],
  ["4000000000000127", { code: "incorrect_cvc" }],
  ["4000000000000119", { code: "processing_error" }],
  ["4000000000009987", { code: "card_declined", declineCode: "lost_card" }],
  ["4000000000009979", { code: "card_declined", declineCode: "stolen_card" }],
  ["4000002760003184", { code: "authentication_required", approvedWhenAuthenticated: true }]
])
const authorizationCode = (transferId) => {
  let hash = 0
  for (let i = 0; i < transferId.length; i++) hash = (hash * 31 + transferId.charCodeAt(i)) >>> 0
  return `SBX${String(hash % 1000).padStart(3, "0")}`
}
const authorize = (transferId, pan, authenticated) => {
  const card = sandbox.get(pan)
  if (card === undefined || (card.approvedWhenAuthenticated && authenticated)) {
    return { approved: true, authorizationCode: authorizationCode(transferId) }
  }
  return { approved: false, code: card.code, declineCode: card.declineCode }
}

const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
const randomId = (prefix) => {
  let id = prefix
  for (let i = 0; i < 24; i++) id += alphabet[Math.floor(Math.random() * alphabet.length)]
  return id
}

// ---- storage: the service's tables (adapters/sql/Migrations.ts, SQLite flavour) and statements

const schema = `
CREATE TABLE IF NOT EXISTS feeds (name TEXT PRIMARY KEY, title TEXT NOT NULL, created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL, deleted_at INTEGER);
CREATE TABLE IF NOT EXISTS subscriptions (id INTEGER PRIMARY KEY AUTOINCREMENT, email TEXT NOT NULL,
  email_key TEXT NOT NULL, name TEXT NOT NULL, feed TEXT NOT NULL REFERENCES feeds (name),
  status TEXT NOT NULL CHECK (status IN ('pending', 'active', 'unsubscribed')),
  created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, UNIQUE (email_key, feed));
CREATE TABLE IF NOT EXISTS subscription_tokens (hash TEXT PRIMARY KEY,
  subscription_id INTEGER NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
  purpose TEXT NOT NULL CHECK (purpose IN ('confirm', 'unsubscribe')), created_at INTEGER NOT NULL,
  expires_at INTEGER, used_at INTEGER);
CREATE INDEX IF NOT EXISTS subscription_tokens_subscription ON subscription_tokens (subscription_id);
CREATE TABLE IF NOT EXISTS mail_outbox (id INTEGER PRIMARY KEY AUTOINCREMENT,
  kind TEXT NOT NULL CHECK (kind IN ('confirmation')),
  subscription_id INTEGER NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
  created_at INTEGER NOT NULL, next_attempt_at INTEGER, attempts INTEGER NOT NULL DEFAULT 0, sent_at INTEGER,
  last_error TEXT);
CREATE INDEX IF NOT EXISTS mail_outbox_due ON mail_outbox (next_attempt_at) WHERE sent_at IS NULL;
CREATE INDEX IF NOT EXISTS mail_outbox_subscription ON mail_outbox (subscription_id, created_at);
CREATE TABLE IF NOT EXISTS api_clients (id TEXT PRIMARY KEY, name TEXT NOT NULL, key_hash TEXT NOT NULL UNIQUE,
  created_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS transfers (id TEXT PRIMARY KEY, client_id TEXT NOT NULL REFERENCES api_clients (id),
  reference TEXT NOT NULL, amount INTEGER NOT NULL CHECK (amount > 0), currency TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'declined')),
  sender_first_name TEXT NOT NULL, sender_middle_name TEXT, sender_email TEXT NOT NULL,
  card_brand TEXT NOT NULL, card_last4 TEXT NOT NULL, card_exp_month INTEGER NOT NULL,
  card_exp_year INTEGER NOT NULL, card_fingerprint TEXT NOT NULL, recipient_first_name TEXT NOT NULL,
  recipient_middle_name TEXT, recipient_email TEXT NOT NULL, recipient_merchant_id TEXT NOT NULL,
  failure_code TEXT, decline_code TEXT, authorization_code TEXT, created_at INTEGER NOT NULL,
  UNIQUE (client_id, reference));
CREATE INDEX IF NOT EXISTS transfers_client_created ON transfers (client_id, created_at, id);
`

const transferColumns = `id, client_id, reference, CAST(amount AS TEXT) AS amount, currency, status,
  sender_first_name, sender_middle_name, sender_email, card_brand, card_last4, card_exp_month, card_exp_year,
  card_fingerprint, recipient_first_name, recipient_middle_name, recipient_email, recipient_merchant_id,
  failure_code, decline_code, authorization_code, created_at`
const subscriptionColumns = "id, name, email, feed, status, created_at, updated_at"

const MailThrottleWindowMs = 24 * 3600 * 1000
const MailThrottleMax = 3

const sha256hex = (s) => createHash("sha256").update(s).digest("hex")

export const makeReference = ({ filename, baseUrl }) => {
  const db = new Database(filename)
  db.pragma("journal_mode = WAL")
  db.pragma("synchronous = FULL")
  db.pragma("foreign_keys = ON")
  db.pragma("busy_timeout = 5000")
  db.exec(schema)
  const started = Date.now()
  db.prepare(
    "INSERT INTO feeds (name, title, created_at, updated_at) VALUES ('default', 'Newsletter', ?, ?) ON CONFLICT DO NOTHING"
  ).run(started, started)

  // The first API client, as the sandbox service makes it: only the key's SHA-256 is stored.
  const clientId = randomId("cl_")
  const apiKey = `sk_${randomBytes(32).toString("base64url")}`
  db.prepare("INSERT INTO api_clients (id, name, key_hash, created_at) VALUES (?, 'sandbox', ?, ?)").run(
    clientId,
    sha256hex(apiKey),
    started
  )
  const fingerprintKey = randomBytes(32).toString("base64url")

  const s = {
    findFeed: db.prepare("SELECT name, title, created_at, updated_at FROM feeds WHERE name = ? AND deleted_at IS NULL"),
    insertSubscription: db.prepare(`INSERT INTO subscriptions (email, email_key, name, feed, status, created_at,
      updated_at) VALUES (?, ?, ?, ?, 'pending', ?, ?) ON CONFLICT (email_key, feed) DO NOTHING
      RETURNING ${subscriptionColumns}`),
    existingSubscription: db.prepare("SELECT id, status FROM subscriptions WHERE email_key = ? AND feed = ?"),
    recentMails: db.prepare("SELECT count(*) AS n FROM mail_outbox WHERE subscription_id = ? AND created_at > ?"),
    updateSubscription: db.prepare(`UPDATE subscriptions SET status = ?, updated_at = ?,
      name = CASE WHEN ? = 1 THEN ? ELSE name END WHERE id = ? RETURNING ${subscriptionColumns}`),
    insertOutbox: db.prepare(`INSERT INTO mail_outbox (kind, subscription_id, created_at, next_attempt_at)
      VALUES ('confirmation', ?, ?, ?)`),
    clientByKeyHash: db.prepare("SELECT id, name FROM api_clients WHERE key_hash = ?"),
    byReference: db.prepare(`SELECT ${transferColumns} FROM transfers WHERE client_id = ? AND reference = ?`),
    insertTransfer: db.prepare(`INSERT INTO transfers (id, client_id, reference, amount, currency, status,
      sender_first_name, sender_middle_name, sender_email, card_brand, card_last4, card_exp_month, card_exp_year,
      card_fingerprint, recipient_first_name, recipient_middle_name, recipient_email, recipient_merchant_id,
      failure_code, decline_code, authorization_code, created_at)
      VALUES (@id, @client_id, @reference, @amount, @currency, @status, @sender_first_name, @sender_middle_name,
      @sender_email, @card_brand, @card_last4, @card_exp_month, @card_exp_year, @card_fingerprint,
      @recipient_first_name, @recipient_middle_name, @recipient_email, @recipient_merchant_id, @failure_code,
      @decline_code, @authorization_code, @created_at)
      ON CONFLICT (client_id, reference) DO NOTHING RETURNING id`),
    existingReference: db.prepare("SELECT id FROM transfers WHERE client_id = ? AND reference = ?"),
    settle: db.prepare(`UPDATE transfers SET status = ?, failure_code = ?, decline_code = ?, authorization_code = ?
      WHERE id = ? AND status = 'pending'`),
    get: db.prepare(`SELECT ${transferColumns} FROM transfers WHERE client_id = ? AND id = ?`)
  }

  // adapters/sql/SqlSubscriptionStore.ts subscribe: insert first, else lock and decide; the outbox row in
  // the same transaction.
  const subscribeTx = db.transaction((email, name, feed, now) => {
    const key = email.toLowerCase()
    const inserted = s.insertSubscription.get(email, key, name, feed, now, now)
    let subscription = inserted
    let queue = true
    if (inserted === undefined) {
      const existing = s.existingSubscription.get(key, feed)
      const mails = s.recentMails.get(existing.id, now - MailThrottleWindowMs).n
      const status = existing.status === "active" ? "active" : "pending"
      queue = status === "pending" && mails < MailThrottleMax
      subscription = s.updateSubscription.get(status, now, status === "pending" ? 1 : 0, name, existing.id)
    }
    if (queue) s.insertOutbox.run(subscription.id, now, now)
    return subscription
  })

  const insertTx = db.transaction((row) => {
    if (s.insertTransfer.get(row) === undefined) return s.existingReference.get(row.client_id, row.reference).id
    return undefined
  })
  const settleTx = db.transaction((t) =>
    s.settle.run(t.status, t.failure_code, t.decline_code, t.authorization_code, t.id)
  )

  const json = (status, value, requestId, headers = {}) => ({
    status,
    headers: { "content-type": "application/json", "x-request-id": requestId, ...headers },
    body: JSON.stringify(value)
  })

  const error = (code, message, requestId, extra = {}, headers = {}) => {
    const [type, status] = catalog[code]
    return json(
      status,
      {
        error: { type, code, message, ...extra, doc_url: `${baseUrl}/docs/errors#${code}`, request_id: requestId }
      },
      requestId,
      headers
    )
  }

  const fromInvalid = (e, requestId) =>
    error(e.code, e.message, requestId, e.param === undefined || e.code === "body_invalid" ? {} : { param: e.param })

  const guard = (requestId, f) => {
    try {
      return f()
    } catch (e) {
      if (e instanceof Invalid) return fromInvalid(e, requestId)
      console.error(e)
      return error("internal_error", "An internal error occurred.", requestId)
    }
  }

  const requestIdOf = (incoming) =>
    typeof incoming === "string" && /^[\w.-]{1,64}$/.test(incoming) ?
      incoming :
      `req_${randomUUID().replaceAll("-", "")}`

  const subscribe = (body, requestId) =>
    guard(requestId, () => {
      const request = validateSubscribe(body)
      if (s.findFeed.get(request.feed) === undefined) {
        return error("resource_missing", `No feed is named "${request.feed}".`, requestId, { param: "feed" })
      }
      const id = request.website ?
        1 + Math.floor(Math.random() * (2 ** 31 - 1)) :
        subscribeTx.immediate(request.email, request.name, request.feed, Date.now()).id
      return json(200, {
        message:
          `Your subscription is pending: a confirmation e-mail has been sent to ${request.email}. Follow the link in it to confirm.`,
        subscription: { id, name: request.name, email: request.email, feed: request.feed }
      }, requestId)
    })

  // Bearer sk_... -> the client, by the key's SHA-256 (core/Clients.ts authenticate).
  const authenticate = (authorization) => {
    if (typeof authorization !== "string" || !authorization.startsWith("Bearer ")) return undefined
    return s.clientByKeyHash.get(sha256hex(authorization.slice(7)))
  }
  const unauthorized = (requestId) =>
    error("api_key_invalid", "Send a valid API key as `Authorization: Bearer sk_...`.", requestId)

  const renderRow = (r) => {
    const sender = r.sender_middle_name === null
      ? { first_name: r.sender_first_name, email: r.sender_email }
      : { first_name: r.sender_first_name, middle_name: r.sender_middle_name, email: r.sender_email }
    sender.card = {
      brand: r.card_brand,
      last4: r.card_last4,
      exp_month: Number(r.card_exp_month),
      exp_year: Number(r.card_exp_year),
      fingerprint: r.card_fingerprint
    }
    const recipient = r.recipient_middle_name === null
      ? { first_name: r.recipient_first_name, email: r.recipient_email, merchant_id: r.recipient_merchant_id }
      : {
        first_name: r.recipient_first_name,
        middle_name: r.recipient_middle_name,
        email: r.recipient_email,
        merchant_id: r.recipient_merchant_id
      }
    return {
      id: r.id,
      reference: r.reference,
      amount: formatAmount(BigInt(r.amount), r.currency),
      currency: r.currency,
      status: r.status,
      sender,
      recipient,
      ...(r.failure_code === null ?
        {} :
        { failure_code: r.failure_code, ...(r.decline_code === null ? {} : { decline_code: r.decline_code }) }),
      created: new Date(Number(r.created_at)).toISOString()
    }
  }

  const createTransfer = (client, body, requestId) =>
    guard(requestId, () => {
      const request = validateTransfer(body)
      const existing = s.byReference.get(client.id, request.reference)
      if (existing !== undefined) return duplicate(existing.id, requestId)
      const now = Date.now()
      const pan = request.account.pan
      const row = {
        id: randomId("tr_"),
        client_id: client.id,
        reference: request.reference,
        amount: request.amount,
        currency: request.currency,
        status: "pending",
        sender_first_name: request.sender.first_name,
        sender_middle_name: request.sender.middle_name ?? null,
        sender_email: request.sender.email,
        card_brand: brandOf(pan),
        card_last4: pan.slice(-4),
        card_exp_month: request.account.expiry.month,
        card_exp_year: request.account.expiry.year,
        card_fingerprint: `fp_${createHmac("sha256", fingerprintKey).update(pan).digest("base64url").slice(0, 32)}`,
        recipient_first_name: request.recipient.first_name,
        recipient_middle_name: request.recipient.middle_name ?? null,
        recipient_email: request.recipient.email,
        recipient_merchant_id: request.recipient.merchant_id,
        failure_code: null,
        decline_code: null,
        authorization_code: null,
        created_at: now
      }
      // Card checks in the documented order: Luhn, expiry (one write: the declined row), then the network
      // (two writes: the pending row reserves the reference before the card is charged, then the outcome).
      const local = !luhn(pan) ? "incorrect_number" : isExpired(request.account.expiry, now) ? "expired_card" : null
      if (local !== null) {
        row.status = "declined"
        row.failure_code = local
        const taken = insertTx.immediate(row)
        if (taken !== undefined) return duplicate(taken, requestId)
      } else {
        const taken = insertTx.immediate(row)
        if (taken !== undefined) return duplicate(taken, requestId)
        const outcome = authorize(row.id, pan, request.authenticated)
        if (outcome.approved) {
          row.status = "approved"
          row.authorization_code = outcome.authorizationCode
        } else {
          row.status = "declined"
          row.failure_code = outcome.code
          row.decline_code = outcome.declineCode ?? null
        }
        settleTx.immediate(row)
      }
      if (row.status === "declined") {
        return error(
          row.failure_code,
          cardErrorMessages[row.failure_code],
          requestId,
          row.decline_code === null ? {} : { decline_code: row.decline_code }
        )
      }
      return json(
        201,
        {
          payment_transfer: renderRow({ ...row, amount: String(row.amount) })
        },
        requestId,
        { location: `${baseUrl}/merchant/transfers/payment/${row.id}` }
      )
    })

  const duplicate = (existing, requestId) =>
    error("duplicate_reference", `A transfer with this reference exists: ${existing}.`, requestId, {
      param: "payment_transfer.reference"
    })

  // apps/http/Caching.ts: a strong ETag from the body's bytes, 304 when If-None-Match matches.
  const getTransfer = (client, id, ifNoneMatch, requestId) =>
    guard(requestId, () => {
      const row = transferIdPattern.test(id) ? s.get.get(client.id, id) : undefined
      if (row === undefined) return error("resource_missing", `No transfer has id ${id}.`, requestId, { param: "id" })
      const body = JSON.stringify({ payment_transfer: renderRow(row) })
      const etag = `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`
      const headers = {
        etag,
        "last-modified": new Date(Number(row.created_at)).toUTCString(),
        "cache-control": "private",
        "x-request-id": requestId
      }
      const matches = ifNoneMatch !== undefined &&
        (ifNoneMatch.trim() === "*" || ifNoneMatch.split(",").some((t) => t.trim().replace(/^W\//, "") === etag))
      if (matches) return { status: 304, headers, body: "" }
      return { status: 200, headers: { ...headers, "content-type": "application/json" }, body }
    })

  return {
    apiKey,
    clientId,
    requestIdOf,
    error,
    unauthorized,
    subscribe,
    authenticate,
    createTransfer,
    getTransfer,
    close: () => db.close()
  }
}

// Both references announce themselves as the service does, so the harness reads every target alike.
export const announce = (ref, port) => {
  console.log(`Created the first API client ${ref.clientId}. Its secret key, shown only now:\n  ${ref.apiKey}`)
  console.log(`Listening on http://0.0.0.0:${port}`)
}

export const mediaTypeOf = (contentType) => (contentType ?? "").split(";")[0].trim().toLowerCase()
export const acceptedBodies = ["application/json", "application/x-www-form-urlencoded"]
