// The SMTP sink of KillNine.test.ts, in a process of its own: it answers 250 as soon as a mail's data ended (no
// parsing), on an event loop that the test's 32 clients do not hold up, so that the window between receiving a
// mail and acknowledging it is the server's, not the busy test process's. It sends {port} once listening, then
// each mail's recipients with the time the data ended and the mail's number ({received: [{to, at, mail}]}, at in
// ms since the epoch), and the numbers of the mails whose connection went on to a next MAIL FROM ({followed}):
// SMTP is lock-step, so the client had read those mails' 250. Batched per turn of its event loop.
import { SMTPServer } from "smtp-server"

// How long each 250 is held back (argv, default none).
const answerAfterMs = Number(process.argv[2] ?? 0)
let received = []
let followed = []
let mails = 0
// Each connection's last mail, by session id, until the connection's next MAIL FROM or its end.
const last = new Map()
const flush = () => {
  if (received.length + followed.length === 0) {
    setImmediate(() => {
      process.send({ received, followed })
      received = []
      followed = []
    })
  }
}
const server = new SMTPServer({
  disabledCommands: ["STARTTLS"],
  authOptional: true,
  allowInsecureAuth: true,
  disableReverseLookup: true,
  logger: false,
  onAuth: (auth, _session, callback) => callback(null, { user: auth.username ?? "" }),
  onMailFrom: (_address, session, callback) => {
    const before = last.get(session.id)
    if (before !== undefined) {
      flush()
      followed.push(before)
      last.delete(session.id)
    }
    callback()
  },
  onClose: (session) => last.delete(session.id),
  onData: (stream, session, callback) => {
    stream.resume()
    stream.on("end", () => {
      const at = performance.timeOrigin + performance.now()
      const mail = mails++
      flush()
      for (const to of session.envelope.rcptTo) received.push({ to: to.address.toLowerCase(), at, mail })
      last.set(session.id, mail)
      if (answerAfterMs > 0) setTimeout(callback, answerAfterMs)
      else callback()
    })
  }
})
server.on("error", () => {})
server.listen(0, "127.0.0.1", () => process.send({ port: server.server.address().port }))
process.on("disconnect", () => server.close(() => process.exit(0)))
