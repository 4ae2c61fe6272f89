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
