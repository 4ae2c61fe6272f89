// Mailer over SMTP with nodemailer, on a pool of up to 128 connections (the outbox worker's concurrency): a
// connection per mail could not keep up with signups under load (docs/decisions/0032). A pooled connection that
// turns out dead fails its mail as a temporary failure, which the outbox retries.
import { Config, type ConfigError, Duration, Effect, Layer, Redacted } from "effect"
import { Readable } from "node:stream"
import nodemailer from "nodemailer"
import { MailDeliveryFailed } from "../../core/subscriptions/Errors.ts"
import { type Mail, Mailer, type MailerShape } from "../../core/subscriptions/Mailer.ts"
import { DefaultMailConcurrency } from "../../core/subscriptions/OutboxWorker.ts"
import { compose, parseSender } from "./MimeMessage.ts"

export interface SmtpMailerOptions {
  // smtp://user:pass@host:port or smtps://... (query parameters such as ?requireTLS=true go to nodemailer).
  readonly url: Redacted.Redacted<string>
  // The From header and envelope sender, e.g. "Newsletter <no-reply@example.com>".
  readonly from: string
  // Upper bound for one send, connection included. Defaults to SendTimeout.
  readonly timeout?: Duration.DurationInput
  // Connections kept to the server: as many as the outbox has mails in flight (MAIL_CONCURRENCY).
  readonly maxConnections?: number
}

// Each wait of the SMTP conversation (TCP connect, greeting, any reply) gives up after this: a server
// that is down or stuck fails the send fast and the outbox retries later.
export const ConnectionTimeout = Duration.seconds(10)
// The whole send. Below the outbox lease (60 s), so a slow server never makes a second worker send the
// same row while this one is still talking.
export const SendTimeout = Duration.seconds(25)

export const DefaultFrom = "Newsletter <no-reply@localhost>"

// Anything that leaves this module as text is scrubbed of the credentials in the URL.
const scrubberFor = (url: URL): (text: string) => string => {
  const secrets = new Set<string>()
  for (const raw of [url.password, url.username]) {
    if (raw === "") continue
    secrets.add(raw)
    try {
      secrets.add(decodeURIComponent(raw))
    } catch {
      // not valid percent-encoding: the raw form is all there is
    }
  }
  const ordered = [...secrets].sort((a, b) => b.length - a.length)
  return (text) => ordered.reduce((acc, secret) => acc.split(secret).join("***"), text)
}

const parseUrl = (url: Redacted.Redacted<string>): URL => {
  let parsed: URL
  try {
    parsed = new URL(Redacted.value(url))
  } catch {
    // The TypeError of URL carries the input, password included: it must not end up in a log.
    throw new Error("SMTP URL is not a valid URL (expected smtp://user:pass@host:port or smtps://...)")
  }
  if (parsed.protocol !== "smtp:" && parsed.protocol !== "smtps:") {
    throw new Error(`SMTP URL must start with smtp:// or smtps://, not ${parsed.protocol}//`)
  }
  if (parsed.hostname === "") throw new Error("SMTP URL has no host")
  return parsed
}

interface SmtpError {
  readonly code?: unknown
  readonly originalCode?: unknown
  readonly responseCode?: unknown
  readonly command?: unknown
  readonly response?: unknown
  readonly message?: unknown
}

// 5xx is a permanent reply, except 503 (bad sequence of commands: the session was in the wrong state, a new
// connection can do better). Replies about our own login are not about the message either: with wrong SMTP
// credentials every mail fails until an operator fixes them, and they should go out then, not be dropped.
export const isPermanent = (error: { readonly code?: unknown; readonly responseCode?: unknown }): boolean =>
  typeof error.responseCode === "number" &&
  error.responseCode >= 500 &&
  error.responseCode <= 599 &&
  error.responseCode !== 503 &&
  error.code !== "EAUTH" &&
  error.code !== "ENOAUTH"

const firstLine = (value: unknown): string | undefined => {
  if (typeof value !== "string") return undefined
  const line = value.split(/\r?\n/, 1)[0]!.trim()
  return line === "" ? undefined : line.length > 200 ? `${line.slice(0, 200)}...` : line
}

// Built from the parts of the error, never from the connection options.
export const describeFailure = (err: unknown): { readonly reason: string; readonly permanent: boolean } => {
  const e: SmtpError = typeof err === "object" && err !== null ? (err as SmtpError) : { message: String(err) }
  const parts = [
    typeof e.code === "string" ? e.code : undefined,
    typeof e.originalCode === "string" && e.originalCode !== e.code ? e.originalCode : undefined,
    typeof e.responseCode === "number" ? String(e.responseCode) : undefined,
    typeof e.command === "string" ? `at ${e.command}` : undefined
  ].filter((p): p is string => p !== undefined)
  const detail = firstLine(e.response) ?? firstLine(e.message) ?? "unknown error"
  return {
    reason: `SMTP ${parts.length > 0 ? `${parts.join(" ")}: ` : ""}${detail}`,
    permanent: isPermanent(e)
  }
}

// A composed message as nodemailer's pool takes a mail from nodemailer's own Mail pipeline: its envelope, its
// Message-ID and the message as a stream, each time the pool asks (a message requeued after its connection closed
// is read again). Handed to the pool's transport directly, a mail skips that pipeline (plugins, normalization, the
// MIME composer), which turned a raw message into a tree node and streamed it through five more streams
// (docs/decisions/0041). The pool, its connections and the SMTP conversation stay nodemailer's.
const pooled = (
  envelope: { readonly from: string; readonly to: ReadonlyArray<string> },
  message: { readonly raw: string; readonly messageId: string },
  signal: AbortSignal
) =>
  ({
    data: { signal },
    message: {
      getEnvelope: () => envelope,
      messageId: () => message.messageId,
      getHeader: (name: string) => (name.toLowerCase() === "message-id" ? message.messageId : undefined),
      createReadStream: () => Readable.from([Buffer.from(message.raw)], { objectMode: false })
    }
  }) as unknown as Parameters<ReturnType<typeof nodemailer.createTransport>["transporter"]["send"]>[0]

// What one send came to: nothing when the server took the mail, else why not (credentials scrubbed) and
// whether trying again can help.
export type SendFailure = { readonly reason: string; readonly permanent: boolean }

export interface SmtpSender {
  // Never rejects. An aborted `signal` abandons the send (nodemailer drops it from its queue, or ends its
  // conversation) and leaves its promise pending.
  readonly send: (mail: Mail, signal?: AbortSignal) => Promise<SendFailure | undefined>
  readonly close: () => void
  readonly host: string
}

// The sends without Effect: nodemailer's pool, one callback and one timer per mail. The delivery thread calls
// this for each of its jobs (adapters/thread/DeliveryWorker.ts), and the layer below wraps it. Run through Effect
// for each mail (a fiber, tryPromise with an AbortSignal, timeoutFail, a span) a send cost more CPU
// (docs/decisions/0033), which the thread paid for every mail.
// Throws, with a message that holds no credentials, when the URL or MAIL_FROM is not valid.
export const makeSender = (options: SmtpMailerOptions): SmtpSender => {
  const url = parseUrl(options.url)
  const sender = parseSender(options.from)
  const scrub = scrubberFor(url)
  const sendTimeout = options.timeout === undefined ? SendTimeout : Duration.decode(options.timeout)
  const sendTimeoutMs = Duration.toMillis(sendTimeout)
  // No single wait may outlast the whole send.
  const waitMs = Math.min(Duration.toMillis(ConnectionTimeout), sendTimeoutMs)
  const timedOut: SendFailure = {
    reason: `SMTP ETIMEDOUT: no answer within ${Duration.format(sendTimeout)}`,
    permanent: false
  }
  const failure = (err: unknown): SendFailure => {
    const { permanent, reason } = describeFailure(err)
    return { reason: scrub(reason), permanent }
  }

  let transport: ReturnType<typeof nodemailer.createTransport>
  try {
    transport = nodemailer.createTransport({
      url: Redacted.value(options.url),
      connectionTimeout: waitMs,
      greetingTimeout: waitMs,
      socketTimeout: waitMs,
      dnsTimeout: waitMs,
      pool: true,
      maxConnections: options.maxConnections ?? DefaultMailConcurrency,
      maxMessages: 1000,
      logger: false
    })
  } catch (err) {
    throw new Error(`could not create the SMTP transport: ${failure(err).reason}`)
  }

  const send = (mail: Mail, signal?: AbortSignal) =>
    new Promise<SendFailure | undefined>((resolve) => {
      const abort = new AbortController()
      // Settled first: aborting makes nodemailer call back at once, with its own "aborted".
      const timer = setTimeout(() => {
        resolve(timedOut)
        abort.abort()
      }, sendTimeoutMs)
      signal?.addEventListener("abort", () => {
        clearTimeout(timer)
        abort.abort()
      }, { once: true })
      const id = crypto.randomUUID()
      let message: ReturnType<typeof compose>
      try {
        message = compose(sender, mail, new Date(), id, `=_${crypto.randomUUID()}`)
      } catch {
        // Not expected (compose takes any strings); the same mail would fail again, so it is not retried.
        clearTimeout(timer)
        return resolve({ reason: "the mail could not be composed", permanent: true })
      }
      const envelope = { from: sender.address, to: [mail.to.address] }
      transport.transporter.send(pooled(envelope, message, abort.signal), (err, info) => {
        clearTimeout(timer)
        if (err !== null) return resolve(failure(err))
        // With one recipient a refusal is an error already; this catches a partial accept all the same.
        const rejected: ReadonlyArray<unknown> = Array.isArray(info.rejected) ? info.rejected : []
        if (rejected.length === 0) return resolve(undefined)
        const first: unknown = Array.isArray(info.rejectedErrors) ? info.rejectedErrors[0] : undefined
        resolve(failure(first ?? { code: "EENVELOPE", message: "recipient rejected" }))
      })
    })

  return { send, close: () => transport.close(), host: url.hostname }
}

// A bad URL or MAIL_FROM is a configuration bug: the layer dies, with a message that holds no credentials.
// An interrupted batch abandons the sends still going.
export const make = (options: SmtpMailerOptions) =>
  Effect.map(
    Effect.acquireRelease(Effect.sync(() => makeSender(options)), (sender) => Effect.sync(() => sender.close())),
    (sender) =>
      Mailer.of(
        {
          sendAll: (mails, report) =>
            Effect.async<void>((resume) => {
              let left = mails.length
              if (left === 0) return resume(Effect.void)
              const aborts = mails.map((mail, index) => {
                const abort = new AbortController()
                sender.send(mail, abort.signal).then((failed) => {
                  report(failed === undefined ? { index } : { index, failure: new MailDeliveryFailed(failed) })
                  if (--left === 0) resume(Effect.void)
                })
                return abort
              })
              return Effect.sync(() => {
                for (const abort of aborts) abort.abort()
              })
            }).pipe(
              Effect.withSpan("SmtpMailer.send", {
                attributes: { "smtp.host": sender.host, "mail.count": mails.length }
              })
            )
        } satisfies MailerShape
      )
  )

const layer = (options: SmtpMailerOptions): Layer.Layer<Mailer> => Layer.scoped(Mailer, make(options))

// Mails in flight at once, and so connections to the server (core/subscriptions/OutboxWorker.ts).
export const mailConcurrencyConfig = Config.integer("MAIL_CONCURRENCY").pipe(
  Config.validate({ message: "MAIL_CONCURRENCY must be at least 1", validation: (n) => n >= 1 }),
  Config.withDefault(DefaultMailConcurrency)
)

// SMTP_URL (secret), MAIL_FROM and MAIL_CONCURRENCY from the environment.
const config = Config.all({
  url: Config.redacted("SMTP_URL"),
  from: Config.string("MAIL_FROM").pipe(Config.withDefault(DefaultFrom)),
  maxConnections: mailConcurrencyConfig
})

const layerConfig: Layer.Layer<Mailer, ConfigError.ConfigError> = Layer.unwrapEffect(
  Effect.map(config, layer)
)

export const SmtpMailer = { layer, layerConfig, make, config } as const
