import { createServer, type Server, type Socket } from "node:net"
import { connect } from "node:net"

// A TCP proxy of the tests' own between the service and its database, which injects the network's faults:
// - blackHole(): every connection open now stops forwarding in both directions for good, and sends no RST, as
//   after a lost NAT entry or a failed-over host; connections made until heal() are accepted and forward nothing.
// - resetInTransactions(): each connection is reset (RST on both sides) in its next transaction, until heal(): in a
//   BEGIN ... COMMIT at the statement after BEGIN, unsent; otherwise just after a statement (a transaction by itself)
//   was sent, before its answer.
// heal() ends the fault for new connections and transactions; black-holed ones stay dead, as they would.
interface Link {
  readonly client: Socket
  readonly server: Socket
  dead: boolean
  inTransaction: boolean
}

export class FaultProxy {
  private readonly links = new Set<Link>()
  private mode: "forward" | "blackHole" | "reset" = "forward"
  resets = 0

  private constructor(private readonly server: Server, readonly port: number) {}

  static start(targetPort: number, targetHost = "127.0.0.1"): Promise<FaultProxy> {
    const server = createServer({ noDelay: true })
    const proxy = new Promise<FaultProxy>((ok, fail) => {
      server.once("error", fail)
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        ok(new FaultProxy(server, typeof address === "object" && address ? address.port : 0))
      })
    })
    return proxy.then((p) => {
      server.on("connection", (client) => p.accept(client, targetPort, targetHost))
      return p
    })
  }

  private accept(client: Socket, targetPort: number, targetHost: string) {
    const upstream = connect({ port: targetPort, host: targetHost, noDelay: true })
    const link: Link = { client, server: upstream, dead: this.mode === "blackHole", inTransaction: false }
    this.links.add(link)
    const drop = () => {
      this.links.delete(link)
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
      // Out of a BEGIN, each statement is a transaction of its own: it is sent, and the connection reset after it.
      if (this.mode === "reset") {
        upstream.write(chunk)
        return void setImmediate(() => this.reset(link))
      }
      // A simple-protocol Query message ('Q') whose text is BEGIN.
      if (chunk[0] === 0x51 && chunk.subarray(5, 10).toString("latin1") === "BEGIN") link.inTransaction = true
      if (chunk[0] === 0x51 && /^(COMMIT|ROLLBACK)/.test(chunk.subarray(5, 13).toString("latin1"))) {
        link.inTransaction = false
      }
      upstream.write(chunk)
    })
    upstream.on("data", (chunk: Buffer) => link.dead || client.write(chunk))
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
      link.client.destroy()
      link.server.destroy()
    }
    return new Promise((ok) => this.server.close(() => ok()))
  }
}
