// The access lines, one per request, written in batches: the lines of one turn of the event loop leave in one
// write to stdout (a write per request cost about as much CPU as the rest of a 304; docs/decisions/0030). The
// JSON lines have the shape of Effect's JSON logger, so one parser reads every line the service writes; the
// text lines look like the other text log lines.
let pending: Array<string> = []
let scheduled = false

const flush = () => {
  scheduled = false
  if (pending.length === 0) return
  const text = `${pending.join("\n")}\n`
  pending = []
  process.stdout.write(text)
}
// A process that exits (SIGTERM after a graceful shutdown) still writes the last lines.
process.once("exit", flush)

const write = (line: string) => {
  pending.push(line)
  if (!scheduled) {
    scheduled = true
    setImmediate(flush)
  }
}

export interface AccessEntry {
  readonly fiberId: number
  readonly method: string
  readonly route: string
  readonly status: number
  readonly durationMs: number
  readonly requestId: string
  readonly clientId: string
}

// The lines of one millisecond share its timestamp, made once.
let stampedAt = Number.NaN
let stamp = ""
const timestamp = () => {
  const now = Date.now()
  if (now !== stampedAt) {
    stampedAt = now
    stamp = new Date(now).toISOString()
  }
  return stamp
}

export const writeAccessLine = (entry: AccessEntry, format: "json" | "text") => {
  const now = timestamp()
  const message = `${entry.method} ${entry.route} ${entry.status} ${entry.durationMs} ms`
  const client = entry.clientId === "" ? "" : entry.clientId
  if (format === "json") {
    write(JSON.stringify({
      message,
      logLevel: "INFO",
      timestamp: now,
      annotations: {
        method: entry.method,
        route: entry.route,
        status: entry.status,
        duration_ms: entry.durationMs,
        request_id: entry.requestId,
        ...(client === "" ? {} : { client_id: client })
      },
      spans: {},
      fiberId: `#${entry.fiberId}`
    }))
  } else {
    write(
      `[${now.slice(11, 23)}] INFO (#${entry.fiberId}): ${message} request_id=${entry.requestId}${
        client === "" ? "" : ` client_id=${client}`
      }`
    )
  }
}
