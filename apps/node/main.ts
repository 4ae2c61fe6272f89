import { HttpApiBuilder, HttpServer } from "@effect/platform"
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Cause, Effect, Exit, Layer } from "effect"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import { openBetterSqlite3 } from "../../adapters/sqlite/BetterSqlite3.ts"
import { appLayer, serverOptions } from "../AppLayer.ts"
import type { RequestHeaders } from "../http/Caching.ts"
import { HotPath, type HotPathHandler } from "../http/HotPath.ts"

// Slow clients are cut off: headers must arrive within HEADERS_TIMEOUT_MS, the whole request within
// REQUEST_TIMEOUT_MS (Node checks both every second here, not every 30 s as by default).
// When a body passes MAX_BODY_BYTES, @effect/platform-node stops reading and destroys the request, which
// resets the socket before the 413 arrives. Here the rest of the body is read and discarded instead (never
// buffered; REQUEST_TIMEOUT_MS bounds it), so the client gets its 413 and the connection ends cleanly.
const answerBeforeClosing = (request: IncomingMessage, response: ServerResponse) => {
  const destroy = request.destroy.bind(request)
  request.destroy = (error?: Error) => response.headersSent ? destroy(error) : request.resume()
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

// The hot path (apps/http/HotPath.ts) answers the requests it takes before @effect/platform-node sees them;
// the rest go on to the HttpApi. Its answers are written the way @effect/platform-node writes them.
const readText = (request: IncomingMessage) =>
  new Promise<string>((resolve, reject) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
    request.on("error", reject)
    request.on("close", () => request.complete || reject(new Error("the client hung up")))
  })

const withHotPath = (server: Server, hot: HotPathHandler) => {
  const take = (request: IncomingMessage, response: ServerResponse) => {
    const answer = hot({
      method: request.method ?? "",
      url: request.url ?? "",
      headers: request.headers as RequestHeaders,
      remoteAddress: request.socket.remoteAddress,
      text: () => readText(request)
    })
    if (answer === undefined) return false
    answer.addObserver(Exit.match({
      onSuccess: (r) => {
        response.writeHead(r.status, r.headers)
        response.end(r.body._tag === "Uint8Array" ? r.body.body : undefined)
      },
      onFailure: (cause) => response.destroy(Cause.squash(cause) as Error)
    }))
    return true
  }
  const emit = server.emit.bind(server)
  server.emit =
    ((event: string, ...args: Array<any>) =>
      (event === "request" && take(args[0], args[1])) || emit(event, ...args)) as typeof server.emit
  return server
}

const ServerLive = Layer.unwrapEffect(
  Effect.gen(function*() {
    const options = yield* serverOptions
    const hot = yield* HotPath
    return NodeHttpServer.layer(
      () =>
        withHotPath(
          closeStragglersOnShutdown(createServer({
            headersTimeout: options.headersTimeoutMs,
            requestTimeout: options.requestTimeoutMs,
            connectionsCheckingInterval: 1_000
          }, answerBeforeClosing)),
          hot
        ),
      { port: options.port }
    )
  })
)

// The app (database, migrations, outbox worker) is built before the port opens: a request that arrives
// while the service starts waits in the kernel's queue instead of hanging on a server that cannot answer yet.
const HttpLive = HttpApiBuilder.serve().pipe(
  HttpServer.withLogAddress,
  Layer.provide(ServerLive),
  Layer.provide(appLayer(openBetterSqlite3))
)

NodeRuntime.runMain(Layer.launch(HttpLive))
