import type { AddressInfo, Server, Socket } from "node:net"

// A server listening on 127.0.0.1 on a free port, with its connections counted: how many it accepted, how many
// are open, and the most open at once. `close` destroys the open ones and stops it.
export interface Listening {
  readonly origin: string
  readonly connections: () => number
  readonly open: () => number
  readonly peak: () => number
  readonly close: () => Promise<void>
}

export const listening = async (server: Server, protocol: "http:" | "https:" = "http:"): Promise<Listening> => {
  const sockets = new Set<Socket>()
  let connections = 0
  let peak = 0
  server.on(protocol === "https:" ? "secureConnection" : "connection", (socket: Socket) => {
    connections++
    sockets.add(socket)
    peak = Math.max(peak, sockets.size)
    socket.on("close", () => sockets.delete(socket))
  })
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok))
  return {
    origin: `${protocol}//127.0.0.1:${(server.address() as AddressInfo).port}`,
    connections: () => connections,
    open: () => sockets.size,
    peak: () => peak,
    close: () => {
      for (const socket of sockets) socket.destroy()
      return new Promise((ok) => server.close(() => ok()))
    }
  }
}
