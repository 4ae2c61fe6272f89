import { connect, type Socket } from "node:net"

// The sockets of mysql2's pool, made here (its `stream` option) so that a dead connection is found without
// mysql2's internals, as PgDriver.ts does for PostgreSQL:
// - a connection that sent something and has had no byte back for `silentMs` is closed, and its command fails
//   with "Query read timeout" (mysql2 has no read time-out of its own; a lost NAT entry sends no RST);
// - a connection that dies so, or is reset, closes the others that await nothing (idle in the pool, or between
//   two statements): they went through the same network, and one black-holed while idle would be found dead only
//   by the next request to use it, `silentMs` later. Healthy ones closed so cost a connect each.
// Every socket has TCP keepalive, probing after `keepAliveMs` idle.
export interface WatchedSocketsOptions {
  readonly host: string
  readonly port: number
  readonly keepAliveMs: number
  readonly silentMs: number
}

export const ReadTimeoutMessage = "Query read timeout"

export const watchedSockets = (options: WatchedSocketsOptions): () => Socket => {
  const open = new Map<Socket, { answeredUpTo: number }>()
  const closing = new WeakSet<Socket>()
  const awaiting = (socket: Socket) => socket.bytesWritten > (open.get(socket)?.answeredUpTo ?? Infinity)
  const closeIdle = () => {
    for (const socket of open.keys()) {
      if (awaiting(socket)) continue
      closing.add(socket)
      socket.destroy()
    }
  }
  return () => {
    const socket = connect({ host: options.host, port: options.port, noDelay: true })
    socket.setKeepAlive(true, options.keepAliveMs)
    const state = { answeredUpTo: 0 }
    open.set(socket, state)
    socket.on("data", () => {
      state.answeredUpTo = socket.bytesWritten
    })
    socket.setTimeout(options.silentMs)
    socket.on("timeout", () => {
      if (awaiting(socket)) socket.destroy(new Error(ReadTimeoutMessage))
    })
    socket.on("error", () => {
      open.delete(socket)
      if (!closing.has(socket)) closeIdle()
    })
    socket.on("close", () => open.delete(socket))
    return socket
  }
}
