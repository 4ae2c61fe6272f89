// The SMTP sink of KillNine.test.ts, in a process of its own: it answers 250 as soon as a mail's data ended (no
// parsing), on an event loop that the test's 32 clients do not hold up, so that the window between receiving a
// mail and acknowledging it is the server's, not the busy test process's. It sends {port} once listening, then
// each mail's recipients with the time the data ended ({received: [{to, at}]}, at in ms since the epoch), a
// batch per turn of its event loop.
import { SMTPServer } from "smtp-server"

let batch = []
const server = new SMTPServer({
  disabledCommands: ["STARTTLS"],
  authOptional: true,
  allowInsecureAuth: true,
  disableReverseLookup: true,
  logger: false,
  onAuth: (auth, _session, callback) => callback(null, { user: auth.username ?? "" }),
  onData: (stream, session, callback) => {
    stream.resume()
    stream.on("end", () => {
      const at = performance.timeOrigin + performance.now()
      if (batch.length === 0) {
        setImmediate(() => {
          process.send({ received: batch })
          batch = []
        })
      }
      for (const to of session.envelope.rcptTo) batch.push({ to: to.address.toLowerCase(), at })
      callback()
    })
  }
})
server.on("error", () => {})
server.listen(0, "127.0.0.1", () => process.send({ port: server.server.address().port }))
process.on("disconnect", () => server.close(() => process.exit(0)))
