// What the in-process benches share (bench/pipeline.ts, bench/deliveries.ts, bench/hooks-e2e.ts): a request handed
// to the pipeline as the Node app would hand it, and the webhook receiver on the other CPUs with this process on
// the first, as `npm run bench -- --pin` has them.
import { execFileSync, fork } from "node:child_process"
import os from "node:os"
import { join } from "node:path"
import type { IncomingRequest } from "../../apps/http/pipeline/Pipeline.ts"

export const pipelineRequest = (
  method: string,
  url: string,
  headers: Record<string, string>,
  body = ""
): IncomingRequest => ({
  method,
  url,
  headers: {
    host: "localhost",
    ...(body === "" ? {} : { "content-length": String(Buffer.byteLength(body)) }),
    ...headers
  },
  remoteAddress: "127.0.0.1",
  httpVersion: "1.1",
  rawHeaders: () => [],
  text: () => Promise.resolve(body)
})

// bench/webhook-sink.mjs as a child process, pinned to the CPUs after the first, and this process (all its threads)
// pinned to the first: the sink's port, and how many deliveries it has counted.
export const startPinnedSink = () =>
  new Promise<{ port: number; count: () => Promise<number>; stop: () => void }>((ok) => {
    const child = fork(join(import.meta.dirname, "../webhook-sink.mjs"), [], {
      stdio: ["ignore", "ignore", "inherit", "ipc"]
    })
    child.on("message", (m: any) => {
      if (m?.type !== "listening") return
      execFileSync("taskset", ["-a", "-p", "-c", `1-${os.cpus().length - 1}`, String(child.pid)])
      execFileSync("taskset", ["-a", "-p", "-c", "0", String(process.pid)])
      ok({
        port: m.port,
        count: () =>
          new Promise((res) => {
            const on = (r: any) => {
              if (r?.type !== "count") return
              child.off("message", on)
              res(r.count)
            }
            child.on("message", on)
            child.send({ type: "count" })
          }),
        stop: () => child.kill()
      })
    })
  })
