// Reference 1: plain node:http + better-sqlite3, doing the service's work for the benchmarked endpoints
// (bench/lib/reference.mjs), its confirmation mails included (bench/lib/outbox.mjs). Env: PORT, DB_FILE,
// BASE_URL, SMTP_URL (no mail without it).
// With --postgres it is ref-pg: the same server and code on PostgreSQL through pg; with --mariadb, ref-mariadb:
// on MariaDB through mysql2 (env DATABASE_URL for both).
import { createServer } from "node:http"
import {
  acceptedBodies,
  announce,
  makeReference,
  MaxBodyBytes,
  mediaTypeOf,
  storageOf,
  when
} from "./lib/reference.mjs"

const port = Number(process.env.PORT ?? 3001)
const ref = await makeReference({
  ...storageOf(process.argv, "bench-ref-node.db"),
  baseUrl: process.env.BASE_URL ?? `http://localhost:${port}`,
  smtpUrl: process.env.SMTP_URL
})

// r: an answer, or (PostgreSQL, MariaDB) a Promise of one.
const send = (res, r) =>
  when(r, (r) => {
    if (r.body !== "") r.headers["content-length"] = Buffer.byteLength(r.body)
    res.writeHead(r.status, r.headers)
    res.end(r.body)
  })

// The body as a string, at most MaxBodyBytes; undefined (and a 413 sent) when larger.
const readBody = (req, res, requestId, then) => {
  if (Number(req.headers["content-length"] ?? 0) > MaxBodyBytes) {
    req.resume()
    return send(res, ref.error("body_too_large", `The request body is larger than ${MaxBodyBytes} bytes.`, requestId))
  }
  const chunks = []
  let size = 0
  let tooLarge = false
  req.on("data", (chunk) => {
    size += chunk.length
    if (size > MaxBodyBytes) tooLarge = true
    else chunks.push(chunk)
  })
  req.on("end", () => {
    if (tooLarge) return send(res, ref.error("body_too_large", "The request body is too large.", requestId))
    then(Buffer.concat(chunks).toString("utf8"))
  })
}

const parse = (type, text) => {
  if (type === "application/x-www-form-urlencoded") return Object.fromEntries(new URLSearchParams(text))
  return JSON.parse(text)
}

const bodyInvalid = (requestId) =>
  ref.error("body_invalid", "The request body could not be parsed as its Content-Type.", requestId)

const server = createServer(
  { headersTimeout: 10_000, requestTimeout: 30_000, connectionsCheckingInterval: 1_000 },
  (req, res) => {
    const requestId = ref.requestIdOf(req.headers["x-request-id"])
    const q = req.url.indexOf("?")
    const path = q < 0 ? req.url : req.url.slice(0, q)
    const type = mediaTypeOf(req.headers["content-type"])
    const hasBody = req.headers["transfer-encoding"] !== undefined || Number(req.headers["content-length"] ?? 0) > 0
    if (hasBody && !acceptedBodies.includes(type)) {
      req.resume()
      return send(
        res,
        ref.error("unsupported_media_type", `Content-Type must be one of ${acceptedBodies.join(", ")}.`, requestId)
      )
    }
    if (path === "/subscribe" && req.method === "POST") {
      return readBody(req, res, requestId, (text) => {
        let body
        try {
          body = text === "" ? {} : parse(type, text)
        } catch {
          return send(res, bodyInvalid(requestId))
        }
        send(res, ref.subscribe(body, requestId))
      })
    }
    if (path === "/merchant/transfers/payment" && req.method === "POST") {
      return when(ref.authenticate(req.headers.authorization), (client) => {
        if (client === undefined) return (req.resume(), send(res, ref.unauthorized(requestId)))
        if (type !== "application/json") {
          req.resume()
          return send(res, ref.error("unsupported_media_type", "Content-Type must be application/json.", requestId))
        }
        return readBody(req, res, requestId, (text) => {
          let body
          try {
            body = JSON.parse(text)
          } catch {
            return send(res, bodyInvalid(requestId))
          }
          send(res, ref.createTransfer(client, body, requestId, req.headers["idempotency-key"]))
        })
      })
    }
    if (path.startsWith("/merchant/transfers/payment/") && req.method === "GET") {
      return when(ref.authenticate(req.headers.authorization), (client) => {
        if (client === undefined) return send(res, ref.unauthorized(requestId))
        const id = decodeURIComponent(path.slice("/merchant/transfers/payment/".length))
        return send(res, ref.getTransfer(client, id, req.headers["if-none-match"], requestId))
      })
    }
    if (path === "/healthz" && req.method === "GET") {
      return send(res, { status: 200, headers: { "content-type": "application/json" }, body: "{\"status\":\"ok\"}" })
    }
    req.resume()
    send(res, ref.error("route_not_found", "No such route.", requestId))
  }
)

server.listen(port, "0.0.0.0", () => announce(ref, port))
const stop = () => server.close(() => when(ref.close(), () => process.exit(0)))
process.on("SIGTERM", stop)
process.on("SIGINT", stop)
