// Before it is timed, every target answers the same small set of requests: the benchmarked ones and the
// validation errors around them. The service's answers are the baseline; a reference whose status, error
// code, type, param or body shape differs from the service's is reported, so "does the same work" is
// checked rather than assumed.
import { transferBody } from "./harness.mjs"

const form = "application/x-www-form-urlencoded"
const json = "application/json"

const transfer = (mutate, reference) => {
  const body = JSON.parse(transferBody(reference))
  mutate(body.payment_transfer)
  return JSON.stringify(body)
}

// [name, (ctx, unique, state) => request]; `state` carries values from one case to a later one (an
// Idempotency-Key and its body). A request with `sameAs` records whether its body is the named case's, byte
// for byte.
export const cases = [
  [
    "subscribe form",
    (_c, u) => ({ path: "/subscribe", type: form, body: `name=Ann+Example&email=${u()}%40example.com` })
  ],
  [
    "subscribe json",
    (_c, u) => ({ path: "/subscribe", type: json, body: JSON.stringify({ name: "Ann", email: `${u()}@example.com` }) })
  ],
  [
    "subscribe again (same address)",
    () => ({ path: "/subscribe", type: form, body: "name=Again&email=again%40example.com" })
  ],
  [
    "subscribe again (same address, 2)",
    () => ({ path: "/subscribe", type: form, body: "name=Again&email=Again%40Example.com" })
  ],
  ["subscribe email invalid", () => ({ path: "/subscribe", type: form, body: "name=Ann&email=not-an-address" })],
  ["subscribe name missing", (_c, u) => ({ path: "/subscribe", type: form, body: `email=${u()}%40example.com` })],
  [
    "subscribe name blank",
    (_c, u) => ({ path: "/subscribe", type: form, body: `name=+++&email=${u()}%40example.com` })
  ],
  [
    "subscribe unknown feed",
    (_c, u) => ({ path: "/subscribe", type: form, body: `name=A&email=${u()}%40example.com&feed=nope` })
  ],
  ["subscribe text/plain", () => ({ path: "/subscribe", type: "text/plain", body: "hello" })],
  ["subscribe malformed json", () => ({ path: "/subscribe", type: json, body: "{\"name\":" })],
  ["transfer approved", (_c, u) => ({ path: "/merchant/transfers/payment", body: transfer(() => {}, u()) })],
  ["transfer reference once", () => ({ path: "/merchant/transfers/payment", body: transfer(() => {}, "conf-dup") })],
  [
    "transfer reference twice (409)",
    () => ({ path: "/merchant/transfers/payment", body: transfer(() => {}, "conf-dup") })
  ],
  ["transfer expired card", (_c, u) => ({
    path: "/merchant/transfers/payment",
    body: transfer((t) => (t.sender_account_uri = "pan:4242424242424242;exp=2020-01;cvc=123"), u())
  })],
  ["transfer Luhn failure", (_c, u) => ({
    path: "/merchant/transfers/payment",
    body: transfer((t) => (t.sender_account_uri = "pan:4242424242424241;exp=2099-01;cvc=123"), u())
  })],
  ["transfer sandbox decline", (_c, u) => ({
    path: "/merchant/transfers/payment",
    body: transfer((t) => (t.sender_account_uri = "pan:4000000000000002;exp=2099-01;cvc=123"), u())
  })],
  ["transfer sandbox decline (uri order)", (_c, u) => ({
    path: "/merchant/transfers/payment",
    body: transfer((t) => (t.sender_account_uri = "pan:4000000000000002;cvc=123;exp=2099-01"), u())
  })],
  [
    "transfer amount 3 decimals",
    (_c, u) => ({ path: "/merchant/transfers/payment", body: transfer((t) => (t.amount = "12.345"), u()) })
  ],
  ["transfer amount JPY fraction", (_c, u) => ({
    path: "/merchant/transfers/payment",
    body: transfer((t) => ((t.amount = "12.5"), (t.currency = "JPY")), u())
  })],
  [
    "transfer amount number",
    (_c, u) => ({ path: "/merchant/transfers/payment", body: transfer((t) => (t.amount = 12.34), u()) })
  ],
  [
    "transfer amount zero",
    (_c, u) => ({ path: "/merchant/transfers/payment", body: transfer((t) => (t.amount = "0.00"), u()) })
  ],
  [
    "transfer currency lower case",
    (_c, u) => ({ path: "/merchant/transfers/payment", body: transfer((t) => (t.currency = "usd"), u()) })
  ],
  ["transfer card number short", (_c, u) => ({
    path: "/merchant/transfers/payment",
    body: transfer((t) => (t.sender_account_uri = "pan:4242;exp=2099-01;cvc=123"), u())
  })],
  [
    "transfer sender email",
    (_c, u) => ({ path: "/merchant/transfers/payment", body: transfer((t) => (t.sender.email = "x@"), u()) })
  ],
  [
    "transfer recipient missing",
    (_c, u) => ({ path: "/merchant/transfers/payment", body: transfer((t) => delete t.recipient, u()) })
  ],
  ["transfer merchant_id invalid", (_c, u) => ({
    path: "/merchant/transfers/payment",
    body: transfer((t) => (t.recipient.merchant_id = "has space"), u())
  })],
  [
    "transfer reference with space",
    () => ({ path: "/merchant/transfers/payment", body: transfer(() => {}, "has space") })
  ],
  ["transfer authentication_value invalid", (_c, u) => ({
    path: "/merchant/transfers/payment",
    body: transfer((t) => (t.authentication_value = "ucaf:***"), u())
  })],
  [
    "transfer wrong API key",
    (_c, u) => ({ path: "/merchant/transfers/payment", key: "sk_wrong", body: transfer(() => {}, u()) })
  ],
  ["transfer as a form", () => ({ path: "/merchant/transfers/payment", type: form, body: "a=b" })],
  ["transfer malformed json", () => ({ path: "/merchant/transfers/payment", body: "{\"payment_transfer\":" })],
  ["transfer Idempotency-Key", (_c, u, st) => {
    st.reference = u()
    st.key = `key-${st.reference}`
    st.body = transfer(() => {}, st.reference)
    return { path: "/merchant/transfers/payment", idempotencyKey: st.key, body: st.body }
  }],
  ["transfer Idempotency-Key replay", (_c, _u, st) => ({
    path: "/merchant/transfers/payment",
    idempotencyKey: st.key,
    body: st.body,
    sameAs: "transfer Idempotency-Key"
  })],
  ["transfer Idempotency-Key replay, keys reordered", (_c, _u, st) => {
    const body = JSON.parse(st.body)
    const t = body.payment_transfer
    const reordered = Object.fromEntries(Object.entries(t).reverse())
    return {
      path: "/merchant/transfers/payment",
      idempotencyKey: st.key,
      body: JSON.stringify({ payment_transfer: reordered }, null, 1),
      sameAs: "transfer Idempotency-Key"
    }
  }],
  ["transfer Idempotency-Key other body (422)", (_c, u, st) => ({
    path: "/merchant/transfers/payment",
    idempotencyKey: st.key,
    body: transfer(() => {}, u())
  })],
  ["transfer Idempotency-Key declined", (_c, u, st) => {
    st.declinedKey = `key-${u()}`
    st.declinedBody = transfer((t) => (t.sender_account_uri = "pan:4000000000000002;exp=2099-01;cvc=123"), u())
    return { path: "/merchant/transfers/payment", idempotencyKey: st.declinedKey, body: st.declinedBody }
  }],
  ["transfer Idempotency-Key declined replay", (_c, _u, st) => ({
    path: "/merchant/transfers/payment",
    idempotencyKey: st.declinedKey,
    body: st.declinedBody,
    sameAs: "transfer Idempotency-Key declined"
  })],
  ["transfer Idempotency-Key invalid", (_c, u) => ({
    path: "/merchant/transfers/payment",
    idempotencyKey: "has space",
    body: transfer(() => {}, u())
  })],
  ["get transfer", (c) => ({ method: "GET", path: `/merchant/transfers/payment/${c.transferId}` })],
  [
    "get transfer If-None-Match",
    (c) => ({ method: "GET", path: `/merchant/transfers/payment/${c.transferId}`, inm: c.etag })
  ],
  ["get unknown transfer", () => ({ method: "GET", path: "/merchant/transfers/payment/tr_000000000000000000000000" })]
]

const shape = (v) =>
  v === null
    ? "null"
    : Array.isArray(v)
    ? [v.length === 0 ? "empty" : shape(v[0])]
    : typeof v === "object"
    ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, shape(v[k])]))
    : typeof v

export const runConformance = async (target, ctx) => {
  let n = 0
  const unique = () => `conf-${Date.now().toString(36)}-${n++}`
  const answers = {}
  const texts = {}
  const state = {}
  for (const [name, make] of cases) {
    const r = make(ctx, unique, state)
    const method = r.method ?? "POST"
    const headers = { authorization: `Bearer ${r.key ?? ctx.apiKey}` }
    if (method === "POST") headers["content-type"] = r.type ?? json
    if (r.inm) headers["if-none-match"] = r.inm
    if (r.idempotencyKey !== undefined) headers["idempotency-key"] = r.idempotencyKey
    const res = await fetch(`${target.baseUrl}${r.path}`, {
      method,
      headers,
      body: method === "POST" ? r.body : undefined
    })
    const text = await res.text()
    texts[name] = text
    let body
    try {
      body = text === "" ? undefined : JSON.parse(text)
    } catch {
      body = text
    }
    const e = body?.error
    answers[name] = {
      status: res.status,
      code: e?.code,
      type: e?.type,
      param: e?.param,
      decline_code: e?.decline_code,
      shape: JSON.stringify(shape(body)),
      headers: ["location", "etag", "last-modified", "cache-control", "x-request-id", "idempotent-replayed"].filter((
        h
      ) => res.headers.has(h)).join(","),
      ...(r.sameAs === undefined ? {} : { sameBody: text === texts[r.sameAs] }),
      contentType: res.headers.get("content-type")?.split(";")[0],
      message: e?.message
    }
  }
  return answers
}

// Differences from the baseline, ignoring messages (reported separately: Schema wording may differ).
export const compareConformance = (baseline, answers) => {
  const differences = []
  let messageDifferences = 0
  for (const [name] of cases) {
    const a = baseline[name]
    const b = answers[name]
    if (a === undefined || b === undefined) continue
    for (
      const k of ["status", "code", "type", "param", "decline_code", "shape", "headers", "contentType", "sameBody"]
    ) {
      if (a[k] !== b[k]) differences.push({ case: name, field: k, baseline: a[k], target: b[k] })
    }
    const text = (m) => m?.replace(/tr_[0-9A-Za-z]{24}/g, "tr_...")
    if (text(a.message) !== text(b.message)) messageDifferences++
  }
  return { cases: cases.length, differences, messageDifferences }
}
