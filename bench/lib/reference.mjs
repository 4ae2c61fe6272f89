// The reference servers' shared work, written the plain way: better-sqlite3, pg or mysql2 called directly, the
// same validation rules as core/ (the same regular expressions and checks, in the same order), the same rows,
// statements and response bodies as the service. Only the HTTP layer differs between bench/ref-node-http.mjs
// and bench/ref-fastify.mjs, so the pair measures what the framework costs on top of this work; ref-pg and
// ref-mariadb are bench/ref-node-http.mjs --postgres and --mariadb, the same code on PostgreSQL and MariaDB.
//
// Durability is the service's: SQLite in WAL, synchronous=FULL, foreign keys on, one BEGIN IMMEDIATE
// transaction per write; PostgreSQL with synchronous_commit on, MariaDB (InnoDB) with
// innodb_flush_log_at_trx_commit=1, one BEGIN ... COMMIT per write (an approved transfer is two: the pending row
// reserved, then settled, as core/payments/Transfers.ts does).
import Database from "better-sqlite3"
import { createHash, createHmac, randomBytes, randomUUID } from "node:crypto"
import { readFileSync } from "node:fs"
import { outboxStatements, startOutbox } from "./outbox.mjs"

export const MaxBodyBytes = 64 * 1024

// ISO 4217 minor units: read from the core's own table, so the two cannot drift apart.
const currencySource = readFileSync(new URL("../../core/payments/Currency.ts", import.meta.url), "utf8")
const exponentBlock = /const exponents[^{]*\{([\s\S]*?)\n\}/.exec(currencySource)
const exponents = new Map([...(exponentBlock?.[1] ?? "").matchAll(/\b([A-Z]{3}): (\d)\b/g)].map((m) => [
  m[1],
  Number(m[2])
]))
if (exponents.size < 150) {
  throw new Error(`could not read the currency table of core/payments/Currency.ts (${exponents.size})`)
}

// apps/http/pipeline/ErrorCatalog.ts: the type and status of every code the reference can answer with.
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
  idempotency_key_in_use: ["idempotency_error", 409],
  idempotency_key_reused: ["idempotency_error", 422],
  internal_error: ["api_error", 500],
  card_declined: ["card_error", 402],
  expired_card: ["card_error", 402],
  incorrect_number: ["card_error", 402],
  incorrect_cvc: ["card_error", 402],
  insufficient_funds: ["card_error", 402],
  processing_error: ["card_error", 402],
  authentication_required: ["card_error", 402]
}

// core/payments/CardNetwork.ts
const cardErrorMessages = {
  card_declined: "Your card was declined.",
  expired_card: "Your card has expired. Check the expiration date or use a different card.",
  incorrect_number: "Your card number is incorrect.",
  incorrect_cvc: "Your card's security code is incorrect.",
  insufficient_funds: "Your card has insufficient funds.",
  processing_error: "An error occurred while processing your card. Try again in a little bit.",
  authentication_required: "Your card was declined. This transaction requires authentication."
}

// ---- validation, after core/shared/Email.ts, core/subscriptions/Subscription.ts, core/subscriptions/Feed.ts, core/payments/Transfer.ts, core/payments/Card.ts,
// core/payments/Money.ts

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

// core/payments/Card.ts parseAccountUri: the messages never repeat the input.
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
  // core/payments/Transfers.ts: the amount's digits are checked once the currency is known.
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

// ---- storage: the service's tables (adapters/sql/Migrations.ts, in the SQLite or the PostgreSQL flavour
// of adapters/sql/Dialect.ts) and statements, behind a small driver: q(name, params) runs one prepared
// statement and gives its rows, tx(steps, ...args) runs steps in one transaction. better-sqlite3 answers at
// once; pg with a Promise. The request logic below is written once, as generators that yield what the
// driver returns (drive() resumes them synchronously or when a Promise settles), so the SQLite references
// stay fully synchronous and the PostgreSQL one does the same statements in the same order.

const schema = (T) => `
CREATE TABLE IF NOT EXISTS feeds (name ${T.key} PRIMARY KEY, title TEXT NOT NULL, created_at ${T.time} NOT NULL,
  updated_at ${T.time} NOT NULL, deleted_at ${T.time})${T.table};
CREATE TABLE IF NOT EXISTS subscriptions (id ${T.serial}, email TEXT NOT NULL,
  email_key ${T.key} NOT NULL, name TEXT NOT NULL, feed ${T.key} NOT NULL REFERENCES feeds (name),
  status ${T.key} NOT NULL CHECK (status IN ('pending', 'active', 'unsubscribed')),
  created_at ${T.time} NOT NULL, updated_at ${T.time} NOT NULL, UNIQUE (email_key, feed))${T.table};
CREATE TABLE IF NOT EXISTS subscription_tokens (hash ${T.key} PRIMARY KEY,
  subscription_id ${T.reference} NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
  purpose TEXT NOT NULL CHECK (purpose IN ('confirm', 'unsubscribe')), created_at ${T.time} NOT NULL,
  expires_at ${T.time}, used_at ${T.time})${T.table};
CREATE INDEX IF NOT EXISTS subscription_tokens_subscription ON subscription_tokens (subscription_id);
CREATE TABLE IF NOT EXISTS mail_outbox (id ${T.serial},
  kind TEXT NOT NULL CHECK (kind IN ('confirmation')),
  subscription_id ${T.reference} NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
  created_at ${T.time} NOT NULL, next_attempt_at ${T.time}, attempts INTEGER NOT NULL DEFAULT 0, sent_at ${T.time},
  last_error TEXT)${T.table};
CREATE INDEX IF NOT EXISTS mail_outbox_due ON mail_outbox (next_attempt_at)${T.dueOnly};
CREATE INDEX IF NOT EXISTS mail_outbox_subscription ON mail_outbox (subscription_id, created_at);
CREATE TABLE IF NOT EXISTS api_clients (id ${T.key} PRIMARY KEY, name TEXT NOT NULL, key_hash ${T.key} NOT NULL UNIQUE,
  created_at ${T.time} NOT NULL)${T.table};
CREATE TABLE IF NOT EXISTS transfers (id ${T.key} PRIMARY KEY,
  client_id ${T.key} NOT NULL REFERENCES api_clients (id), reference ${T.key} NOT NULL,
  amount ${T.money} NOT NULL CHECK (amount > 0), amount_refunded ${T.money} NOT NULL DEFAULT 0, currency TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'declined')),
  sender_first_name TEXT NOT NULL, sender_middle_name TEXT, sender_email TEXT NOT NULL,
  card_brand TEXT NOT NULL, card_last4 TEXT NOT NULL, card_exp_month INTEGER NOT NULL,
  card_exp_year INTEGER NOT NULL, card_fingerprint TEXT NOT NULL, recipient_first_name TEXT NOT NULL,
  recipient_middle_name TEXT, recipient_email TEXT NOT NULL, recipient_merchant_id TEXT NOT NULL,
  failure_code TEXT, decline_code TEXT, authorization_code TEXT, created_at ${T.time} NOT NULL,
  UNIQUE (client_id, reference))${T.table};
CREATE INDEX IF NOT EXISTS transfers_client_created ON transfers (client_id, created_at, id);
CREATE TABLE IF NOT EXISTS idempotency_keys (client_id ${T.key} NOT NULL REFERENCES api_clients (id),
  idempotency_key ${T.key} NOT NULL, request_hash ${T.key} NOT NULL, started_at ${T.time} NOT NULL,
  response_status INTEGER, response_body TEXT, completed_at ${T.time},
  PRIMARY KEY (client_id, idempotency_key))${T.table};
`

// adapters/sql/Dialect.ts
const textKeys = { key: "TEXT", table: "", dueOnly: " WHERE sent_at IS NULL" }
const dialects = {
  sqlite: {
    forUpdate: "",
    types: {
      ...textKeys,
      serial: "INTEGER PRIMARY KEY AUTOINCREMENT",
      reference: "INTEGER",
      money: "INTEGER",
      time: "INTEGER"
    }
  },
  pg: {
    forUpdate: "FOR UPDATE",
    types: {
      ...textKeys,
      serial: "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
      reference: "BIGINT",
      money: "BIGINT",
      time: "TIMESTAMPTZ"
    }
  },
  // No whole TEXT column in a key or index, no partial index; InnoDB, utf8mb4, binary collation; times in
  // BIGINT milliseconds.
  mysql: {
    forUpdate: "FOR UPDATE",
    types: {
      key: "VARCHAR(255)",
      table: " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
      dueOnly: "",
      serial: "BIGINT AUTO_INCREMENT PRIMARY KEY",
      reference: "BIGINT",
      money: "BIGINT",
      time: "BIGINT"
    }
  }
}

const transferColumns = `id, client_id, reference, CAST(amount AS TEXT) AS amount,
  CAST(amount_refunded AS TEXT) AS amount_refunded, currency, status,
  sender_first_name, sender_middle_name, sender_email, card_brand, card_last4, card_exp_month, card_exp_year,
  card_fingerprint, recipient_first_name, recipient_middle_name, recipient_email, recipient_merchant_id,
  failure_code, decline_code, authorization_code, created_at`
const transferFields = transferColumns.replace(/CAST\((\w+) AS TEXT\) AS \w+/g, "$1").split(",").map((c) => c.trim())
const subscriptionColumns = "id, name, email, feed, status, created_at, updated_at"

// The statements the service runs for the benchmarked requests (adapters/sql/SqlSubscriptionStore.ts,
// adapters/sql/SqlTransferStore.ts), `?` placeholders (numbered $1... for PostgreSQL).
const statements = ({ forUpdate }, driver) => ({
  ...outboxStatements[driver],
  ...outboxStatements.both,
  findFeed: "SELECT name, title, created_at, updated_at FROM feeds WHERE name = ? AND deleted_at IS NULL",
  insertSubscription: `INSERT INTO subscriptions (email, email_key, name, feed, status, created_at,
    updated_at) VALUES (?, ?, ?, ?, 'pending', ?, ?) ON CONFLICT (email_key, feed) DO NOTHING
    RETURNING ${subscriptionColumns}`,
  existingSubscription: `SELECT id, status FROM subscriptions WHERE email_key = ? AND feed = ? ${forUpdate}`,
  recentMails: "SELECT count(*) AS n FROM mail_outbox WHERE subscription_id = ? AND created_at > ?",
  updateSubscription: `UPDATE subscriptions SET status = ?, updated_at = ?,
    name = CASE WHEN ? = 1 THEN ? ELSE name END WHERE id = ? RETURNING ${subscriptionColumns}`,
  insertOutbox: `INSERT INTO mail_outbox (kind, subscription_id, created_at, next_attempt_at)
    VALUES ('confirmation', ?, ?, ?)`,
  clientByKeyHash: "SELECT id, name FROM api_clients WHERE key_hash = ?",
  byReference: `SELECT ${transferColumns} FROM transfers WHERE client_id = ? AND reference = ?`,
  insertTransfer: `INSERT INTO transfers (${transferFields.join(", ")})
    VALUES (${transferFields.map(() => "?").join(", ")})
    ON CONFLICT (client_id, reference) DO NOTHING RETURNING id`,
  existingReference: "SELECT id FROM transfers WHERE client_id = ? AND reference = ?",
  settle: `UPDATE transfers SET status = ?, failure_code = ?, decline_code = ?, authorization_code = ?
    WHERE id = ? AND status = 'pending'`,
  get: `SELECT ${transferColumns} FROM transfers WHERE client_id = ? AND id = ?`,
  beginKey: `INSERT INTO idempotency_keys (client_id, idempotency_key, request_hash, started_at)
    VALUES (?, ?, ?, ?) ON CONFLICT (client_id, idempotency_key) DO NOTHING RETURNING client_id`,
  lockKey: `SELECT request_hash, started_at, response_status, response_body FROM idempotency_keys
    WHERE client_id = ? AND idempotency_key = ? ${forUpdate}`,
  restartKey: "UPDATE idempotency_keys SET started_at = ? WHERE client_id = ? AND idempotency_key = ?",
  // With the settle (or the declined row), in its transaction.
  completeKeyWithTransfer: `UPDATE idempotency_keys SET response_status = ?, response_body = ?, completed_at = ?
    WHERE client_id = ? AND idempotency_key = ?`,
  // completeIdempotent: the 409 of a duplicate reference, on its own.
  completeKey: `UPDATE idempotency_keys SET response_status = ?, response_body = ?
    WHERE client_id = ? AND idempotency_key = ?`,
  releaseKey: `DELETE FROM idempotency_keys WHERE client_id = ? AND idempotency_key = ?
    AND response_status IS NULL`
})

const isPromise = (v) => v !== null && typeof v === "object" && typeof v.then === "function"

// Runs a generator to its end: a yielded plain value goes straight back in, a yielded Promise resumes it once
// settled. Synchronous all the way when nothing yields a Promise (better-sqlite3).
export const drive = (gen, input, failed = false) => {
  for (;;) {
    const step = failed ? gen.throw(input) : gen.next(input)
    if (step.done) return step.value
    if (isPromise(step.value)) {
      return step.value.then((v) => drive(gen, v), (e) => drive(gen, e, true))
    }
    input = step.value
    failed = false
  }
}
// Where a reference keeps its rows: with --postgres or --mariadb in `argv`, the database at DATABASE_URL (which
// must be of that kind); else the SQLite file DB_FILE, or `file`.
export const storageOf = (argv, file) => {
  const database = [["--postgres", /^postgres(ql)?:/, "postgres://..."], [
    "--mariadb",
    /^(mysql|mariadb):/,
    "mysql://..."
  ]]
    .find(([flag]) => argv.includes(flag))
  if (database === undefined) return { filename: process.env.DB_FILE ?? file }
  if (!database[1].test(process.env.DATABASE_URL ?? "")) {
    throw new Error(`${database[0]} needs DATABASE_URL=${database[2]}`)
  }
  return { databaseUrl: process.env.DATABASE_URL }
}

// f(v), now or when v settles.
export const when = (v, f) => (isPromise(v) ? v.then(f) : f(v))

const sqliteDriver = (filename) => {
  const db = new Database(filename)
  db.pragma("journal_mode = WAL")
  db.pragma("synchronous = FULL")
  db.pragma("foreign_keys = ON")
  db.pragma("busy_timeout = 5000")
  db.exec(schema(dialects.sqlite.types))
  const prepared = Object.fromEntries(
    Object.entries(statements(dialects.sqlite, "sqlite")).map(([name, text]) => [name, db.prepare(text)])
  )
  const q = (name, params) => {
    const st = prepared[name]
    if (st.reader) return st.all(params)
    st.run(params)
    return []
  }
  const inTransaction = db.transaction((steps, args) => {
    const result = drive(steps(q, ...args))
    if (isPromise(result)) throw new Error("a SQLite transaction step yielded a Promise")
    return result
  })
  return {
    kind: "sqlite",
    time: (ms) => ms,
    q,
    // BEGIN IMMEDIATE, as the service's SQLite client begins every transaction.
    tx: (steps, ...args) => inTransaction.immediate(steps, args),
    setup: (sql, params) => db.prepare(sql).run(params),
    close: () => db.close()
  }
}

// One transaction on a pooled connection (pg or mysql2): BEGIN, the steps over q, COMMIT (ROLLBACK on a failure),
// the connection given back.
const transactionOn = async (connection, q, steps, args) => {
  try {
    await connection.query("BEGIN")
    const result = await drive(steps(q, ...args))
    await connection.query("COMMIT")
    return result
  } catch (e) {
    await connection.query("ROLLBACK").catch(() => {})
    throw e
  } finally {
    connection.release()
  }
}

// Plain pg: a Pool of 10 (the service's maxConnections), named (prepared) statements, one BEGIN ... COMMIT
// per transaction on a connection of its own, synchronous_commit checked at start as the service does.
const pgDriver = async (databaseUrl) => {
  const { default: pg } = await import("pg")
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 10, application_name: "paysub-ref-pg" })
  pool.on("error", (e) => console.error("pg pool:", e.message))
  const { rows: [setting] } = await pool.query("SHOW synchronous_commit")
  if (setting?.synchronous_commit !== "on") {
    console.warn(`synchronous_commit is ${setting?.synchronous_commit}; set it to on for durable commits`)
  }
  console.log(`ref-pg: synchronous_commit=${setting?.synchronous_commit}`)
  await pool.query(schema(dialects.pg.types))
  const prepared = Object.fromEntries(
    Object.entries(statements(dialects.pg, "pg")).map(([name, text]) => {
      let n = 0
      return [name, text.replace(/\?/g, () => `$${++n}`)]
    })
  )
  const on = (client) => (name, values) => client.query({ name, text: prepared[name], values }).then((r) => r.rows)
  const q = on(pool)
  return {
    kind: "pg",
    time: (ms) => new Date(ms),
    q,
    tx: async (steps, ...args) => {
      const client = await pool.connect()
      return transactionOn(client, on(client), steps, args)
    },
    setup: async (sql, params) => {
      let n = 0
      await pool.query(sql.replace(/\?/g, () => `$${++n}`), params)
    },
    close: () => pool.end()
  }
}

// Plain mysql2 on MariaDB: a pool of 10, prepared statements (execute), InnoDB, one BEGIN ... COMMIT per
// transaction on a connection of its own, READ COMMITTED as the service's transactions run (set once per
// connection), innodb_flush_log_at_trx_commit checked at start. What MariaDB says otherwise: an INSERT that
// PostgreSQL writes ON CONFLICT DO NOTHING is a plain INSERT whose duplicate key (1062) answers no rows (InnoDB
// undoes that statement only); no UPDATE ... RETURNING, so the updated row is read back by its id; a statement
// with a list (the outbox's batches) goes through query(), which expands it. A deadlock or a lock wait time-out
// runs the transaction again, as the service does.
const mysqlDriver = async (databaseUrl) => {
  const { default: mysql } = await import("mysql2/promise")
  const url = new URL(databaseUrl)
  const pool = mysql.createPool({
    host: url.hostname,
    port: Number(url.port || 3306),
    user: decodeURIComponent(url.username) || "root",
    password: decodeURIComponent(url.password),
    database: decodeURIComponent(url.pathname.slice(1)),
    connectionLimit: 10,
    maxIdle: 10,
    charset: "utf8mb4_bin"
  })
  pool.pool.on("connection", (c) => c.query("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED"))
  const [[setting]] = await pool.query("SELECT @@innodb_flush_log_at_trx_commit AS flush")
  if (Number(setting.flush) !== 1) {
    console.warn(`innodb_flush_log_at_trx_commit is ${setting.flush}; set it to 1 for durable commits`)
  }
  console.log(`ref-mariadb: innodb_flush_log_at_trx_commit=${setting.flush}`)
  const onConflict = /\s*ON CONFLICT(?: \([^)]*\))? DO NOTHING/
  const translate = (text) => ({
    text: text.replace(onConflict, "").replaceAll(" AS TEXT)", " AS CHAR)"),
    orNothing: onConflict.test(text)
  })
  for (const table of schema(dialects.mysql.types).split(";").map((t) => t.trim()).filter(Boolean)) {
    await pool.query(table)
  }
  const prepared = Object.fromEntries(
    Object.entries(statements(dialects.mysql, "mysql")).map(([name, text]) => [name, translate(text)])
  )
  prepared.updateSubscription.text = prepared.updateSubscription.text.replace(/\s*RETURNING[\s\S]*$/, "")
  prepared.updateSubscription.then = `SELECT ${subscriptionColumns} FROM subscriptions WHERE id = ?`
  const run = async (on, { text, orNothing }, params) => {
    try {
      const [rows] = params.some(Array.isArray) ? await on.query(text, params) : await on.execute(text, params)
      return Array.isArray(rows) ? rows : []
    } catch (e) {
      if (orNothing && e.errno === 1062) return []
      throw e
    }
  }
  const on = (connection) => async (name, params) => {
    const st = prepared[name]
    const rows = await run(connection, st, params)
    return st.then === undefined ? rows : run(connection, { text: st.then }, [params.at(-1)])
  }
  const once = async (steps, args) => {
    const connection = await pool.getConnection()
    return transactionOn(connection, on(connection), steps, args)
  }
  return {
    kind: "mysql",
    time: (ms) => ms,
    q: on(pool),
    tx: async (steps, ...args) => {
      for (let attempt = 1;; attempt++) {
        try {
          return await once(steps, args)
        } catch (e) {
          if (![1213, 1205].includes(e.errno) || attempt >= 100) throw e
        }
      }
    },
    setup: (sql, params) => run(pool, translate(sql), params),
    close: () => pool.end()
  }
}

// A time column as read back: a Date from PostgreSQL, a number from SQLite and MariaDB (adapters/sql/Dialect.ts).
const millisOf = (v) => (v instanceof Date ? v.getTime() : Number(v))

const MailThrottleWindowMs = 24 * 3600 * 1000
const MailThrottleMax = 3

// apps/http/transfers/TransfersHandlers.ts and core/payments/TransferStore.ts: Idempotency-Key.
const IdempotencyLeaseMs = 60_000
const idempotencyKeyPattern = /^[\x21-\x7E]{1,255}$/
// Same parameters, same hash, whatever the key order or white space of the JSON.
const canonical = (value) =>
  Array.isArray(value)
    ? `[${value.map(canonical).join(",")}]`
    : value !== null && typeof value === "object"
    ? `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(",")}}`
    : JSON.stringify(value)

const sha256hex = (s) => createHash("sha256").update(s).digest("hex")

// ---- the transactions (generators over a driver's q), as the service's stores run them

// adapters/sql/SqlSubscriptionStore.ts subscribe: insert first, else lock and decide; the outbox row in
// the same transaction.
function* subscribeSteps(q, time, email, name, feed, now) {
  const key = email.toLowerCase()
  const [inserted] = yield q("insertSubscription", [email, key, name, feed, time(now), time(now)])
  let subscription = inserted
  let queue = true
  if (inserted === undefined) {
    const [existing] = yield q("existingSubscription", [key, feed])
    const [{ n: mails }] = yield q("recentMails", [existing.id, time(now - MailThrottleWindowMs)])
    const status = existing.status === "active" ? "active" : "pending"
    queue = status === "pending" && Number(mails) < MailThrottleMax
    ;[subscription] = yield q("updateSubscription", [
      status,
      time(now),
      status === "pending" ? 1 : 0,
      name,
      existing.id
    ])
  }
  if (queue) yield q("insertOutbox", [subscription.id, time(now), time(now)])
  return subscription
}

// SqlTransferStore insert (reserve, record): the id of the transfer that holds the reference, if taken.
function* insertSteps(q, row, completion) {
  const inserted = yield q("insertTransfer", transferFields.map((f) => row[f]))
  if (inserted.length === 0) return (yield q("existingReference", [row.client_id, row.reference]))[0].id
  if (completion !== undefined) yield* completeSteps(q, row, completion)
  return undefined
}
function* completeSteps(q, row, completion) {
  yield q("completeKeyWithTransfer", [
    completion.response.status,
    completion.response.body,
    row.created_at,
    row.client_id,
    completion.key
  ])
}
function* settleSteps(q, row, completion) {
  yield q("settle", [row.status, row.failure_code, row.decline_code, row.authorization_code, row.id])
  if (completion !== undefined) yield* completeSteps(q, row, completion)
}

// SqlTransferStore beginIdempotent: insert first; an existing record is locked while it is judged.
function* beginIdempotentSteps(q, time, clientId, key, hash, now) {
  const inserted = yield q("beginKey", [clientId, key, hash, time(now)])
  if (inserted.length > 0) return { tag: "Started" }
  const [r] = yield q("lockKey", [clientId, key])
  if (r.request_hash !== hash) return { tag: "Mismatch" }
  if (r.response_status !== null) {
    return { tag: "Replay", response: { status: Number(r.response_status), body: r.response_body } }
  }
  if (millisOf(r.started_at) + IdempotencyLeaseMs <= now) {
    yield q("restartKey", [time(now), clientId, key])
    return { tag: "Started" }
  }
  return { tag: "InProgress" }
}

// The work behind both references' routes. `filename` (better-sqlite3) or `databaseUrl` (pg, or mysql2 for
// mysql://); a Promise of the reference. Its functions answer now (SQLite) or with a Promise (pg, mysql2): see
// when(). With `smtpUrl`, the
// confirmation mails are sent (bench/lib/outbox.mjs).
export const makeReference = async ({ filename, databaseUrl, baseUrl, smtpUrl }) => {
  const db = databaseUrl === undefined
    ? sqliteDriver(filename)
    : /^(mysql|mariadb):/.test(databaseUrl)
    ? await mysqlDriver(databaseUrl)
    : await pgDriver(databaseUrl)
  const { q, tx, time } = db
  const started = Date.now()
  await db.setup(
    "INSERT INTO feeds (name, title, created_at, updated_at) VALUES ('default', 'Newsletter', ?, ?) ON CONFLICT DO NOTHING",
    [time(started), time(started)]
  )

  // The first API client, as the sandbox service makes it: only the key's SHA-256 is stored.
  const clientId = randomId("cl_")
  const apiKey = `sk_${randomBytes(32).toString("base64url")}`
  await db.setup("INSERT INTO api_clients (id, name, key_hash, created_at) VALUES (?, 'sandbox', ?, ?)", [
    clientId,
    sha256hex(apiKey),
    time(started)
  ])
  const fingerprintKey = randomBytes(32).toString("base64url")
  const fingerprint = (s) => `fp_${createHmac("sha256", fingerprintKey).update(s).digest("base64url").slice(0, 32)}`
  const outbox = smtpUrl === undefined ? undefined : startOutbox({ db, smtpUrl, baseUrl })

  const jsonHeaders = (requestId, headers) => ({
    "content-type": "application/json",
    "x-request-id": requestId,
    ...headers
  })
  const json = (status, value, requestId, headers = {}) => ({
    status,
    headers: jsonHeaders(requestId, headers),
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

  // Runs a request's generator; validation failures and faults become answers, now or when it settles.
  const guard = (requestId, gen) => {
    const fail = (e) => {
      if (e instanceof Invalid) return fromInvalid(e, requestId)
      console.error(e)
      return error("internal_error", "An internal error occurred.", requestId)
    }
    try {
      const r = drive(gen)
      return isPromise(r) ? r.catch(fail) : r
    } catch (e) {
      return fail(e)
    }
  }

  const requestIdOf = (incoming) =>
    typeof incoming === "string" && /^[\w.-]{1,64}$/.test(incoming) ?
      incoming :
      `req_${randomUUID().replaceAll("-", "")}`

  function* subscribeRequest(body, requestId) {
    const request = validateSubscribe(body)
    if ((yield q("findFeed", [request.feed])).length === 0) {
      return error("resource_missing", "No feed has this name.", requestId, { param: "feed" })
    }
    const id = request.website ?
      1 + Math.floor(Math.random() * (2 ** 31 - 1)) :
      Number((yield tx(subscribeSteps, time, request.email, request.name, request.feed, Date.now())).id)
    if (!request.website) outbox?.wake()
    return json(200, {
      message:
        `Your subscription is pending: a confirmation e-mail has been sent to ${request.email}. Follow the link in it to confirm.`,
      subscription: { id, name: request.name, email: request.email, feed: request.feed }
    }, requestId)
  }
  const subscribe = (body, requestId) => guard(requestId, subscribeRequest(body, requestId))

  // Bearer sk_... -> the client, by the key's SHA-256 (core/payments/Clients.ts authenticate): the client or
  // undefined, now or later.
  const authenticate = (authorization) => {
    if (typeof authorization !== "string" || !authorization.startsWith("Bearer ")) return undefined
    return when(q("clientByKeyHash", [sha256hex(authorization.slice(7))]), (rows) => rows[0])
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
      amount_refunded: formatAmount(BigInt(r.amount_refunded), r.currency),
      refunded: r.amount_refunded === r.amount,
      status: r.status,
      sender,
      recipient,
      ...(r.failure_code === null ?
        {} :
        { failure_code: r.failure_code, ...(r.decline_code === null ? {} : { decline_code: r.decline_code }) }),
      created: new Date(millisOf(r.created_at)).toISOString()
    }
  }

  // A stored answer (status and body) as sent: first or replayed (apps/http/transfers/TransfersHandlers.ts respond).
  const respond = (stored, requestId, replayed) => {
    const headers = replayed ? { "idempotent-replayed": "true" } : {}
    if (stored.status === 201) {
      headers.location = `${baseUrl}/merchant/transfers/payment/${JSON.parse(stored.body).payment_transfer.id}`
    }
    return { status: stored.status, headers: jsonHeaders(requestId, headers), body: stored.body }
  }
  const duplicate = (existing, requestId) =>
    error("duplicate_reference", `A transfer with this reference exists: ${existing}.`, requestId, {
      param: "payment_transfer.reference"
    })

  // core/payments/Transfers.ts submit, with apps/http/transfers/TransfersHandlers.ts around it for an Idempotency-Key: the key's
  // record is taken first in a transaction of its own; the answer is written with the transfer (with the
  // settle, or with the declined row) in the same transaction; a duplicate reference's 409 is kept after.
  function* transferRequest(client, body, requestId, key) {
    if (key !== undefined && !idempotencyKeyPattern.test(key)) {
      throw new Invalid("parameter_invalid", "Idempotency-Key is 1-255 printable ASCII characters.", "idempotency-key")
    }
    const request = validateTransfer(body)
    if (key !== undefined) {
      const hash = fingerprint(canonical(body))
      const start = yield tx(beginIdempotentSteps, time, client.id, key, hash, Date.now())
      if (start.tag === "Replay") return respond(start.response, requestId, true)
      if (start.tag === "Mismatch") {
        return error(
          "idempotency_key_reused",
          "This Idempotency-Key was used with a different request body.",
          requestId
        )
      }
      if (start.tag === "InProgress") {
        return error(
          "idempotency_key_in_use",
          "A request with this Idempotency-Key is still being processed.",
          requestId
        )
      }
    }
    try {
      return yield* submit(client, request, requestId, key)
    } catch (e) {
      // Requests that did not get to a lasting answer free their key, so that a retry can run.
      if (key !== undefined) yield q("releaseKey", [client.id, key])
      throw e
    }
  }

  function* submit(client, request, requestId, key) {
    const conflict = function*(existing) {
      const answer = duplicate(existing, requestId)
      if (key !== undefined) yield q("completeKey", [answer.status, answer.body, client.id, key])
      return answer
    }
    const [existing] = yield q("byReference", [client.id, request.reference])
    if (existing !== undefined) return yield* conflict(existing.id)
    const now = Date.now()
    const pan = request.account.pan
    const row = {
      id: randomId("tr_"),
      client_id: client.id,
      reference: request.reference,
      amount: request.amount,
      amount_refunded: 0n,
      currency: request.currency,
      status: "pending",
      sender_first_name: request.sender.first_name,
      sender_middle_name: request.sender.middle_name ?? null,
      sender_email: request.sender.email,
      card_brand: brandOf(pan),
      card_last4: pan.slice(-4),
      card_exp_month: request.account.expiry.month,
      card_exp_year: request.account.expiry.year,
      card_fingerprint: fingerprint(pan),
      recipient_first_name: request.recipient.first_name,
      recipient_middle_name: request.recipient.middle_name ?? null,
      recipient_email: request.recipient.email,
      recipient_merchant_id: request.recipient.merchant_id,
      failure_code: null,
      decline_code: null,
      authorization_code: null,
      created_at: time(now)
    }
    // The answer to keep for the key (apps/http/transfers/TransfersHandlers.ts outcome).
    const outcome = () =>
      row.status === "declined"
        ? error(
          row.failure_code,
          cardErrorMessages[row.failure_code],
          requestId,
          { ...(row.decline_code === null ? {} : { decline_code: row.decline_code }), transfer: row.id }
        )
        : {
          status: 201,
          body: JSON.stringify({
            payment_transfer: renderRow({ ...row, amount: String(row.amount), amount_refunded: "0" })
          })
        }
    const completion = () => (key === undefined ? undefined : { key, response: outcome() })
    // Card checks in the documented order: Luhn, expiry (one write: the declined row), then the network
    // (two writes: the pending row reserves the reference before the card is charged, then the outcome).
    const local = !luhn(pan) ? "incorrect_number" : isExpired(request.account.expiry, now) ? "expired_card" : null
    if (local !== null) {
      row.status = "declined"
      row.failure_code = local
      const taken = yield tx(insertSteps, row, completion())
      if (taken !== undefined) return yield* conflict(taken)
    } else {
      const taken = yield tx(insertSteps, row, undefined)
      if (taken !== undefined) return yield* conflict(taken)
      const authorization = authorize(row.id, pan, request.authenticated)
      if (authorization.approved) {
        row.status = "approved"
        row.authorization_code = authorization.authorizationCode
      } else {
        row.status = "declined"
        row.failure_code = authorization.code
        row.decline_code = authorization.declineCode ?? null
      }
      yield tx(settleSteps, row, completion())
    }
    return respond(outcome(), requestId, false)
  }

  const createTransfer = (client, body, requestId, key) =>
    guard(requestId, transferRequest(client, body, requestId, key))

  // apps/http/pipeline/Caching.ts: a strong ETag from the body's bytes, 304 when If-None-Match matches; no Last-Modified
  // (a transfer keeps no time of its last change).
  function* getRequest(client, id, ifNoneMatch, requestId) {
    const [row] = transferIdPattern.test(id) ? yield q("get", [client.id, id]) : []
    if (row === undefined) return error("resource_missing", "No transfer has this id.", requestId, { param: "id" })
    const body = JSON.stringify({ payment_transfer: renderRow(row) })
    const etag = `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`
    const headers = {
      etag,
      "cache-control": "private",
      "x-request-id": requestId
    }
    const matches = ifNoneMatch !== undefined &&
      (ifNoneMatch.trim() === "*" || ifNoneMatch.split(",").some((t) => t.trim().replace(/^W\//, "") === etag))
    if (matches) return { status: 304, headers, body: "" }
    return { status: 200, headers: { ...headers, "content-type": "application/json" }, body }
  }
  const getTransfer = (client, id, ifNoneMatch, requestId) =>
    guard(requestId, getRequest(client, id, ifNoneMatch, requestId))

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
    close: async () => {
      await outbox?.stop()
      await db.close()
    }
  }
}

// The references announce themselves as the service does, so the harness reads every target alike.
export const announce = (ref, port) => {
  console.log(`Created the first API client ${ref.clientId}. Its secret key, shown only now:\n  ${ref.apiKey}`)
  console.log(`Listening on http://0.0.0.0:${port}`)
}

export const mediaTypeOf = (contentType) => (contentType ?? "").split(";")[0].trim().toLowerCase()
export const acceptedBodies = ["application/x-www-form-urlencoded", "application/json"]
