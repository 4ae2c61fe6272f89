import { assert, describe, it } from "@effect/vitest"
import { afterAll, beforeAll } from "vitest"
import { AppProcess } from "../support/AppProcess.ts"
import { assertErrorResponse, header, RawConnection } from "../support/RawHttp.ts"

// A Host that is not a valid authority (RFC 9110 7.2) answers 400 host_invalid on every route of the document
// and with every method, pages included, and never stops the process: such a request once threw out of the
// server's callback while a page's request was built from it.
const badHosts = ["127.0.0.1:99999", "x y", "[::1", "user@host", "%zz", "host:123456", "a/b", "\u00e9t\u00e9.example"]
const methods = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"]

let app: AppProcess
let paths: Array<string>

beforeAll(async () => {
  app = await AppProcess.start()
  const document = await (await fetch(`${app.baseUrl}/openapi.json`)).json() as { paths: Record<string, unknown> }
  paths = Object.keys(document.paths).map((path) => `${path.replace(/\{[^}]+\}/g, "x1")}?token=abc`)
  paths.push("/no-such-route")
})
afterAll(async () => {
  await app?.stop()
})

const send = async (method: string, path: string, host: string, extra = "") => {
  const connection = await RawConnection.open(app.port)
  try {
    await connection.write(
      Buffer.from(
        `${method} ${path} HTTP/1.1\r\nHost: ${host}\r\n${extra}Content-Length: 0\r\nConnection: close\r\n\r\n`
      )
    )
    return await connection.response({ head: method === "HEAD" })
  } finally {
    connection.socket.destroy()
  }
}

describe("a Host that is not a valid authority", () => {
  it("answers 400 host_invalid on every route and method, and the service stays up", async () => {
    assert.isAbove(paths.length, 10)
    let sent = 0
    for (const path of paths) {
      for (const method of methods) {
        for (const [i, host] of badHosts.entries()) {
          const accept = i % 2 === 0 ? "Accept: text/html\r\n" : "Accept: application/json\r\n"
          const response = await send(method, path, host, accept)
          if (method === "HEAD") assert.strictEqual(response.status, 400, `${method} ${path} Host: ${host}`)
          else assertErrorResponse(response, 400, "host_invalid")
          sent++
        }
      }
    }
    const health = await fetch(`${app.baseUrl}/healthz`)
    assert.strictEqual(health.status, 200, `after ${sent} requests with a bad Host`)
    assert.notMatch(app.output, /TypeError|Failed to parse URL/)
  }, 120_000)

  it("leaves a valid Host alone: a name, an address with a port, an IPv6 literal, an empty Host", async () => {
    for (const host of [`127.0.0.1:${0 + 65535}`, "api.example.com", "[::1]:3000", "ex%41mple.com", ""]) {
      const response = await send("GET", "/healthz", host)
      assert.strictEqual(response.status, 200, `Host: ${host}`)
      assert.isDefined(header(response, "x-request-id"))
    }
  })
})
