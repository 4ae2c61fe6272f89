// A side client for the large-data mode (bench/large.mjs), in its own process so that the load generator's work
// does not delay it: sends one request every `everyMs` whatever the earlier ones are doing (a server that stops
// answering shows as many slow requests, not as one), each path of its list in turn, and times each from when it
// was due. Started with fork(file, [baseUrl, everyMs, JSON of [{ path, headers }]]); `{ type: "take" }` answers
// `{ type: "latencies", byPath: { path: [ms...] }, late, failed }` with what finished since the last take. A
// request that got no answer (the connection refused, as before the server listens, or reset) is counted in
// `failed`, not timed.
import http from "node:http"

const [baseUrl, everyMs, requestsJson] = process.argv.slice(2)
const requests = JSON.parse(requestsJson)
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 })
const url = new URL(baseUrl)
let byPath = {}
// Requests not sent because 64 were still waiting: counted, and the server is then far past any bound.
let late = 0
let failed = 0
let outstanding = 0
let next = 0

const send = ({ path, headers = {} }, dueAt) => {
  outstanding++
  let over = false
  const done = () => {
    if (over) return
    over = true
    outstanding--
    ;(byPath[path] ??= []).push(performance.now() - dueAt)
  }
  const fail = () => {
    if (over) return
    over = true
    outstanding--
    failed++
  }
  http.get({ host: url.hostname, port: url.port, path, headers, agent }, (res) => {
    res.resume()
    res.on("end", done)
    res.on("error", fail)
  }).on("error", fail)
}

const started = performance.now()
let tick = 0
const loop = () => {
  const dueAt = started + tick * Number(everyMs)
  tick++
  if (outstanding < 64) send(requests[next++ % requests.length], dueAt)
  else late++
  setTimeout(loop, Math.max(0, started + tick * Number(everyMs) - performance.now()))
}
loop()

process.on("message", (m) => {
  if (m?.type !== "take") return
  process.send({ type: "latencies", byPath, late, failed })
  byPath = {}
  late = 0
  failed = 0
})
process.on("disconnect", () => process.exit(0))
