import { connect as netConnect, isIP, type LookupFunction, type Socket } from "node:net"
import { connect as tlsConnect } from "node:tls"
import { answerReader } from "./AnswerReader.ts"

// POSTs over kept-alive HTTP/1.1 connections, a pool per origin, for the webhook sender: all it needs of an
// answer is its status once the whole answer has arrived. node:http's client does much more per request
// (streams, events, an agent's bookkeeping), which made up most of a webhook's CPU (docs/decisions/0040).
//
// An answer is read as RFC 9112 frames it (AnswerReader.ts). A connection is kept for the next POST only when its
// answer ended cleanly, on HTTP/1.1 without `Connection: close`, with nothing after it; an idle connection that
// the server closes or writes to is dropped. A kept connection that closes before any byte of an answer (the
// server closed it as it was reused) is tried again once on a new one: a webhook is identified by its id, so a
// second copy is harmless.
export interface PostClientOptions {
  // Resolves host names for new connections (the sender's DNS rebinding guard).
  readonly lookup?: LookupFunction | undefined
  readonly timeoutMs: number
  // Certificate authorities to trust instead of the system's (a test's own).
  readonly ca?: string | undefined
}

// The answer's status, or why there is none: a network error's code, a time-out, or the answer's flaw.
export type Outcome = { readonly status: number } | { readonly error: string }

// Connections per origin; more POSTs wait for one. Idle ones are closed before a server's usual keep-alive
// time-out (Node's: 5 s), so that a reused connection is rarely one the server is closing.
const MaxConnections = 64
const IdleMs = 4_000

export const makePostClient = (options: PostClientOptions) => {
  interface Pool {
    readonly idle: Array<Idle>
    readonly waiting: Array<() => void>
    open: number
    // The last TLS session, to resume on the next connection.
    session?: Buffer
  }
  interface Idle {
    readonly socket: Socket
    // Stops watching the idle connection: it is about to carry a POST.
    readonly take: () => Socket
  }
  const pools = new Map<string, Pool>()
  const poolOf = (origin: string) => {
    let pool = pools.get(origin)
    if (pool === undefined) pools.set(origin, pool = { idle: [], waiting: [], open: 0 })
    return pool
  }

  const connect = (url: URL, pool: Pool): Socket => {
    const host = url.hostname.replace(/^\[|\]$/g, "")
    const port = Number(url.port || (url.protocol === "https:" ? 443 : 80))
    const lookup = options.lookup === undefined ? {} : { lookup: options.lookup }
    const socket = url.protocol === "https:"
      ? tlsConnect({
        host,
        port,
        ...lookup,
        ...(isIP(host) === 0 ? { servername: host.replace(/\.$/, "") } : {}),
        ...(pool.session === undefined ? {} : { session: pool.session }),
        ...(options.ca === undefined ? {} : { ca: options.ca }),
        ALPNProtocols: ["http/1.1"]
      }).on("session", (session: Buffer) => (pool.session = session))
      : netConnect({ host, port, ...lookup })
    socket.setNoDelay(true)
    // Errors end in "close", which every user of the connection watches.
    socket.on("error", () => {})
    socket.once("close", () => {
      pool.open--
      const at = pool.idle.findIndex((idle) => idle.socket === socket)
      if (at >= 0) pool.idle.splice(at, 1)
      pool.waiting.shift()?.()
    })
    return socket
  }

  // An idle connection is watched: bytes from the server, or its idle time running out, drop it.
  const park = (socket: Socket, pool: Pool) => {
    const drop = () => socket.destroy()
    socket.setTimeout(IdleMs, drop)
    socket.on("data", drop)
    pool.idle.push({
      socket,
      take: () => {
        socket.setTimeout(0)
        socket.off("timeout", drop)
        socket.off("data", drop)
        return socket
      }
    })
    pool.waiting.shift()?.()
  }

  // One POST on one connection, a kept one (`reused`) or a new one: `done` gets its outcome, or "again" when the
  // kept connection closed before any byte of an answer. Answers how to abandon it (its connection destroyed).
  const attempt = (
    url: URL,
    pool: Pool,
    request: string,
    reused: Socket | undefined,
    done: (outcome: Outcome | "again") => void
  ) => {
    const socket = reused ?? connect(url, pool)
    const answer = answerReader()
    let settled = false
    const settle = (outcome: Outcome | "again", keep = false) => {
      if (settled) return
      settled = true
      socket.off("data", onData)
      socket.off("error", onError)
      socket.off("close", onClose)
      if (keep) park(socket, pool)
      else socket.destroy()
      done(outcome)
    }
    const onData = (bytes: Buffer) => {
      const read = answer.feed(bytes.toString("latin1"))
      if (read === "more") return
      if ("error" in read) return settle(read)
      settle({ status: read.status }, read.keep)
    }
    const onError = (e: Error) => {
      if (reused !== undefined && !answer.started()) return settle("again")
      const code = (e as { code?: unknown }).code
      settle({ error: typeof code === "string" ? code : "network error" })
    }
    const onClose = () => {
      if (reused !== undefined && !answer.started()) return settle("again")
      const ended = answer.closed()
      settle(ended === undefined ? { error: "connection closed before the answer ended" } : { status: ended.status })
    }
    socket.on("data", onData)
    socket.on("error", onError)
    socket.on("close", onClose)
    socket.write(request)
    return () => {
      if (settled) return
      settled = true
      socket.destroy()
    }
  }

  // Gives `use` a connection for a POST: a kept one, or room for a new one (undefined), counted at once; once the
  // origin has MaxConnections, the first to come free. An abandoned POST passes its turn on.
  const connection = (pool: Pool, abandoned: () => boolean, use: (kept: Socket | undefined) => void): void => {
    if (pool.idle.length === 0 && pool.open >= MaxConnections) {
      pool.waiting.push(() => abandoned() ? pool.waiting.shift()?.() : connection(pool, abandoned, use))
      return
    }
    const kept = pool.idle.pop()
    if (kept === undefined) pool.open++
    use(kept?.take())
  }

  // POSTs `body` with the header lines `headers` ("name: value\r\n" each; Host and Content-Length are added):
  // the answer's status, or why there is none. Never rejects. Bounded by the time-out from the call, the wait for
  // a connection included; an aborted `signal` abandons it and leaves the promise pending.
  const post = (url: URL, headers: string, body: string, signal?: AbortSignal): Promise<Outcome> =>
    new Promise((resolve) => {
      const pool = poolOf(url.origin)
      const request = `POST ${url.pathname}${url.search} HTTP/1.1\r\nhost: ${url.host}\r\n${headers}content-length: ${
        Buffer.byteLength(body)
      }\r\n\r\n${body}`
      let finished = false
      let stop: (() => void) | undefined
      // The outcome, or undefined when abandoned.
      const finish = (outcome: Outcome | undefined) => {
        if (finished) return
        finished = true
        clearTimeout(timer)
        signal?.removeEventListener("abort", abandon)
        if (outcome === undefined) stop?.()
        else resolve(outcome)
      }
      const abandon = () => finish(undefined)
      const timer = setTimeout(() => {
        stop?.()
        finish({ error: `no answer within ${options.timeoutMs / 1000} s` })
      }, options.timeoutMs)
      signal?.addEventListener("abort", abandon, { once: true })
      const start = (again: boolean) =>
        connection(pool, () => finished, (kept) => {
          stop = attempt(url, pool, request, kept, (outcome) => {
            if (outcome !== "again") return finish(outcome)
            if (again) return finish({ error: "connection closed before the answer ended" })
            start(true)
          })
        })
      start(false)
    })

  return { post }
}
