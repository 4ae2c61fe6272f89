// Reference 2: Fastify + better-sqlite3, doing the service's work for the benchmarked endpoints
// (bench/lib/reference.mjs), its confirmation mails included (bench/lib/outbox.mjs), with Fastify's own
// routing, JSON body parser and body limit. Env: PORT, DB_FILE, BASE_URL, SMTP_URL (no mail without it).
// With --postgres it is ref2-pg: the same server and code on PostgreSQL through pg; with --mariadb, ref2-mariadb:
// on MariaDB through mysql2 (env DATABASE_URL for both), as ref-node-http.mjs takes them.
import Fastify from "fastify"
import {
  acceptedBodies,
  announce,
  makeReference,
  MaxBodyBytes,
  mediaTypeOf,
  storageOf,
  when
} from "./lib/reference.mjs"

const port = Number(process.env.PORT ?? 3002)
const ref = await makeReference({
  ...storageOf(process.argv, "bench-ref-fastify.db"),
  baseUrl: process.env.BASE_URL ?? `http://localhost:${port}`,
  smtpUrl: process.env.SMTP_URL
})

const app = Fastify({
  logger: false,
  bodyLimit: MaxBodyBytes,
  requestTimeout: 30_000,
  http: { headersTimeout: 10_000, connectionsCheckingInterval: 1_000 }
})

// Browsers post forms: parsed as the service parses them.
app.addContentTypeParser(
  "application/x-www-form-urlencoded",
  { parseAs: "string" },
  (_request, body, done) => done(null, Object.fromEntries(new URLSearchParams(body)))
)

// r: an answer, or (PostgreSQL, MariaDB) a Promise of one, which the handler returns for Fastify to await.
const send = (reply, r) =>
  when(r, (r) => {
    reply.code(r.status).headers(r.headers).send(r.body === "" ? undefined : r.body)
  })

app.decorateRequest("requestId", "")
// As the service's edge: a body of another media type is a 415 before anything else.
app.addHook("onRequest", (request, reply, done) => {
  request.requestId = ref.requestIdOf(request.headers["x-request-id"])
  const hasBody = request.headers["transfer-encoding"] !== undefined ||
    Number(request.headers["content-length"] ?? 0) > 0
  if (hasBody && !acceptedBodies.includes(mediaTypeOf(request.headers["content-type"]))) {
    return send(
      reply,
      ref.error(
        "unsupported_media_type",
        `Content-Type must be one of ${acceptedBodies.join(", ")}.`,
        request.requestId
      )
    )
  }
  done()
})

// Fastify's own errors (unknown Content-Type, malformed JSON, body too large) leave in the service's shape.
app.setErrorHandler((error, request, reply) => {
  const id = request.requestId || ref.requestIdOf(undefined)
  if (error.statusCode === 415) {
    return send(
      reply,
      ref.error("unsupported_media_type", `Content-Type must be one of ${acceptedBodies.join(", ")}.`, id)
    )
  }
  if (error.statusCode === 413) return send(reply, ref.error("body_too_large", "The request body is too large.", id))
  if (error.statusCode === 400) {
    return send(reply, ref.error("body_invalid", "The request body could not be parsed as its Content-Type.", id))
  }
  console.error(error)
  return send(reply, ref.error("internal_error", "An internal error occurred.", id))
})
app.setNotFoundHandler((request, reply) =>
  send(reply, ref.error("route_not_found", "No such route.", request.requestId))
)

app.post("/subscribe", (request, reply) => send(reply, ref.subscribe(request.body ?? {}, request.requestId)))

app.post(
  "/merchant/transfers/payment",
  (request, reply) =>
    when(ref.authenticate(request.headers.authorization), (client) => {
      if (client === undefined) return send(reply, ref.unauthorized(request.requestId))
      if (mediaTypeOf(request.headers["content-type"]) !== "application/json") {
        return send(
          reply,
          ref.error("unsupported_media_type", "Content-Type must be application/json.", request.requestId)
        )
      }
      return send(
        reply,
        ref.createTransfer(client, request.body, request.requestId, request.headers["idempotency-key"])
      )
    })
)

app.get(
  "/merchant/transfers/payment/:id",
  (request, reply) =>
    when(ref.authenticate(request.headers.authorization), (client) => {
      if (client === undefined) return send(reply, ref.unauthorized(request.requestId))
      return send(
        reply,
        ref.getTransfer(client, request.params.id, request.headers["if-none-match"], request.requestId)
      )
    })
)

app.get("/healthz", (_request, reply) => {
  reply.header("content-type", "application/json").send("{\"status\":\"ok\"}")
})

await app.listen({ port, host: "0.0.0.0" })
announce(ref, port)
const stop = () => app.close().then(() => when(ref.close(), () => process.exit(0)))
process.on("SIGTERM", stop)
process.on("SIGINT", stop)
