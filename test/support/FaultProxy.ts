import { createServer, type Server, type Socket } from "node:net"
import { connect } from "node:net"

// A TCP proxy of the tests' own between the service and its database (PostgreSQL or MariaDB), which injects the
// network's faults:
// - blackHole(): every connection open now stops forwarding in both directions for good, and sends no RST, as
//   after a lost NAT entry or a failed-over host; connections made until heal() are accepted and forward nothing.
// - blackHoleOpen(): the connections open now are black-holed as above, and new ones are forwarded: the database
//   accepts new connections but not the pool's.
// - delay(ms): every chunk, in each direction, is forwarded `ms` late (in order), until heal().
// - resetInTransactions(): each connection is reset (RST on both sides) in its next transaction, until heal(): in a
//   transaction at the statement after the one that began it, unsent; otherwise just after a statement (a
//   transaction by itself) was sent, before its answer.
// heal() ends the fault for new connections, chunks and transactions; black-holed ones stay dead, as they would.
interface Link {
  readonly client: Socket
  readonly server: Socket
  readonly toServer: Delayed
  readonly toClient: Delayed
  dead: boolean
  inTransaction: boolean
}

// A direction of a link: chunks go out in order, each no earlier than it was given a time.
class Delayed {
  private readonly queue: Array<{ readonly at: number; readonly chunk: Buffer }> = []
  private timer: NodeJS.Timeout | undefined
  constructor(private readonly to: Socket) {}

  send(chunk: Buffer, delayMs: number) {
    if (delayMs === 0 && this.queue.length === 0) return void this.to.write(chunk)
    this.queue.push({ at: Date.now() + delayMs, chunk })
    this.pump()
  }

  private pump() {
    if (this.timer !== undefined) return
    const head = this.queue[0]
    if (head === undefined) return
    this.timer = setTimeout(() => {
      this.timer = undefined
      while (this.queue[0] !== undefined && this.queue[0].at <= Date.now()) this.to.write(this.queue.shift()!.chunk)
      this.pump()
    }, Math.max(0, head.at - Date.now()))
  }

  stop() {
    clearTimeout(this.timer)
    this.queue.length = 0
  }
}

// The text of a query sent in the simple way: PostgreSQL's Query message ('Q', then its length) or MariaDB's
// COM_QUERY (a 4-byte packet header, then 0x03): both put it at byte 5.
const queryText = (chunk: Buffer, protocol: Protocol) =>
  (protocol === "postgres" ? chunk[0] === 0x51 : chunk[4] === 0x03)
    ? chunk.subarray(5, 45).toString("latin1").toUpperCase()
    : ""
const begins = /^(BEGIN|START TRANSACTION|SET SESSION TRANSACTION)/
const ends = /^(COMMIT|ROLLBACK)/

export type Protocol = "postgres" | "mariadb"

export class FaultProxy {
  private readonly links = new Set<Link>()
  private mode: "forward" | "blackHole" | "reset" | "delay" = "forward"
  private delayMs = 0
  resets = 0

  private constructor(private readonly server: Server, readonly port: number, private readonly protocol: Protocol) {}

  static start(targetPort: number, options: { readonly protocol?: Protocol } = {}): Promise<FaultProxy> {
    const server = createServer({ noDelay: true })
    const proxy = new Promise<FaultProxy>((ok, fail) => {
      server.once("error", fail)
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        ok(
          new FaultProxy(
            server,
            typeof address === "object" && address ? address.port : 0,
            options.protocol ?? "postgres"
          )
        )
      })
    })
    return proxy.then((p) => {
      server.on("connection", (client) => p.accept(client, targetPort))
      return p
    })
  }

  private accept(client: Socket, targetPort: number) {
    const upstream = connect({ port: targetPort, host: "127.0.0.1", noDelay: true })
    const link: Link = {
      client,
      server: upstream,
      toServer: new Delayed(upstream),
      toClient: new Delayed(client),
      dead: this.mode === "blackHole",
      inTransaction: false
    }
    this.links.add(link)
    const drop = () => {
      this.links.delete(link)
      link.toServer.stop()
      link.toClient.stop()
      client.destroy()
      upstream.destroy()
    }
    client.on("error", drop)
    upstream.on("error", drop)
    client.on("close", () => link.dead || drop())
    upstream.on("close", () => link.dead || drop())
    client.on("data", (chunk: Buffer) => {
      if (link.dead) return
      if (this.mode === "reset" && link.inTransaction) return this.reset(link)
      // Out of a transaction, each statement is a transaction of its own: it is sent, and the connection reset after it.
      if (this.mode === "reset") {
        upstream.write(chunk)
        return void setImmediate(() => this.reset(link))
      }
      const text = queryText(chunk, this.protocol)
      if (begins.test(text)) link.inTransaction = true
      if (ends.test(text)) link.inTransaction = false
      link.toServer.send(chunk, this.mode === "delay" ? this.delayMs : 0)
    })
    upstream.on(
      "data",
      (chunk: Buffer) => link.dead || link.toClient.send(chunk, this.mode === "delay" ? this.delayMs : 0)
    )
  }

  private reset(link: Link) {
    if (!this.links.has(link)) return
    this.resets++
    this.links.delete(link)
    link.client.resetAndDestroy()
    link.server.resetAndDestroy()
  }

  blackHole(): void {
    this.mode = "blackHole"
    for (const link of this.links) link.dead = true
  }

  blackHoleOpen(): void {
    for (const link of this.links) link.dead = true
  }

  delay(ms: number): void {
    this.mode = "delay"
    this.delayMs = ms
  }

  resetInTransactions(): void {
    this.mode = "reset"
  }

  heal(): void {
    this.mode = "forward"
  }

  // Connections open now, black-holed ones included.
  get open(): number {
    return this.links.size
  }

  close(): Promise<void> {
    for (const link of this.links) {
      link.toServer.stop()
      link.toClient.stop()
      link.client.destroy()
      link.server.destroy()
    }
    return new Promise((ok) => this.server.close(() => ok()))
  }
}
