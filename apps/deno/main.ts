import { HttpApiBuilder, HttpServer, HttpServerResponse } from "@effect/platform"
import { Cause, Context, Effect, Exit, Layer, ManagedRuntime } from "effect"
import { openNodeSqlite } from "../../adapters/sqlite/NodeSqlite.ts"
import { appLayer, serverOptions } from "../AppLayer.ts"
import { ClientAddress } from "../http/Edge.ts"
import { HotPath } from "../http/HotPath.ts"

// The same ApiLive as the Node app, served by Deno.serve through a web handler. The hot path
// (apps/http/HotPath.ts) is read from the same app: one memo map, so the web handler and the runtime below
// share one database, one outbox worker and one set of rate limiters.
const app = appLayer(openNodeSqlite)
const memoMap = Effect.runSync(Layer.makeMemoMap)
const { dispose, handler } = HttpApiBuilder.toWebHandler(Layer.mergeAll(app, HttpServer.layerContext), { memoMap })
const runtime = ManagedRuntime.make(app, memoMap)
const { maxBodyBytes, port } = await Effect.runPromise(serverOptions)

// A body without Content-Length is counted as it streams in and cut off past MAX_BODY_BYTES; the edge turns
// the failed read into a 413 (the Node app gets the same from @effect/platform-node's reader).
const limitBody = (request: Request): Request => {
  if (request.body === null || request.headers.has("content-length")) return request
  let seen = 0
  const counted = request.body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        seen += chunk.byteLength
        if (seen > maxBodyBytes) controller.error(new Error("maxBytes exceeded"))
        else controller.enqueue(chunk)
      }
    })
  )
  return new Request(request, { body: counted, duplex: "half" } as RequestInit)
}

// Building the app here starts the database, the migrations and the outbox worker before the port opens, as
// the Node app does; the web handler's first request then finds them in the memo map.
const hot = await runtime.runPromise(HotPath)
await handler(new Request(`http://localhost:${port}/healthz`))

// The requests the hot path takes are answered from its fiber, the others by the web handler. Both get the
// client's address from Deno.serve (the web handler as the edge's ClientAddress, a web Request has none), so
// that both draw from the same per-client rate-limit buckets.
const serve = (request: Request, info: Deno.ServeHandlerInfo<Deno.NetAddr>): Promise<Response> => {
  const url = new URL(request.url)
  const remoteAddress = info.remoteAddr.hostname
  const fiber = hot({
    method: request.method,
    url: `${url.pathname}${url.search}`,
    headers: Object.fromEntries(request.headers),
    remoteAddress,
    text: () => request.text()
  })
  if (fiber === undefined) return handler(limitBody(request), Context.make(ClientAddress, remoteAddress))
  return new Promise((resolve, reject) =>
    fiber.addObserver(Exit.match({
      onSuccess: (response) => resolve(HttpServerResponse.toWeb(response)),
      onFailure: (cause) => reject(Cause.squash(cause))
    }))
  )
}

const server = Deno.serve({
  port,
  hostname: "0.0.0.0",
  onListen: ({ port }) => console.log(`Listening on http://0.0.0.0:${port}`)
}, serve)

const shutdown = async () => {
  await server.shutdown()
  await dispose()
  await runtime.dispose()
  Deno.exit(0)
}
Deno.addSignalListener("SIGTERM", shutdown)
Deno.addSignalListener("SIGINT", shutdown)
