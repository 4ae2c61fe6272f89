// Development mailer: prints each mail to stdout instead of sending it, so the confirm link can be
// copied from the terminal. Never fails.
import { Console, Effect, Layer } from "effect"
import { type Mail, Mailer } from "../../core/subscriptions/Mailer.ts"

const rule = "=".repeat(72)

// One block per mail, printed with a single call so that concurrent sends do not interleave.
export const formatMail = (mail: Mail): string =>
  [
    `${rule} mail`,
    `To: ${mail.to.name} <${mail.to.address}>`,
    `Subject: ${mail.subject}`,
    ...Object.entries(mail.headers).map(([name, value]) => `${name}: ${value}`),
    "-".repeat(72),
    mail.text.trimEnd(),
    `${rule} end of mail`
  ].join("\n")

const layer: Layer.Layer<Mailer> = Layer.succeed(
  Mailer,
  Mailer.of({
    sendAll: (mails, report) =>
      Effect.forEach(mails, (mail, index) => Effect.map(Console.log(formatMail(mail)), () => report({ index })), {
        discard: true
      }).pipe(Effect.withSpan("ConsoleMailer.send"))
  })
)

export const ConsoleMailer = { layer, formatMail } as const
