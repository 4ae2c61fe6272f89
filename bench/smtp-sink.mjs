// A local SMTP server that accepts every mail and throws it away, counting them: the service's confirmation
// mails go somewhere real without printing anything. Run by bench/run.mjs as a child process (IPC): it sends
// {port} when listening and answers {type: "count"} with {count}. argv[2]: a port to listen on (default: any).
import { SMTPServer } from "smtp-server"

let count = 0
const server = new SMTPServer({
  authOptional: true,
  disabledCommands: ["STARTTLS", "AUTH"],
  logger: false,
  size: 1024 * 1024,
  onData(stream, _session, callback) {
    stream.on("end", () => {
      count += 1
      callback()
    })
    stream.resume()
  }
})
server.on("error", () => {})

server.listen(
  Number(process.argv[2] ?? 0),
  "127.0.0.1",
  () => process.send?.({ type: "listening", port: server.server.address().port })
)
process.on("message", (message) => {
  if (message?.type === "count") process.send?.({ type: "count", count })
})
process.on("disconnect", () => server.close(() => process.exit(0)))
process.on("SIGTERM", () => server.close(() => process.exit(0)))
