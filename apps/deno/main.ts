import { HttpApiBuilder, HttpServer } from "@effect/platform"
import { Effect, Layer } from "effect"
import { openNodeSqlite } from "../../adapters/sqlite/NodeSqlite.ts"
import { appLayer, serverOptions } from "../AppLayer.ts"

// The same ApiLive as the Node app, served by Deno.serve through a web handler.
const { dispose, handler } = HttpApiBuilder.toWebHandler(
  Layer.mergeAll(appLayer(openNodeSqlite), HttpServer.layerContext)
)
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

// The web handler builds its layers on the first request; one made here starts the database, the
// migrations and the outbox worker before the port opens, as the Node app does.
await handler(new Request(`http://localhost:${port}/healthz`))

const server = Deno.serve({
  port,
  hostname: "0.0.0.0",
  onListen: ({ port }) => console.log(`Listening on http://0.0.0.0:${port}`)
}, (request) => handler(limitBody(request)))

const shutdown = async () => {
  await server.shutdown()
  await dispose()
  Deno.exit(0)
}
Deno.addSignalListener("SIGTERM", shutdown)
Deno.addSignalListener("SIGINT", shutdown)
