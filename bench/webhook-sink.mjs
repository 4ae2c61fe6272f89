// A local webhook receiver that answers 204 to every POST and counts them (the distinct webhook-ids too): the
// service's webhook deliveries go somewhere real. Run as a child process (IPC), like bench/smtp-sink.mjs: it
// sends {port} when listening and answers {type: "count"} with {count, distinct}. argv[2]: a port to listen on.
import { createServer } from "node:http"

let count = 0
const ids = new Set()
const server = createServer((request, response) => {
  request.resume()
  request.on("end", () => {
    count += 1
    ids.add(request.headers["webhook-id"])
    response.writeHead(204).end()
  })
})
server.keepAliveTimeout = 30_000
server.listen(
  Number(process.argv[2] ?? 0),
  "127.0.0.1",
  () => process.send?.({ type: "listening", port: server.address().port })
)
process.on("message", (message) => {
  if (message?.type === "count") process.send?.({ type: "count", count, distinct: ids.size })
})
process.on("disconnect", () => process.exit(0))
process.on("SIGTERM", () => process.exit(0))
