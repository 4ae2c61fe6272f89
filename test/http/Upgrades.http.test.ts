import { assert, describe, it } from "@effect/vitest"
import { afterAll, beforeAll } from "vitest"
import { AppProcess } from "../support/AppProcess.ts"
import { assertErrorResponse, header, RawConnection } from "../support/RawHttp.ts"

// Requests that Node answers outside the pipeline: Connection: Upgrade (the service serves no websockets),
// and what its HTTP parser refuses. Each answer is the documented error body, and no such socket outlives its
// answer, so a shutdown is not held up by them. Deno.serve ignores an Upgrade nobody takes and serves the
// request; its parser's answers are its own (docs/operations.md, "Deno").
const onNode = (process.env.APP_RUNTIME ?? "node") === "node"
let app: AppProcess

beforeAll(async () => {
  app = await AppProcess.start({ env: { HEADERS_TIMEOUT_MS: "1500" } })
})
afterAll(async () => {
  await app?.stop()
})

const upgradeRequest = (port: number, target = "/healthz") =>
  `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
  `Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`

describe("Connection: Upgrade", () => {
  it("is refused with 400 upgrade_not_supported and the socket closed (Node), served as usual (Deno)", async () => {
    const connections = await Promise.all(Array.from({ length: 50 }, () => RawConnection.open(app.port)))
    try {
      await Promise.all(connections.map((c) => c.write(upgradeRequest(app.port))))
      for (const connection of connections) {
        const response = await connection.response()
        if (onNode) {
          assertErrorResponse(response, 400, "upgrade_not_supported")
          assert.isTrue(await connection.waitClose(3_000), "the server closed the upgrade socket")
        } else {
          assert.strictEqual(response.status, 200)
        }
      }
    } finally {
      connections.forEach((c) => c.destroy())
    }
  })
})

// CONNECT asks a proxy for a tunnel; Node hands it to the server's 'connect' event, not to the request handler.
// This service is no proxy: a CONNECT gets 405 with Allow, on an authority (host:port) the methods the service
// takes anywhere, on a path (Node) the path's methods. Node's socket is closed after it, as it would be a tunnel;
// Deno.serve keeps the connection for more requests, and its parser refuses a path as CONNECT's target (400).
describe("CONNECT", () => {
  const allowOf = (value: string | undefined) => (value ?? "").split(",").map((m) => m.trim()).filter((m) => m !== "")
  const connectTo = async (target: string, host: string) => {
    const connection = await RawConnection.open(app.port)
    try {
      await connection.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${host}\r\nX-Request-Id: connect-1\r\n\r\n`)
      const response = await connection.response({ timeoutMs: 5_000 })
      return { response, closed: onNode ? await connection.waitClose(3_000) : undefined }
    } finally {
      connection.destroy()
    }
  }

  it("to host:port is 405 method_not_allowed with Allow, then the socket is closed", async () => {
    const { closed, response } = await connectTo("example.com:443", "example.com:443")
    assertErrorResponse(response, 405, "method_not_allowed")
    assert.strictEqual(header(response, "x-request-id"), "connect-1")
    const allow = allowOf(header(response, "allow"))
    assert.includeMembers(allow, ["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS"])
    assert.notInclude(allow, "CONNECT")
    if (onNode) assert.isTrue(closed, "the server closed the socket after its answer")
  })

  it.runIf(onNode)("to a path is 405 with that path's Allow", async () => {
    const { response } = await connectTo("/healthz", `127.0.0.1:${app.port}`)
    assertErrorResponse(response, 405, "method_not_allowed")
    assert.sameMembers(allowOf(header(response, "allow")), ["GET", "HEAD", "OPTIONS", "TRACE"])
  })

  it("50 at once all get their 405", async () => {
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) => connectTo(`host-${i}.example:443`, `host-${i}.example:443`))
    )
    for (const { response } of answers) assertErrorResponse(response, 405, "method_not_allowed")
  })
})

describe.runIf(onNode)("Node's own answers carry the error body", () => {
  const send = async (text: string) => {
    const connection = await RawConnection.open(app.port)
    try {
      await connection.write(text)
      const response = await connection.response({ timeoutMs: 5_000 })
      assert.isTrue(await connection.waitClose(3_000), "closed after the answer")
      return response
    } finally {
      connection.destroy()
    }
  }

  it("400 request_malformed for a request line the parser refuses", async () => {
    assertErrorResponse(await send("GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n"), 400, "request_malformed")
  })

  it("431 header_fields_too_large for header fields over 16 KiB", async () => {
    const response = await send(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`)
    assertErrorResponse(response, 431, "header_fields_too_large")
  })

  it("417 expectation_failed for an Expect other than 100-continue", async () => {
    const response = await send("GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nX-Request-Id: expect-1\r\n\r\n")
    assertErrorResponse(response, 417, "expectation_failed")
    assert.strictEqual(header(response, "x-request-id"), "expect-1")
  })

  it("408 request_timeout for header fields that do not arrive in time", async () => {
    const connection = await RawConnection.open(app.port)
    try {
      await connection.write("GET /healthz HTTP/1.1\r\nHost: x\r\n")
      assertErrorResponse(await connection.response({ timeoutMs: 6_000 }), 408, "request_timeout")
    } finally {
      connection.destroy()
    }
  })
})

describe("shutdown", () => {
  it("stops within 10 s with upgrade sockets and half-sent requests open", async () => {
    const own = await AppProcess.start()
    const connections = await Promise.all(Array.from({ length: 30 }, () => RawConnection.open(own.port)))
    try {
      await Promise.all(
        connections.map((c, i) =>
          c.write(
            i % 2 === 0
              ? upgradeRequest(own.port)
              : "POST /subscribe HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nna"
          )
        )
      )
      await new Promise((r) => setTimeout(r, 300))
      const started = Date.now()
      await own.stop()
      assert.isBelow(Date.now() - started, 10_000)
    } finally {
      connections.forEach((c) => c.destroy())
      await own.stop()
    }
  })
})
