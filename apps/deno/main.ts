import { HttpServerResponse } from "@effect/platform"
import { Cause, Effect, Exit, ManagedRuntime } from "effect"
import { openNodeSqlite } from "../../adapters/sqlite/NodeSqlite.ts"
import { bundledWorker } from "../../adapters/thread/DeliveryThread.ts"
import { appLayer, serverOptions } from "../AppLayer.ts"
import { BodyTooLarge, RequestPipeline } from "../http/pipeline/Pipeline.ts"

// The same pipeline as the Node app, served by Deno.serve. Building it here starts the database, the
// migrations and the outbox worker before the port opens, as the Node app does.
const runtime = ManagedRuntime.make(appLayer({ openSqlite: openNodeSqlite }, bundledWorker(import.meta.url)))
const pipeline = await runtime.runPromise(RequestPipeline)
const { port } = await Effect.runPromise(serverOptions)

// A body is counted as it streams in and cut off past the limit (one without Content-Length too).
const readBody = async (request: Request, maxBytes: number) => {
  if (request.body === null) return ""
  const reader = request.body.getReader()
  const chunks: Array<Uint8Array> = []
  let size = 0
  for (let next = await reader.read(); !next.done; next = await reader.read()) {
    size += next.value.byteLength
    if (size > maxBytes) {
      await reader.cancel()
      throw new BodyTooLarge()
    }
    chunks.push(next.value)
  }
  return Buffer.concat(chunks).toString("utf8")
}

// Deno.serve's request.url is "http://" + the Host header + the target: with a Host that is no authority it does
// not parse, and the pipeline answers 400 host_invalid whatever the path.
// A CONNECT's target is the authority it names (the pipeline answers it 405, this service being no proxy).
const target = (request: Request) => {
  try {
    const url = new URL(request.url)
    return request.method === "CONNECT" ? url.host : `${url.pathname}${url.search}`
  } catch {
    return "/"
  }
}

const serve = (request: Request, info: Deno.ServeHandlerInfo<Deno.NetAddr>): Promise<Response> => {
  const fiber = pipeline({
    method: request.method,
    url: target(request),
    headers: Object.fromEntries(request.headers),
    remoteAddress: info.remoteAddr.hostname,
    httpVersion: "1.1",
    rawHeaders: () => [...request.headers].flat(),
    text: (maxBytes) => readBody(request, maxBytes)
  })
  return new Promise((resolve, reject) =>
    fiber.addObserver(Exit.match({
      onSuccess: (response) => resolve(HttpServerResponse.toWeb(response, { withoutBody: request.method === "HEAD" })),
      onFailure: (cause) => reject(Cause.squash(cause))
    }))
  )
}

const server = Deno.serve({
  port,
  hostname: "0.0.0.0",
  onListen: ({ port }) => console.log(`Listening on http://0.0.0.0:${port}`)
}, serve)

// Deno.serve's shutdown waits for every connection to finish, and a client that never finishes its request (or
// holds an upgrade it asked for) would hold it forever: after this long the process ends anyway.
const ShutdownGraceMs = 5_000
const shutdown = async () => {
  await Promise.race([server.shutdown(), new Promise((resolve) => setTimeout(resolve, ShutdownGraceMs))])
  await runtime.dispose()
  Deno.exit(0)
}
Deno.addSignalListener("SIGTERM", shutdown)
Deno.addSignalListener("SIGINT", shutdown)
