import { HttpApiBuilder, HttpServer } from "@effect/platform"
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import { openBetterSqlite3 } from "../../adapters/sqlite/BetterSqlite3.ts"
import { appLayer, serverOptions } from "../AppLayer.ts"

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

const ServerLive = Layer.unwrapEffect(
  Effect.map(serverOptions, (options) =>
    NodeHttpServer.layer(
      () =>
        closeStragglersOnShutdown(createServer({
          headersTimeout: options.headersTimeoutMs,
          requestTimeout: options.requestTimeoutMs,
          connectionsCheckingInterval: 1_000
        }, answerBeforeClosing)),
      { port: options.port }
    ))
)

// The app (database, migrations, outbox worker) is built before the port opens: a request that arrives
// while the service starts waits in the kernel's queue instead of hanging on a server that cannot answer yet.
const HttpLive = HttpApiBuilder.serve().pipe(
  HttpServer.withLogAddress,
  Layer.provide(ServerLive),
  Layer.provide(appLayer(openBetterSqlite3))
)

NodeRuntime.runMain(Layer.launch(HttpLive))
