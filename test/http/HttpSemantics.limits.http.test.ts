import { assert, describe, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import { resolve } from "node:path"
import { afterAll, beforeAll } from "vitest"
import { AdminKey, AppProcess, cliBundle, form } from "../support/AppProcess.ts"
import {
  assertErrorResponse,
  bodyJson,
  header,
  RawConnection,
  rawRequest,
  type RawResponse
} from "../support/RawHttp.ts"

// Black-box: the HTTP semantics that depend on configuration, against one app process started with
// TRACE off, a 1 KiB body limit, a 2 s header timeout and small rate limits. Only the rate-limit tests send
// POST /subscribe or merchant requests here, so that nothing else spends their tokens.
const root = resolve(import.meta.dirname, "../..")
const maxBodyBytes = 1024
let app: AppProcess
let sandboxKey: string

const firstApiKey = (output: string): string => {
  const match = /secret key, shown only now:\r?\n\s*(sk_[A-Za-z0-9_-]+)/.exec(output)
  if (match === null) throw new Error(`the app printed no API key:\n${output}`)
  return match[1]!
}

// `npm run cli -- client create --name NAME` (the CLI's bundle) on the app's database; prints {"id", "api_key"}.
const createClient = (name: string): Promise<{ id: string; api_key: string }> =>
  new Promise((ok, fail) => {
    const child = spawn(
      process.execPath,
      [cliBundle, "client", "create", "--name", name],
      { cwd: root, env: { ...process.env, DATABASE_URL: app.databaseUrl }, stdio: "pipe" }
    )
    let out = ""
    child.stdout.on("data", (chunk) => (out += chunk))
    child.stderr.on("data", (chunk) => (out += chunk))
    child.on("error", fail)
    child.on("exit", (code) => {
      try {
        const parsed = JSON.parse(out.trim().split("\n").pop() ?? "")
        if (code === 0 && typeof parsed.api_key === "string") return ok(parsed)
      } catch {
        // reported below
      }
      fail(new Error(`client create exited with ${code}:\n${out}`))
    })
  })

const adminHeaders = { authorization: `Bearer ${AdminKey}` }

beforeAll(async () => {
  app = await AppProcess.start({
    env: {
      HTTP_TRACE: "off",
      MAX_BODY_BYTES: String(maxBodyBytes),
      HEADERS_TIMEOUT_MS: "2000",
      SUBSCRIBE_RATE_LIMIT: "3",
      MERCHANT_RATE_LIMIT: "2"
    }
  })
  sandboxKey = firstApiKey(app.output)
})
afterAll(async () => {
  await app?.stop()
})

describe("HTTP_TRACE=off", () => {
  const allowOf = (value: string | undefined) => (value ?? "").split(",").map((m) => m.trim()).filter((m) => m !== "")

  it("TRACE on a known path is 405 method_not_allowed with an Allow header without TRACE", async () => {
    const response = await rawRequest(app.port, {
      method: "TRACE",
      target: "/feeds/default",
      headers: [["X-Custom-Header", "Value-1"], ["Authorization", "Bearer trace-off-secret"]]
    })
    assertErrorResponse(response, 405, "method_not_allowed")
    assert.sameMembers(allowOf(header(response, "allow")), ["GET", "HEAD", "PUT", "DELETE", "OPTIONS"])
    assert.notMatch(header(response, "content-type")!, /message\/http/)
    assert.notInclude(response.body.toString("utf8"), "trace-off-secret")
    assert.notInclude(response.body.toString("utf8"), "X-Custom-Header")
  })

  it("OPTIONS and other 405s no longer list TRACE", async () => {
    const options = await rawRequest(app.port, { method: "OPTIONS", target: "/subscribe" })
    assert.strictEqual(options.status, 204)
    assert.sameMembers(allowOf(header(options, "allow")), ["GET", "HEAD", "POST", "OPTIONS"])
    const patch = await rawRequest(app.port, { method: "PATCH", target: "/healthz" })
    assertErrorResponse(patch, 405, "method_not_allowed")
    assert.sameMembers(allowOf(header(patch, "allow")), ["GET", "HEAD", "OPTIONS"])
  })

  // Regression test (found by this suite, fixed in apps/).
  it("TRACE on an unknown path is 404 route_not_found, or a 405 that carries Allow", async () => {
    const response = await rawRequest(app.port, { method: "TRACE", target: "/no/such/route" })
    assert.isTrue(
      response.status === 404 || (response.status === 405 && header(response, "allow") !== undefined),
      `${response.status} allow=${header(response, "allow")}: ${response.body.toString("utf8")}`
    )
  })
})

describe("body limit (MAX_BODY_BYTES=1024)", () => {
  const putHead = (extra: string) =>
    `PUT /feeds/big HTTP/1.1\r\nHost: 127.0.0.1:${app.port}\r\nAuthorization: Bearer ${AdminKey}\r\n` +
    `Content-Type: application/x-www-form-urlencoded\r\n${extra}\r\n`

  it("a body of exactly the limit is read (and judged on its content, not its size)", async () => {
    const body = `title=${"a".repeat(maxBodyBytes - "title=".length)}`
    assert.strictEqual(body.length, maxBodyBytes)
    const response = await rawRequest(app.port, {
      method: "PUT",
      target: "/feeds/at-limit",
      headers: { ...adminHeaders, "content-type": "application/x-www-form-urlencoded" },
      body
    })
    assert.strictEqual(response.status, 400, response.body.toString("utf8"))
    assert.strictEqual(bodyJson(response).error.param, "title", "over 200 characters, but not over the byte limit")
  })

  it("one byte over the limit, sent in full with Content-Length, is 413 body_too_large", async () => {
    const response = await rawRequest(app.port, {
      method: "PUT",
      target: "/feeds/over-limit",
      headers: { ...adminHeaders, "content-type": "application/x-www-form-urlencoded" },
      body: `title=${"a".repeat(maxBodyBytes + 1 - "title=".length)}`
    })
    assertErrorResponse(response, 413, "body_too_large")
    assert.strictEqual((await fetch(`${app.baseUrl}/feeds/over-limit`)).status, 404, "nothing stored")
  })

  it("a Content-Length over the limit is answered 413 from the headers alone, the body never sent", async () => {
    const connection = await RawConnection.open(app.port)
    try {
      const declared = 10 * 1024 * 1024
      await connection.write(putHead(`Content-Length: ${declared}\r\n`))
      await connection.write("title=" + "a".repeat(100))
      const response = await connection.response({ timeoutMs: 5_000 })
      assertErrorResponse(response, 413, "body_too_large")
      assert.isBelow(connection.bytesSent, 1_000, "the answer came before the body")
    } finally {
      connection.destroy()
    }
  })

  const chunkedPut = async (connection: RawConnection) => {
    await connection.write(putHead("Transfer-Encoding: chunked\r\n"))
    await connection.write("6\r\ntitle=\r\n")
  }
  const frame = (size: number) =>
    Buffer.concat([Buffer.from(`${size.toString(16)}\r\n`), Buffer.alloc(size, "a"), Buffer.from("\r\n")])

  it("a chunked body (no Content-Length) sent at a moderate pace gets 413 once it passes the limit", async () => {
    const connection = await RawConnection.open(app.port)
    let bodyBytes = 0
    try {
      await chunkedPut(connection)
      while (bodyBytes < 64 * 1024 && !connection.hasResponseHead && !connection.closed) {
        await connection.write(frame(512))
        bodyBytes += 512
        await connection.waitFor(() => connection.hasResponseHead || connection.closed, 50)
      }
      const response = await connection.response({ timeoutMs: 5_000 })
      assertErrorResponse(response, 413, "body_too_large")
      assert.isAtMost(bodyBytes, 4 * 1024, `the 413 came after ${bodyBytes} body bytes`)
    } finally {
      connection.destroy()
    }
    assert.strictEqual((await fetch(`${app.baseUrl}/feeds/big`)).status, 404, "nothing stored")
  })

  // Streams chunk after chunk as fast as the socket takes them and stops when the answer arrives.
  const streamUntilAnswered = async (total: number) => {
    const connection = await RawConnection.open(app.port)
    let bodyBytes = 0
    let failure: string | undefined
    try {
      await chunkedPut(connection)
      const piece = frame(16 * 1024)
      // A write the server leaves pending (it stopped reading) must not hold the loop up.
      const answered = connection.waitFor(() => connection.hasResponseHead || connection.closed, 20_000)
      while (bodyBytes < total && !connection.hasResponseHead && !connection.closed) {
        const wrote = await Promise.race([
          connection.write(piece).then(() => true, (e: Error) => ((failure = e.message), false)),
          answered.then(() => false)
        ])
        if (!wrote) break
        bodyBytes += 16 * 1024
        // Looks at what came in between two writes, as a client's event loop does: while the kernel takes every
        // write at once, awaiting the writes alone never lets the socket's input be read, and such a client
        // sent all 10 MB before it saw a 413 that had arrived after the first 64 kB.
        await new Promise((r) => setImmediate(r))
      }
      const response = await connection.response({ timeoutMs: 5_000 }).catch((e: Error) => e)
      return { bodyBytes, response, failure }
    } finally {
      connection.destroy()
    }
  }

  // Regression test (found by this suite, fixed in apps/).
  it("a chunked 10 MB upload from a client that keeps streaming gets 413 before all of it was sent", async () => {
    const total = 10 * 1024 * 1024
    const outcomes: Array<string> = []
    for (let attempt = 0; attempt < 5; attempt++) {
      const { bodyBytes, failure, response } = await streamUntilAnswered(total)
      const status = response instanceof Error
        ? `no response (${failure ?? response.message.split("\n")[0]})`
        : response.status
      outcomes.push(`${status} after ${bodyBytes} bytes`)
    }
    for (const outcome of outcomes) {
      assert.match(outcome, /^413 after \d+ bytes$/, outcomes.join("; "))
      // Deno.serve sometimes holds the 413 until the upload ends; the app still reads no more than the limit.
      if (process.env.APP_RUNTIME !== "deno") assert.isBelow(Number(outcome.split(" ")[2]), total, outcomes.join("; "))
    }
  })
})

// HEADERS_TIMEOUT_MS is a Node server setting; Deno.serve keeps its own fixed limits (docs/operations.md, "Deno").
describe.skipIf(process.env.APP_RUNTIME === "deno")("slow clients (HEADERS_TIMEOUT_MS=2000)", () => {
  it("a client trickling its header lines one byte every 300 ms is cut off within about 2-5 s", async () => {
    const request = `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${app.port}\r\nUser-Agent: slowloris\r\n` +
      `X-Padding: ${"p".repeat(40)}\r\n\r\n`
    const connection = await RawConnection.open(app.port)
    try {
      let sent = 0
      while (sent < request.length && !connection.closed && Date.now() - connection.openedAt < 10_000) {
        await connection.write(request[sent]!).then(() => sent++, () => undefined)
        await new Promise((r) => setTimeout(r, 300))
      }
      assert.isTrue(await connection.waitClose(1_000), "the server closed the connection")
      assert.isBelow(sent, request.length, "cut off before the header block was complete")
      const after = connection.closedAfter!
      assert.isTrue(after >= 1_500 && after <= 5_000, `closed after ${after} ms`)
      const received = connection.received.toString("latin1")
      assert.isTrue(received === "" || received.startsWith("HTTP/1.1 408"), `answered: ${received}`)
    } finally {
      connection.destroy()
    }
  })
})

describe("rate limits", () => {
  const subscribeFrom = (localAddress: string, name: string) =>
    rawRequest(
      app.port,
      {
        method: "POST",
        target: "/subscribe",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: form({ name, email: `${name.replace(/\W/g, "-").toLowerCase()}-${process.pid}@example.com` })
      },
      10_000,
      localAddress
    )

  it("SUBSCRIBE_RATE_LIMIT=3: the 4th POST /subscribe in a burst from one IP is 429 rate_limited with Retry-After", async () => {
    const responses: Array<RawResponse> = []
    for (let i = 0; i < 4; i++) responses.push(await subscribeFrom("127.0.0.1", `Burst ${i}`))
    assert.deepStrictEqual(responses.map((r) => r.status), [200, 200, 200, 429])
    const limited = responses[3]!
    assertErrorResponse(limited, 429, "rate_limited")
    assert.strictEqual(bodyJson(limited).error.type, "rate_limit_error")
    const retryAfter = header(limited, "retry-after")!
    assert.match(retryAfter, /^[1-9]\d*$/, `Retry-After: ${retryAfter}`)
    assert.isAtMost(Number(retryAfter), 60, "3 per minute: a token is back within 20 s")
    const stored = app.query<{ n: number }>("SELECT count(*) AS n FROM subscriptions WHERE name = 'Burst 3'")[0]!.n
    assert.strictEqual(stored, 0, "the limited request stored nothing")
  })

  it("SUBSCRIBE_RATE_LIMIT=3: each client address has its own bucket", async () => {
    const statuses = async (address: string, count: number) => {
      const out: Array<number> = []
      for (let i = 0; i < count; i++) out.push((await subscribeFrom(address, `Client ${address} ${i}`)).status)
      return out
    }
    assert.deepStrictEqual(await statuses("127.0.0.2", 4), [200, 200, 200, 429])
    assert.deepStrictEqual(await statuses("127.0.0.3", 1), [200], "another address is not limited by the first")
  })

  it("MERCHANT_RATE_LIMIT=2: a burst with one key gets 429 with Retry-After; another key is not limited", async () => {
    const other = await createClient(`other-${process.pid}`)
    const get = (key: string) =>
      rawRequest(app.port, { method: "GET", target: "/merchant/balance", headers: { authorization: `Bearer ${key}` } })
    const [burst, others] = await Promise.all([
      Promise.all(Array.from({ length: 8 }, () => get(sandboxKey))),
      Promise.all([get(other.api_key), get(other.api_key)])
    ])
    const statuses = burst.map((r) => r.status)
    assert.isTrue(statuses.every((s) => s === 200 || s === 429), statuses.join(","))
    assert.isAtLeast(statuses.filter((s) => s === 200).length, 1, statuses.join(","))
    assert.isAtLeast(statuses.filter((s) => s === 429).length, 1, statuses.join(","))
    const limited = burst.find((r) => r.status === 429)!
    assertErrorResponse(limited, 429, "rate_limited")
    assert.match(header(limited, "retry-after")!, /^[1-9]\d*$/)
    assert.deepStrictEqual(others.map((r) => r.status), [200, 200], "the other key has its own budget")
  })
})

// The 5 s shutdown grace is the Node app's (apps/node/main.ts); the Deno app exits through Deno.serve's shutdown.
describe.skipIf(process.env.APP_RUNTIME === "deno")("shutdown", () => {
  // Regression test (found by this suite, fixed in apps/).
  it("a trickling client does not hold up shutdown: after SIGTERM it is cut off and the app exits", async () => {
    const connection = await RawConnection.open(app.port)
    let stopping: Promise<void> | undefined
    const trickle = setInterval(() => connection.write("a").catch(() => undefined), 300)
    try {
      await connection.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${app.port}\r\nX-Slow: `)
      await new Promise((r) => setTimeout(r, 300))
      const started = Date.now()
      stopping = app.stop()
      const exited = await Promise.race([
        stopping.then(() => true),
        new Promise<boolean>((r) => setTimeout(() => r(false), 6_000))
      ])
      assert.isTrue(connection.closed, "the slow connection was cut off")
      assert.isTrue(exited, `the app exited within 6 s of SIGTERM (${Date.now() - started} ms so far)`)
    } finally {
      clearInterval(trickle)
      connection.destroy()
      await stopping
    }
  })
})
