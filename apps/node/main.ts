import "./SupportedNode.ts"
import { Cookies, type HttpServerResponse } from "@effect/platform"
import { NodeRuntime } from "@effect/platform-node"
import { Cause, Effect, FiberId, Layer, Stream } from "effect"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import { type Duplex, Readable } from "node:stream"
import { openBetterSqlite3 } from "../../adapters/sqlite/BetterSqlite3.ts"
import { bundledWorker } from "../../adapters/thread/DeliveryThread.ts"
import { SiteSettings } from "../../core/shared/SiteSettings.ts"
import { appLayer, serverOptions } from "../AppLayer.ts"
import type { RequestHeaders } from "../http/pipeline/Caching.ts"
import { BodyTooLarge, type IncomingRequest, type Pipeline, RequestPipeline } from "../http/pipeline/Pipeline.ts"
import { answerClientError, answerOnSocket, refuseExpectation, refuseUpgrade } from "./RawAnswers.ts"

// The body, never more than maxBytes of it buffered. Past the limit the rest is read and discarded (the request
// timeout bounds it), so the client gets its 413 and the connection ends cleanly instead of being reset.
const readBody = (request: IncomingMessage, maxBytes: number) =>
  new Promise<string>((resolve, reject) => {
    const chunks: Array<Buffer> = []
    let size = 0
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size <= maxBytes) return void chunks.push(chunk)
      request.removeListener("data", onData)
      request.resume()
      reject(new BodyTooLarge())
    }
    request.on("data", onData)
    request.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
    request.on("error", reject)
    request.on("close", () => request.complete || reject(new Error("the client hung up")))
  })

// The request as the pipeline reads it: a class, so a request costs one object and no closures.
class NodeRequest implements IncomingRequest {
  readonly method: string
  readonly url: string
  readonly headers: RequestHeaders
  readonly httpVersion: string
  readonly #request: IncomingMessage
  readonly #body: ((maxBytes: number) => Promise<string>) | undefined
  constructor(request: IncomingMessage, body?: (maxBytes: number) => Promise<string>) {
    this.method = request.method ?? "GET"
    this.url = request.url ?? "/"
    this.headers = request.headers as RequestHeaders
    this.httpVersion = request.httpVersion
    this.#request = request
    this.#body = body
  }
  get remoteAddress() {
    return this.#request.socket.remoteAddress
  }
  rawHeaders() {
    return this.#request.rawHeaders
  }
  text(maxBytes: number) {
    return this.#body === undefined ? readBody(this.#request, maxBytes) : this.#body(maxBytes)
  }
}

// What follows a CONNECT's head is the tunnel's bytes, not a body.
const noBody = () => Promise.resolve("")

const write = (method: string, response: ServerResponse, answer: HttpServerResponse.HttpServerResponse) => {
  const headers = Cookies.isEmpty(answer.cookies)
    ? answer.headers
    : { ...answer.headers, "set-cookie": Cookies.toSetCookieHeaders(answer.cookies) }
  response.writeHead(answer.status, headers)
  const body = answer.body
  if (method === "HEAD") return response.end()
  switch (body._tag) {
    case "Uint8Array":
      return response.end(body.body)
    case "Raw":
      return response.end(body.body as string)
    case "Stream":
      return void Readable.fromWeb(Stream.toReadableStream(body.stream) as any).pipe(response)
    default:
      return response.end()
  }
}

// Every request goes through the pipeline. Its fiber is usually done before this returns (nothing had to
// wait), and then the answer is written at once; a client that goes away interrupts the fiber still running.
// The pipeline turns every error into an answer; should anything still throw here, it is logged and answered
// 500 (or the connection closed, when the head is out), and the process serves on.
const failed = (response: ServerResponse, error: unknown) => {
  Effect.runFork(Effect.logError("request failed outside the pipeline", Cause.die(error)))
  if (response.headersSent) return void response.destroy()
  response.writeHead(500, { "content-type": "application/json" })
  response.end(JSON.stringify({
    error: { type: "api_error", code: "internal_error", message: "An internal error occurred." }
  }))
}

const answer = (pipeline: Pipeline) => (request: IncomingMessage, response: ServerResponse) => {
  let fiber: ReturnType<Pipeline>
  try {
    fiber = pipeline(new NodeRequest(request))
  } catch (error) {
    return failed(response, error)
  }
  const method = request.method ?? "GET"
  fiber.addObserver((exit) => {
    if (exit._tag === "Failure") return void response.destroy(Cause.squash(exit.cause) as Error)
    try {
      write(method, response, exit.value)
    } catch (error) {
      failed(response, error)
    }
  })
  // A fiber already done has its answer written: only one still running waits for the client to go away.
  if (fiber.unsafePoll() === null) {
    response.once("close", () => response.writableFinished || fiber.unsafeInterruptAsFork(FiberId.none))
  }
}

// A client that keeps trickling bytes would hold a graceful shutdown forever (Node stops enforcing its time-outs
// once the server closes): after SIGTERM/SIGINT, connections still open after this long are closed.
const ShutdownGraceMs = 5_000
const closeStragglersOnShutdown = (server: Server) => {
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    process.once(signal, () => void setTimeout(() => server.closeAllConnections(), ShutdownGraceMs).unref())
  }
  return server
}

// Slow clients are cut off: headers must arrive within HEADERS_TIMEOUT_MS, the whole request within
// REQUEST_TIMEOUT_MS (Node checks both every second here, not every 30 s as by default).
const ServerLive = Layer.scopedDiscard(Effect.gen(function*() {
  const options = yield* serverOptions
  const { baseUrl } = yield* SiteSettings
  const pipeline = yield* RequestPipeline
  const server = closeStragglersOnShutdown(createServer({
    headersTimeout: options.headersTimeoutMs,
    requestTimeout: options.requestTimeoutMs,
    connectionsCheckingInterval: 1_000
  }, answer(pipeline)))
  // An upgraded socket leaves the server's time-outs and closeAllConnections: none is kept.
  server.on("upgrade", refuseUpgrade(baseUrl))
  // Node hands CONNECT to this event with the bare socket (without a listener it closes the socket unanswered):
  // the pipeline answers it like any request.
  server.on("connect", (request: IncomingMessage, socket: Duplex) => {
    try {
      answerOnSocket(pipeline(new NodeRequest(request, noBody)), request.method ?? "CONNECT", socket)
    } catch (error) {
      Effect.runFork(Effect.logError("request failed outside the pipeline", Cause.die(error)))
      socket.destroy()
    }
  })
  server.on("clientError", answerClientError(baseUrl))
  server.on("checkExpectation", refuseExpectation(baseUrl))
  yield* Effect.acquireRelease(
    Effect.async<void>((resume) => {
      server.once("error", (error) => resume(Effect.die(error)))
      server.listen(options.port, () => resume(Effect.void))
    }),
    () => Effect.async<void>((resume) => void server.close(() => resume(Effect.void)))
  )
  yield* Effect.log(`Listening on http://localhost:${options.port}`)
}))

// The app (database, migrations, outbox worker) is built before the port opens: a request that arrives
// while the service starts waits in the kernel's queue instead of hanging on a server that cannot answer yet.
NodeRuntime.runMain(
  Layer.launch(
    ServerLive.pipe(Layer.provide(appLayer({ openSqlite: openBetterSqlite3 }, bundledWorker(import.meta.url))))
  )
)
