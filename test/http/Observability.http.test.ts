import { assert, describe, it } from "@effect/vitest"
import { createServer, type Server } from "node:http"
import { afterAll, beforeAll } from "vitest"
import { AdminKey, AppProcess, freePort, postForm } from "../support/AppProcess.ts"
import {
  accountUri,
  createClient,
  expiry,
  firstApiKey,
  MerchantApi,
  transferBody,
  unlimitedEnv
} from "../support/Payments.ts"
import { TestProcessor } from "../support/TestProcessor.ts"
import { webhookEnv } from "../support/WebhookReceiver.ts"

// What an operator sees, black-box: JSON access lines (LOG_FORMAT=json), the Prometheus text at /metrics, and
// the spans a real OTLP/HTTP receiver (a server in this file that decodes what it is sent) gets from the app.
const Pan = "4242424242424242"
const ExpiredPan = "4000000000000069"
const Cvc = "913"
const AuthValue = "ucaf:jJJLtQa+Iws8AREAEbjsA1MAAAA="
const QueryToken = "tok-in-a-query-0123456789abcdef"

interface OtlpSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly kind: number
  readonly attributes: ReadonlyArray<{ readonly key: string; readonly value: Record<string, unknown> }>
}
const spans: Array<OtlpSpan> = []
const exports: Array<string> = []
let receiver: Server
let receiverUrl: string
let app: AppProcess
let key: string
let api: MerchantApi
const answers: Array<{ readonly requestId: string | null; readonly status: number; readonly merchant: boolean }> = []

beforeAll(async () => {
  const port = await freePort()
  receiver = createServer((request, response) => {
    let body = ""
    request.on("data", (chunk) => (body += chunk))
    request.on("end", () => {
      exports.push(`${request.method} ${request.url} ${request.headers["content-type"]}`)
      if (request.url === "/v1/traces") {
        const decoded = JSON.parse(body)
        for (const resource of decoded.resourceSpans) {
          for (const scope of resource.scopeSpans) spans.push(...scope.spans)
        }
      }
      response.writeHead(200, { "content-type": "application/json" }).end("{}")
    })
  })
  await new Promise<void>((ok) => receiver.listen(port, "127.0.0.1", ok))
  receiverUrl = `http://127.0.0.1:${port}`
  app = await AppProcess.start({
    env: {
      ...unlimitedEnv,
      ...webhookEnv,
      LOG_FORMAT: "json",
      OTEL_EXPORTER_OTLP_ENDPOINT: receiverUrl,
      OTEL_SERVICE_NAME: "paysub-test",
      OTEL_BSP_SCHEDULE_DELAY: "100"
    }
  })
  key = firstApiKey(app.output)
  api = new MerchantApi(app.baseUrl, key)
  const note = (merchant: boolean) => (r: { readonly status: number; readonly headers: Headers }) =>
    answers.push({ requestId: r.headers.get("x-request-id"), status: r.status, merchant })
  note(true)(await api.create(transferBody({ sender_account_uri: accountUri(Pan, expiry(24), Cvc) })))
  note(true)(
    await api.create(transferBody({
      sender_account_uri: accountUri(ExpiredPan, expiry(24), Cvc),
      authentication_value: AuthValue
    }))
  )
  note(false)(await postForm(app.baseUrl, "/subscribe", { name: "Ann Metrics", email: "ann.metrics@example.com" }))
  note(false)(await fetch(`${app.baseUrl}/healthz?token=${QueryToken}`))
  note(false)(await fetch(`${app.baseUrl}/subscribe/confirm?token=${QueryToken}`))
  note(false)(await fetch(`${app.baseUrl}/metrics`))
}, 60_000)

afterAll(async () => {
  await app?.stop()
  await new Promise((ok) => receiver?.close(ok))
})

const secrets = () => [Pan, ExpiredPan, `cvc=${Cvc}`, AuthValue, "jJJLtQa", key, AdminKey, QueryToken]

const accessLines = () =>
  app.output.split("\n").filter((line) => line.startsWith("{")).map((line) => JSON.parse(line)).filter((
    entry
  ) => entry.annotations?.request_id !== undefined)

describe("logs", () => {
  it("writes one JSON access line per request, with its request id, route template, status and client", async () => {
    // Lines leave in batches, once per turn of the app's event loop: the last may follow its answer by a moment.
    const deadline = Date.now() + 5_000
    const logged = () => {
      const ids = new Set(accessLines().map((l) => l.annotations.request_id))
      return answers.every((a) => ids.has(a.requestId))
    }
    while (Date.now() < deadline && !logged()) {
      await new Promise((r) => setTimeout(r, 50))
    }
    const lines = accessLines()
    for (const answer of answers) {
      const line = lines.find((l) => l.annotations.request_id === answer.requestId)
      assert.isDefined(line, `no access line for ${answer.requestId}:\n${app.output}`)
      assert.strictEqual(line.annotations.status, answer.status)
      assert.strictEqual(line.logLevel, "INFO")
      assert.isNumber(line.annotations.duration_ms)
      if (answer.merchant) {
        assert.match(line.annotations.client_id, /^cl_/)
        assert.strictEqual(line.annotations.route, "/merchant/transfers/payment")
      }
    }
    const confirm = lines.find((l) => l.annotations.route === "/subscribe/confirm")
    assert.strictEqual(confirm?.annotations.method, "GET")
  })

  it("never carries card data, keys or a token from a query string", () => {
    // The first start prints the sandbox's API key once, on purpose, outside the log (apps/AppLayer.ts).
    const logged = app.output.split("\n").filter((line) => line.startsWith("{")).join("\n")
    assert.isAbove(accessLines().length, 4)
    for (const secret of secrets()) assert.notInclude(logged, secret)
  })
})

const prometheusLine = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",?)*)\})? (\S+)$/

const scrape = async () => {
  const response = await fetch(`${app.baseUrl}/metrics`, { headers: { authorization: `Bearer ${AdminKey}` } })
  assert.strictEqual(response.status, 200)
  assert.match(response.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/)
  const samples: Array<{ name: string; labels: Record<string, string>; value: number }> = []
  const types = new Map<string, string>()
  for (const line of (await response.text()).split("\n")) {
    if (line === "" || line.startsWith("# HELP ")) continue
    const type = /^# TYPE (\S+) (counter|gauge|histogram|summary|untyped)$/.exec(line)
    if (type !== null) {
      types.set(type[1]!, type[2]!)
      continue
    }
    const sample = prometheusLine.exec(line)
    assert.isNotNull(sample, `not Prometheus text: ${line}`)
    const labels = Object.fromEntries(
      [...(sample![3] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1]!, m[2]!])
    )
    const value = Number(sample![4] === "+Inf" ? Infinity : sample![4])
    assert.isFalse(Number.isNaN(value), line)
    samples.push({ name: sample![1]!, labels, value })
  }
  return { samples, types }
}

describe("GET /metrics", () => {
  it("needs the admin key", () => {
    assert.strictEqual(answers.at(-1)!.status, 401)
  })

  it("counts requests by route and status, transfers by outcome and code, in Prometheus text", async () => {
    const { samples, types } = await scrape()
    const value = (name: string, labels: Record<string, string>) =>
      samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
        .reduce((sum, s) => sum + s.value, 0)
    assert.strictEqual(types.get("http_requests_total"), "counter")
    assert.strictEqual(types.get("http_request_duration_seconds"), "histogram")
    if (!app.onPostgres && !app.onMariaDb) assert.strictEqual(types.get("sqlite_group_commit_size"), "histogram")
    assert.isAtLeast(value("http_requests_total", { route: "/merchant/transfers/payment", status: "201" }), 1)
    assert.isAtLeast(value("http_requests_total", { route: "/merchant/transfers/payment", status: "402" }), 1)
    assert.isAtLeast(value("http_requests_total", { route: "/metrics", status: "401" }), 1)
    assert.isAtLeast(value("transfers_total", { outcome: "approved" }), 1)
    assert.isAtLeast(value("transfers_total", { outcome: "declined", code: "expired_card" }), 1)
    assert.strictEqual(types.get("outbox_depth"), "gauge")
    assert.isDefined(samples.find((s) => s.name === "outbox_oldest_due_age_seconds" && s.labels.outbox === "mail"))
    // Histogram buckets are cumulative and end with +Inf = _count.
    const buckets = samples.filter((s) =>
      s.name === "http_request_duration_seconds_bucket" && s.labels.route === "/merchant/transfers/payment"
    )
    for (let i = 1; i < buckets.length; i++) assert.isAtLeast(buckets[i]!.value, buckets[i - 1]!.value)
    assert.strictEqual(buckets.at(-1)!.labels.le, "+Inf")
    assert.strictEqual(
      buckets.at(-1)!.value,
      value("http_request_duration_seconds_count", { route: "/merchant/transfers/payment" })
    )
    for (const secret of secrets()) assert.notInclude(JSON.stringify(samples), secret)
  })

  it("counts the mail the outbox sent for the signup, and samples the outbox", async () => {
    const deadline = Date.now() + 15_000
    let scraped = await scrape()
    const sent = () => scraped.samples.find((s) => s.name === "mail_sends_total")?.value ?? 0
    while (Date.now() < deadline && sent() < 1) {
      await new Promise((r) => setTimeout(r, 200))
      scraped = await scrape()
    }
    assert.isAtLeast(sent(), 1)
    const depth = scraped.samples.find((s) => s.name === "outbox_depth" && s.labels.outbox === "mail")
    assert.strictEqual(depth?.value, 0)
  })

  it("samples the webhook outbox: a delivery to an endpoint that does not answer waits in it", async () => {
    const closed = await freePort()
    const registered = await api.request("POST", "/webhook_endpoints", {
      body: JSON.stringify({ url: `http://127.0.0.1:${closed}/hook`, enabled_events: ["transfer.approved"] }),
      headers: { "content-type": "application/json" }
    })
    assert.strictEqual(registered.status, 201, registered.text)
    assert.strictEqual((await api.create(transferBody())).status, 201)
    const { samples } = await scrape()
    const depth = samples.find((s) => s.name === "outbox_depth" && s.labels.outbox === "webhook")
    assert.isAtLeast(depth?.value ?? 0, 1)
    assert.isDefined(samples.find((s) => s.name === "outbox_oldest_due_age_seconds" && s.labels.outbox === "webhook"))
  })
})

const attribute = (span: OtlpSpan, key: string) => {
  const value = span.attributes.find((a) => a.key === key)?.value
  return value === undefined ? undefined : Object.values(value)[0]
}

describe("traces (OTLP/HTTP)", () => {
  it("exports the request span with its route and status, and the use case and SQL spans under it", async () => {
    const deadline = Date.now() + 15_000
    const requestSpan = () =>
      spans.find((s) =>
        s.name === "POST /merchant/transfers/payment" && attribute(s, "http.response.status_code") == 201
      )
    while (Date.now() < deadline && requestSpan() === undefined) await new Promise((r) => setTimeout(r, 100))
    const root = requestSpan()
    assert.isDefined(root, `no request span among ${spans.map((s) => s.name).join(", ")} (${exports.join("; ")})`)
    assert.strictEqual(root!.kind, 2) // SERVER
    assert.strictEqual(attribute(root!, "http.route"), "/merchant/transfers/payment")
    const descendants = (parent: OtlpSpan): Array<OtlpSpan> =>
      spans.filter((s) => s.parentSpanId === parent.spanId).flatMap((s) => [s, ...descendants(s)])
    // "sql <statement>" from the direct paths (SQLite, PostgreSQL), "sql.execute" from @effect/sql (MariaDB).
    const isSql = (name: string) => /^sql[ .]/.test(name)
    while (Date.now() < deadline && !descendants(root!).some((s) => isSql(s.name))) {
      await new Promise((r) => setTimeout(r, 100))
    }
    const names = descendants(root!).map((s) => s.name)
    assert.include(names, "transfers.create")
    assert.isTrue(names.some(isSql), names.join(", "))
    for (const span of descendants(root!)) assert.strictEqual(span.traceId, root!.traceId)
  })

  it("puts no card data, token or key in any attribute", async () => {
    await new Promise((r) => setTimeout(r, 300))
    assert.isAbove(spans.length, 0)
    const text = JSON.stringify(spans)
    for (const secret of secrets()) assert.notInclude(text, secret)
  })
})

describe("traces with a real card network (CARD_NETWORK=http)", () => {
  const ProcessorKey = "processor-secret-0123456789abcdef"
  let processor: TestProcessor
  let processorApp: AppProcess
  beforeAll(async () => {
    processor = await TestProcessor.start()
    processorApp = await AppProcess.start({
      env: {
        ...unlimitedEnv,
        CARD_NETWORK: "http",
        CARD_NETWORK_URL: processor.url,
        CARD_NETWORK_API_KEY: ProcessorKey,
        OTEL_EXPORTER_OTLP_ENDPOINT: receiverUrl,
        OTEL_BSP_SCHEDULE_DELAY: "100"
      }
    })
  }, 60_000)
  afterAll(async () => {
    await processorApp?.stop()
    await processor?.stop()
  })

  it("has the card network call under the request span, with no card data, token or key in it", async () => {
    const client = await createClient(processorApp, "traced")
    const answer = await new MerchantApi(processorApp.baseUrl, client.api_key).create(
      transferBody({ sender_account_uri: accountUri(Pan, expiry(24), Cvc), authentication_value: AuthValue })
    )
    assert.strictEqual(answer.status, 201)
    // The request's span ends after the call's, so it may come in a later export: wait for both.
    const deadline = Date.now() + 15_000
    const authorize = () => spans.find((s) => s.name === "HttpCardNetwork.authorize")
    const rootOf = (traceId: string) =>
      spans.find((s) => s.traceId === traceId && s.name === "POST /merchant/transfers/payment")
    const arrived = () => {
      const call = authorize()
      return call !== undefined && rootOf(call.traceId) !== undefined
    }
    while (Date.now() < deadline && !arrived()) await new Promise((r) => setTimeout(r, 100))
    const call = authorize()
    assert.isDefined(call, spans.map((s) => s.name).join(", "))
    assert.isDefined(rootOf(call!.traceId), spans.map((s) => s.name).join(", "))
    await new Promise((r) => setTimeout(r, 300))
    const text = JSON.stringify(spans.filter((s) => s.traceId === call!.traceId))
    for (const secret of [...secrets(), client.api_key, ProcessorKey]) assert.notInclude(text, secret)
  })
})

describe("GET /docs", () => {
  it("is the Scalar UI holding the very document /openapi.json serves", async () => {
    const page = await fetch(`${app.baseUrl}/docs`)
    assert.strictEqual(page.status, 200)
    assert.match(page.headers.get("content-type") ?? "", /^text\/html/)
    const html = await page.text()
    // The bundle's page carries Scalar's script itself, read from beside the bundle (scripts/build.mjs).
    assert.notInclude(html, "paysub: the script in scalar.js")
    const embedded = /<script id="api-reference" type="application\/json">([\s\S]*?)<\/script>/.exec(html)
    assert.isNotNull(embedded)
    const document = await (await fetch(`${app.baseUrl}/openapi.json`)).json()
    assert.deepStrictEqual(JSON.parse(embedded![1]!), document)
    assert.isUndefined(document.components.schemas.HttpApiDecodeError)
    assert.isDefined(document.paths["/metrics"].get)
  })
})
