import { fork } from "node:child_process"
import { fileURLToPath } from "node:url"

export interface ReceivedMail {
  readonly to: string
  // ms since the epoch, when the mail's data ended at the sink.
  readonly at: number
  readonly mail: number
}

// The SMTP sink in a process of its own (smtp-sink-process.mjs), so that the test's clients do not hold up its
// answers: each copy's recipient and when it arrived, and the mails whose connection went on to a next MAIL
// FROM (the client had read their 250). `answerAfterMs` holds each 250 back that long, so that mails are in
// flight at any moment of a load.
export const startSmtpSink = async (answerAfterMs = 0) => {
  const received: Array<ReceivedMail> = []
  const followed = new Set<number>()
  const child = fork(fileURLToPath(new URL("./smtp-sink-process.mjs", import.meta.url)), [String(answerAfterMs)])
  const port = await new Promise<number>((ok, fail) => {
    child.once("error", fail)
    child.on("message", (message: { port?: number; received?: typeof received; followed?: Array<number> }) => {
      if (message.port !== undefined) ok(message.port)
      for (const r of message.received ?? []) received.push(r)
      for (const mail of message.followed ?? []) followed.add(mail)
    })
  })
  return {
    received,
    followed,
    url: `smtp://u:p@127.0.0.1:${port}`,
    stop: () => new Promise<void>((ok) => (child.once("exit", () => ok()), child.disconnect()))
  }
}
