import { assert, describe, it } from "@effect/vitest"
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http"
import { createServer as createHttpsServer } from "node:https"
import { createServer as createTcpServer, type Server } from "node:net"
import { makePostClient } from "../../adapters/webhook/PostClient.ts"
import { listening } from "../support/Listening.ts"

// The webhook sender's HTTP/1.1 client against node:http servers and against raw sockets that answer byte by
// byte: every framing RFC 9112 allows for an answer, interim answers, connections kept or not, a kept connection
// the server closes as it is reused, and answers that are not HTTP.

const serve = async (server: Server, protocol: "http:" | "https:" = "http:") => {
  const served = await listening(server, protocol)
  return { ...served, url: new URL(`${served.origin}/hook?x=1`) }
}
const http = (handler: (req: IncomingMessage, res: ServerResponse) => void) =>
  serve(createHttpServer({ keepAliveTimeout: 30_000 }, handler))
// A server that reads each request (up to the end of its body) and answers with `answer(n)`'s bytes, one
// write per byte, `n` counting the requests on that connection; "destroy" closes the connection instead.
const raw = (answer: (n: number) => string | "destroy" | "silent") =>
  serve(createTcpServer((socket) => {
    let buffer = ""
    let n = 0
    socket.on("error", () => {})
    socket.on("data", (bytes) => {
      buffer += bytes.toString("latin1")
      for (;;) {
        const end = buffer.indexOf("\r\n\r\n")
        if (end < 0) return
        const length = Number(/content-length: (\d+)/i.exec(buffer.slice(0, end))?.[1] ?? 0)
        if (buffer.length < end + 4 + length) return
        buffer = buffer.slice(end + 4 + length)
        const reply = answer(++n)
        if (reply === "destroy") return socket.destroy()
        if (reply === "silent") return
        for (const byte of reply) socket.write(byte)
      }
    })
  }))

const client = (timeoutMs = 2_000, ca?: string) => makePostClient({ timeoutMs, ca })
const headers = "content-type: application/json\r\nwebhook-id: evt_1\r\n"
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe("PostClient", () => {
  it("posts the body with its headers, Host and Content-Length, and reuses the connection", async () => {
    const seen: Array<{ url: string; headers: IncomingMessage["headers"]; body: string }> = []
    const server = await http((req, res) => {
      let body = ""
      req.setEncoding("utf8").on("data", (c) => (body += c)).on("end", () => {
        seen.push({ url: req.url!, headers: req.headers, body })
        res.writeHead(seen.length === 2 ? 500 : 204).end()
      })
    })
    try {
      const post = client().post
      assert.deepStrictEqual(await post(server.url, headers, "{\"name\":\"Zoë\"}"), { status: 204 })
      assert.deepStrictEqual(await post(server.url, headers, "{}"), { status: 500 })
      assert.deepStrictEqual(await post(server.url, headers, "{}"), { status: 204 })
      assert.strictEqual(server.connections(), 1)
      assert.strictEqual(seen[0]!.url, "/hook?x=1")
      assert.strictEqual(seen[0]!.body, "{\"name\":\"Zoë\"}")
      assert.strictEqual(seen[0]!.headers["content-length"], String(Buffer.byteLength("{\"name\":\"Zoë\"}")))
      assert.strictEqual(seen[0]!.headers.host, server.url.host)
      assert.strictEqual(seen[0]!.headers["webhook-id"], "evt_1")
    } finally {
      await server.close()
    }
  })

  it("reads bodies framed by length, by chunks (split anywhere) and by the connection's end", async () => {
    const answers: Record<number, string> = {
      1: "HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello",
      2: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n1a\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\n\r\n",
      3: "HTTP/1.1 202 Accepted\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nx-trailer: 1\r\n\r\n",
      4: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\nHTTP/1.1 201 Created\r\ncontent-length: 0\r\n\r\n",
      5: "HTTP/1.1 404 Not Found\r\ncontent-length: 2\r\n\r\nno"
    }
    const server = await raw((n) => answers[n] ?? "destroy")
    const closing = await raw(() => "HTTP/1.0 200 OK\r\n\r\nthe body runs to the end")
    const ender = await serve(createTcpServer((socket) => {
      socket.once("data", () => socket.end("HTTP/1.1 200 OK\r\n\r\nuntil the end"))
    }))
    try {
      const post = client().post
      for (const status of [200, 200, 202, 201, 404]) {
        assert.deepStrictEqual(await post(server.url, headers, "{}"), { status })
      }
      assert.strictEqual(server.connections(), 1, "every answer ended cleanly, on one connection")
      assert.deepStrictEqual(await post(ender.url, headers, "{}"), { status: 200 })
      assert.deepStrictEqual(await post(ender.url, headers, "{}"), { status: 200 })
      assert.strictEqual(ender.connections(), 2, "an answer that ends with its connection leaves none to keep")
      assert.deepStrictEqual(await client(300).post(closing.url, headers, "{}"), { error: "no answer within 0.3 s" })
    } finally {
      await Promise.all([server.close(), closing.close(), ender.close()])
    }
  })

  it("keeps no connection after Connection: close, HTTP/1.0 or bytes after the answer", async () => {
    const answers = [
      "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n",
      "HTTP/1.0 204 No Content\r\n\r\n",
      "HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n"
    ]
    for (const answer of answers) {
      const server = await raw(() => answer)
      try {
        const post = client().post
        assert.deepStrictEqual(await post(server.url, headers, "{}"), { status: 204 }, answer)
        assert.deepStrictEqual(await post(server.url, headers, "{}"), { status: 204 }, answer)
        assert.strictEqual(server.connections(), 2, answer)
      } finally {
        await server.close()
      }
    }
  })

  it("drops a kept connection the server writes to while idle", async () => {
    const server = await raw(() => "HTTP/1.1 204 No Content\r\n\r\n")
    const unsolicited = await serve(createTcpServer((socket) => {
      socket.on("data", () => {
        socket.write("HTTP/1.1 204 No Content\r\n\r\n")
        setTimeout(() => socket.write("HTTP/1.1 204 No Content\r\n\r\n"), 20)
      })
    }))
    try {
      const post = client().post
      assert.deepStrictEqual(await post(unsolicited.url, headers, "{}"), { status: 204 })
      await sleep(100)
      assert.strictEqual(unsolicited.open(), 0)
      assert.deepStrictEqual(await post(unsolicited.url, headers, "{}"), { status: 204 })
      assert.strictEqual(unsolicited.connections(), 2)
    } finally {
      await Promise.all([server.close(), unsolicited.close()])
    }
  })

  it("sends again on a new connection when a kept one closes before any answer, and only then", async () => {
    // Each connection answers its first request and closes on its second, as a server does at its idle time-out.
    const server = await raw((n) => (n === 1 ? "HTTP/1.1 204 No Content\r\n\r\n" : "destroy"))
    const never = await raw(() => "destroy")
    try {
      const post = client().post
      assert.deepStrictEqual(await post(server.url, headers, "{}"), { status: 204 })
      assert.deepStrictEqual(await post(server.url, headers, "{}"), { status: 204 })
      assert.strictEqual(server.connections(), 2)
      assert.deepStrictEqual(await post(never.url, headers, "{}"), {
        error: "connection closed before the answer ended"
      })
      assert.strictEqual(never.connections(), 1, "a new connection is not tried twice")
    } finally {
      await Promise.all([server.close(), never.close()])
    }
  })

  it("fails an answer that is not HTTP/1.x, or malformed, and keeps no connection after it", async () => {
    const answers: Record<string, string> = {
      "not an HTTP/1.x answer": "SSH-2.0-OpenSSH_9.6\r\n\r\n",
      "malformed Content-Length": "HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n",
      "malformed chunk": "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",
      "malformed answer header": "HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
      "the server switched protocols": "HTTP/1.1 101 Switching Protocols\r\nupgrade: h2c\r\n\r\n",
      "answer head too large": `HTTP/1.1 200 OK\r\nx-big: ${"a".repeat(20_000)}`
    }
    for (const [error, answer] of Object.entries(answers)) {
      const server = await serve(
        createTcpServer((socket) => socket.on("error", () => {}).once("data", () => socket.write(answer)))
      )
      try {
        assert.deepStrictEqual(await client().post(server.url, headers, "{}"), { error }, error)
        await sleep(20)
        assert.strictEqual(server.open(), 0, error)
      } finally {
        await server.close()
      }
    }
  })

  it("times out an answer that does not come, or does not end, and closes its connection", async () => {
    const silent = await raw(() => "silent")
    const trickle = await http((_, res) => {
      res.writeHead(200)
      const timer = setInterval(() => res.write("."), 50)
      res.on("close", () => clearInterval(timer))
    })
    try {
      const post = client(300).post
      assert.deepStrictEqual(await post(silent.url, headers, "{}"), { error: "no answer within 0.3 s" })
      assert.deepStrictEqual(await post(trickle.url, headers, "{}"), { error: "no answer within 0.3 s" })
      await sleep(50)
      assert.strictEqual(silent.open() + trickle.open(), 0)
    } finally {
      await Promise.all([silent.close(), trickle.close()])
    }
  })

  it("names a refused connection, and abandons a POST whose signal aborts", async () => {
    const gone = await raw(() => "silent")
    const url = gone.url
    await gone.close()
    assert.deepStrictEqual(await client().post(url, headers, "{}"), { error: "ECONNREFUSED" })
    const silent = await raw(() => "silent")
    try {
      const abort = new AbortController()
      let settled = false
      void client(200).post(silent.url, headers, "{}", abort.signal).then(() => (settled = true))
      await sleep(50)
      abort.abort()
      await sleep(300)
      assert.isFalse(settled, "an abandoned POST is left pending, even past its time-out")
      assert.strictEqual(silent.open(), 0)
    } finally {
      await silent.close()
    }
  })

  it("opens at most 64 connections to an origin; more POSTs wait for one", async () => {
    // The first 64 answers wait until all 64 have come; later ones are answered at once.
    const held: Array<ServerResponse> = []
    let released = false
    const server = await http((req, res) => {
      req.resume().on("end", () => {
        if (released) return res.writeHead(204).end()
        held.push(res)
        if (held.length < 64) return
        released = true
        setTimeout(() => held.splice(0).forEach((r) => r.writeHead(204).end()), 50)
      })
    })
    try {
      const post = client(5_000).post
      const outcomes = await Promise.all(Array.from({ length: 100 }, () => post(server.url, headers, "{}")))
      assert.isTrue(outcomes.every((o) => "status" in o && o.status === 204))
      assert.strictEqual(server.peak(), 64)
    } finally {
      held.forEach((r) => r.destroy())
      await server.close()
    }
  })

  it("speaks TLS, checks the certificate, and resumes its session on a new connection", async () => {
    const server = createHttpsServer(
      { key: testKey, cert: testCertificate },
      (_, res) => res.writeHead(204, { connection: "close" }).end()
    )
    const resumed: Array<boolean> = []
    server.on("secureConnection", (socket) => resumed.push(socket.isSessionReused()))
    const tls = await serve(server, "https:")
    try {
      assert.deepStrictEqual(await client().post(tls.url, headers, "{}"), { error: "DEPTH_ZERO_SELF_SIGNED_CERT" })
      const post = client(2_000, testCertificate).post
      assert.deepStrictEqual(await post(tls.url, headers, "{}"), { status: 204 })
      assert.deepStrictEqual(await post(tls.url, headers, "{}"), { status: 204 })
      const localhost = new URL(tls.url.href.replace("127.0.0.1", "localhost"))
      assert.deepStrictEqual(await post(localhost, headers, "{}"), { status: 204 })
      assert.deepStrictEqual(resumed, [false, true, false], "the refused handshake never got so far")
    } finally {
      await tls.close()
    }
  })
})

// A self-signed certificate for 127.0.0.1 and localhost, valid until 2126, for the TLS case only.
const testCertificate = `-----BEGIN CERTIFICATE-----
MIIBsTCCAVegAwIBAgIUFE6fkVBhxPC6DaBpv8588w1xVmUwCgYIKoZIzj0EAwIw
HzEdMBsGA1UEAwwUcGF5c3ViIHRlc3QgcmVjZWl2ZXIwIBcNMjYxMTI2MTAzMTUy
WhgPMjEyNjExMDIxMDMxNTJaMB8xHTAbBgNVBAMMFHBheXN1YiB0ZXN0IHJlY2Vp
dmVyMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE0X15OSGPEmW4Phjv5ugnFaNq
VIyuScrMoUeZ7YXh3+/gFTWl++CfJRnNobSXdVjUz4cGVQgBt+BblULP5ufoa6Nv
MG0wHQYDVR0OBBYEFK0SyUMgVQ1u8+E2tY7qguFh3YcYMB8GA1UdIwQYMBaAFK0S
yUMgVQ1u8+E2tY7qguFh3YcYMA8GA1UdEwEB/wQFMAMBAf8wGgYDVR0RBBMwEYcE
fwAAAYIJbG9jYWxob3N0MAoGCCqGSM49BAMCA0gAMEUCIH4GPJNQUPMVKJGc6EZx
br0ZzDwGQMpI6pWN7Q9BapWMAiEA8ssepl1jBy8Wdi4GfEo3k3xtqPwf6waL/AIX
EwXMMmM=
-----END CERTIFICATE-----
`
const testKey = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgPGnyCC+i0/buMhzN
3euBIinTBqHjZdlV7o0uthJJ4TahRANCAATRfXk5IY8SZbg+GO/m6CcVo2pUjK5J
ysyhR5ntheHf7+AVNaX74J8lGc2htJd1WNTPhwZVCAG34FuVQs/m5+hr
-----END PRIVATE KEY-----
`
