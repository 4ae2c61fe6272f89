// Bytes allocated on the JavaScript heap of this process's main thread over a window. V8 exposes no running total of allocated bytes, so a window takes it as the heap's
// growth plus what every collection in the window freed: v8.GCProfiler reports the used heap before and after
// each one. Exact to the object (a `{ a, b }` literal counts 40 bytes); Buffers' and other off-heap memory is
// not counted. Worker threads (the delivery thread) have their own heaps, not counted either.
//
// Preloaded into a server under test (`node --import ./bench/lib/heap-probe.mjs`, BENCH_HEAP_PROBE=SOCKET), it
// answers on that Unix socket: a line `start` opens a window, a line `stop` closes it and answers with
// `{"bytes":N,"collections":N}`. Nothing runs outside a window but the idle socket. With BENCH_LOOP_DELAY=on it also
// records the event loop's delays (perf_hooks, 5 ms resolution) from its start: a line `loop` answers
// `{"maxMs":N,"p99Ms":N}` since the previous `loop` and starts anew.
import { rmSync } from "node:fs"
import { connect, createServer } from "node:net"
import { monitorEventLoopDelay } from "node:perf_hooks"
import v8 from "node:v8"
import { isMainThread } from "node:worker_threads"

export const allocationMeter = () => {
  const profiler = new v8.GCProfiler()
  const usedAtStart = v8.getHeapStatistics().used_heap_size
  profiler.start()
  return {
    stop: () => {
      const used = v8.getHeapStatistics().used_heap_size
      const { statistics } = profiler.stop()
      const freed = statistics.reduce(
        (a, s) => a + s.beforeGC.heapStatistics.usedHeapSize - s.afterGC.heapStatistics.usedHeapSize,
        0
      )
      return {
        bytes: used - usedAtStart + freed,
        collections: statistics.length
      }
    }
  }
}

// A worker thread inherits `--import`, and would take the socket over from the main thread: only the main thread
// answers.
const socket = process.env.BENCH_HEAP_PROBE
if (isMainThread && socket !== undefined && socket !== "") {
  // A target started again on the same data (the large mode's restart) finds its predecessor's socket file.
  rmSync(socket, { force: true })
  let meter
  const loop = process.env.BENCH_LOOP_DELAY === "on" ? monitorEventLoopDelay({ resolution: 5 }) : undefined
  loop?.enable()
  createServer((connection) => {
    connection.setEncoding("utf8")
    connection.on("data", (line) => {
      if (line.trim() === "loop") {
        connection.end(`${JSON.stringify(loop ? { maxMs: loop.max / 1e6, p99Ms: loop.percentile(99) / 1e6 } : {})}\n`)
        loop?.reset()
      } else if (line.trim() === "start") {
        meter = allocationMeter()
        connection.end("{}\n")
      } else {
        connection.end(`${JSON.stringify(meter?.stop() ?? {})}\n`)
        meter = undefined
      }
    })
  }).listen(socket).unref()
}

// The harness's side: sends `command` to the probe at `socket`, resolves with its answer.
export const askProbe = (socket, command) =>
  new Promise((ok, fail) => {
    let answer = ""
    const c = connect(socket, () => c.write(`${command}\n`))
    c.setEncoding("utf8").on("data", (d) => (answer += d)).on("end", () => ok(JSON.parse(answer))).on("error", fail)
  })
