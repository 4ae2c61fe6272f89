import { assert, describe, it } from "@effect/vitest"
import {
  Cause,
  ConfigProvider,
  type Console,
  Context,
  DateTime,
  Effect,
  Exit,
  Fiber,
  Layer,
  Redacted,
  type Scope
} from "effect"
import { randomBytes } from "node:crypto"
import net from "node:net"
import { ConsoleMailer } from "../../adapters/mail/ConsoleMailer.ts"
import { MemoryMailer } from "../../adapters/mail/MemoryMailer.ts"
import { describeFailure, SmtpMailer } from "../../adapters/mail/SmtpMailer.ts"
import { Email } from "../../core/shared/Email.ts"
import { confirmationMail, confirmUrl, unsubscribeUrl } from "../../core/subscriptions/ConfirmationMail.ts"
import type { MailDeliveryFailed } from "../../core/subscriptions/Errors.ts"
import { FeedName } from "../../core/subscriptions/Feed.ts"
import { type Mail, Mailer } from "../../core/subscriptions/Mailer.ts"
import { SubscriberName, Subscription, SubscriptionId } from "../../core/subscriptions/Subscription.ts"
import { Token } from "../../core/subscriptions/Token.ts"
import {
  type ReceivedMail,
  SmtpTestServer,
  type SmtpTestServerOptions,
  startServer,
  stopServer
} from "../support/SmtpTestServer.ts"
import { Inbox, mailerContract, sampleMail, sendOne } from "./Mailer.contract.ts"

const From = "Engines Newsletter <news@example.com>"
// Characters that need percent-encoding in a URL, so both the raw and the encoded form are checked.
const Password = "s3cr3t/P@ss:w0rd%!"
const EncodedPassword = encodeURIComponent(Password)

// What an SMTP server received, as the Mail the contract compares with.
const asMail = (received: ReceivedMail): Mail => {
  const to = received.parsed.to
  const first = (Array.isArray(to) ? to[0] : to)?.value[0]
  return {
    to: { name: first?.name ?? "", address: first?.address ?? "" },
    subject: received.subject ?? "",
    text: received.text ?? "",
    html: received.html ?? "",
    headers: received.headers
  }
}

const smtpMailer = (server: SmtpTestServer) =>
  Layer.build(SmtpMailer.layer({ url: Redacted.make(server.url), from: From })).pipe(
    Effect.map((context) => Context.get(context, Mailer))
  )

const withSmtp = (
  options: SmtpTestServerOptions = {}
): Effect.Effect<{ readonly server: SmtpTestServer; readonly mailer: Mailer["Type"] }, never, Scope.Scope> =>
  Effect.gen(function*() {
    const server = yield* SmtpTestServer.scoped({ pass: Password, ...options })
    const mailer = yield* smtpMailer(server)
    return { server, mailer }
  })

const assertNoSecret = (error: MailDeliveryFailed) => {
  for (const text of [error.reason, String(error), JSON.stringify(error)]) {
    assert.notInclude(text, Password)
    assert.notInclude(text, EncodedPassword)
  }
}

const token = () => Token.make(randomBytes(32).toString("base64url"))

const subscriberMail = (email = "ada@example.com") => {
  const now = DateTime.unsafeNow()
  const subscription = new Subscription({
    id: SubscriptionId.make(7),
    name: SubscriberName.make("Ada Lovelace"),
    email: Email.make(email),
    feed: FeedName.make("engines"),
    status: "pending",
    createdAt: now,
    updatedAt: now
  })
  const confirmToken = token()
  const unsubscribeToken = token()
  const baseUrl = "https://newsletter.example.com"
  const mail = confirmationMail({
    baseUrl,
    subscription,
    feedTitle: "Analytical Engines",
    confirmToken,
    unsubscribeToken
  })
  return {
    mail,
    confirm: confirmUrl(baseUrl, confirmToken),
    unsubscribe: unsubscribeUrl(baseUrl, unsubscribeToken)
  }
}

// ---------------------------------------------------------------------------------------------------------
// The contract, against every adapter that delivers.

mailerContract("MemoryMailer", () =>
  Layer.effect(
    Inbox,
    Effect.map(MemoryMailer, (memory) => ({ received: memory.sent }))
  ).pipe(Layer.provideMerge(MemoryMailer.layer)))

mailerContract("SmtpMailer over a real SMTP server", () =>
  Layer.unwrapScoped(
    Effect.map(SmtpTestServer.scoped({ pass: Password }), (server) =>
      Layer.merge(
        SmtpMailer.layer({ url: Redacted.make(server.url), from: From }),
        Layer.succeed(Inbox, { received: Effect.sync(() => server.messages.map(asMail)) })
      ))
  ))

// ---------------------------------------------------------------------------------------------------------

describe("SmtpMailer", () => {
  it.scoped("delivers a confirmation mail with List-Unsubscribe headers and the confirm link", () =>
    Effect.gen(function*() {
      const { server, mailer } = yield* withSmtp()
      const { mail, confirm, unsubscribe } = subscriberMail("ada@example.com")

      yield* sendOne(mailer, mail)

      const received = yield* Effect.promise(() => server.waitFor((m) => m.envelope.to.includes("ada@example.com")))
      assert.deepStrictEqual(received.envelope, { from: "news@example.com", to: ["ada@example.com"] })
      assert.strictEqual(received.user, "user", "logged in with the user from the URL")
      assert.deepStrictEqual(server.logins, [{ user: "user", pass: Password }])

      const to = received.parsed.to
      assert.deepStrictEqual(Array.isArray(to) ? undefined : to?.value, [{
        name: "Ada Lovelace",
        address: "ada@example.com"
      }])
      assert.deepStrictEqual(received.parsed.from?.value, [{ name: "Engines Newsletter", address: "news@example.com" }])
      assert.strictEqual(received.subject, "Confirm your subscription to Analytical Engines")

      assert.strictEqual(received.headers["list-unsubscribe"], `<${unsubscribe}>`)
      assert.strictEqual(received.headers["list-unsubscribe-post"], "List-Unsubscribe=One-Click")
      // mailparser's own reading of the List-* headers agrees.
      const list = received.parsed.headers.get("list") as { unsubscribe?: { url?: string } } | undefined
      assert.strictEqual(list?.unsubscribe?.url, unsubscribe)

      assert.include(received.text ?? "", confirm)
      assert.include(received.html ?? "", `href="${confirm}"`)
      assert.include(received.text ?? "", unsubscribe)
    }))

  it.scoped("fails with a transient MailDeliveryFailed while the server is down, and delivers once it is back", () =>
    Effect.gen(function*() {
      const { server, mailer } = yield* withSmtp()
      const { mail } = subscriberMail()

      yield* stopServer(server)
      const error = yield* Effect.flip(sendOne(mailer, mail))
      assert.strictEqual(error._tag, "MailDeliveryFailed")
      assert.isFalse(error.permanent)
      assert.include(error.reason, "ECONNREFUSED")
      assertNoSecret(error)

      yield* startServer(server)
      yield* sendOne(mailer, mail)
      assert.lengthOf(server.messages, 1)
    }))

  it.scoped("answers a 550 for the recipient with a permanent MailDeliveryFailed", () =>
    Effect.gen(function*() {
      const { server, mailer } = yield* withSmtp({ rejectRecipients: ["gone@example.com"] })
      const error = yield* Effect.flip(sendOne(mailer, subscriberMail("gone@example.com").mail))
      assert.isTrue(error.permanent)
      assert.include(error.reason, "550")
      assertNoSecret(error)
      assert.lengthOf(server.messages, 0)
    }))

  it.scoped("answers a 4xx for the recipient with a transient MailDeliveryFailed", () =>
    Effect.gen(function*() {
      const { server, mailer } = yield* withSmtp()
      server.rejectRecipient("busy@example.com", { code: 451 })
      const error = yield* Effect.flip(sendOne(mailer, subscriberMail("busy@example.com").mail))
      assert.isFalse(error.permanent)
      assert.include(error.reason, "451")
      assertNoSecret(error)
    }))

  it.scoped("treats rejected SMTP credentials as transient and keeps the password out of the reason", () =>
    Effect.gen(function*() {
      const { mailer } = yield* withSmtp({ credentials: { user: "user", pass: "the-right-one" } })
      const error = yield* Effect.flip(sendOne(mailer, subscriberMail().mail))
      assert.isFalse(error.permanent, "a configuration problem: the mail should go out once it is fixed")
      assert.include(error.reason, "EAUTH")
      assert.include(error.reason, "535")
      assertNoSecret(error)
    }))

  it.scoped("scrubs the credentials even from a server reply that echoes them", () =>
    Effect.gen(function*() {
      const { server, mailer } = yield* withSmtp()
      server.rejectRecipient("echo@example.com", { code: 550, message: `you said ${Password} and user` })
      const error = yield* Effect.flip(sendOne(mailer, subscriberMail("echo@example.com").mail))
      assert.isTrue(error.permanent)
      assertNoSecret(error)
      assert.include(error.reason, "you said ***")
    }))

  it.scopedLive("gives up fast on a server that accepts connections but never greets", () =>
    Effect.gen(function*() {
      const sockets = new Set<net.Socket>()
      const silent = net.createServer((socket) => {
        sockets.add(socket)
        socket.on("close", () => sockets.delete(socket))
      })
      const port = yield* Effect.acquireRelease(
        Effect.async<number>((resume) => {
          silent.listen(0, "127.0.0.1", () => resume(Effect.succeed((silent.address() as net.AddressInfo).port)))
        }),
        () =>
          Effect.async<void>((resume) => {
            for (const s of sockets) s.destroy()
            silent.close(() => resume(Effect.void))
          })
      )
      const context = yield* Layer.build(
        SmtpMailer.layer({
          url: Redacted.make(`smtp://user:${EncodedPassword}@127.0.0.1:${port}`),
          from: From,
          timeout: "300 millis"
        })
      )
      const started = Date.now()
      const error = yield* Effect.flip(sendOne(Context.get(context, Mailer), sampleMail()))
      assert.isBelow(Date.now() - started, 5000)
      assert.isFalse(error.permanent)
      assert.include(error.reason, "ETIMEDOUT")
      assertNoSecret(error)
    }))

  it.scoped("dies without showing the password when the URL is not a valid SMTP URL", () =>
    Effect.gen(function*() {
      for (
        const url of [`smtp://user:${EncodedPassword}@not a host:25`, `https://user:${EncodedPassword}@example.com`]
      ) {
        const exit = yield* Effect.exit(Layer.build(SmtpMailer.layer({ url: Redacted.make(url), from: From })))
        assert.isTrue(Exit.isFailure(exit) && Cause.isDie(exit.cause), url)
        if (Exit.isFailure(exit)) {
          const pretty = Cause.pretty(exit.cause)
          assert.notInclude(pretty, EncodedPassword)
          assert.notInclude(pretty, Password)
          assert.include(pretty, "SMTP URL")
        }
      }
    }))

  it.scoped("layerConfig reads SMTP_URL and defaults MAIL_FROM", () =>
    Effect.gen(function*() {
      const server = yield* SmtpTestServer.scoped({ pass: Password })
      const context = yield* Layer.build(SmtpMailer.layerConfig).pipe(
        Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["SMTP_URL", server.url]])))
      )
      yield* sendOne(Context.get(context, Mailer), sampleMail())
      const received = yield* Effect.promise(() => server.waitFor())
      assert.deepStrictEqual(received.parsed.from?.value, [{ name: "Newsletter", address: "no-reply@localhost" }])
      assert.strictEqual(received.envelope.from, "no-reply@localhost")
    }))

  it.scoped("layerConfig takes MAIL_FROM and fails with a ConfigError without SMTP_URL", () =>
    Effect.gen(function*() {
      const server = yield* SmtpTestServer.scoped()
      const context = yield* Layer.build(SmtpMailer.layerConfig).pipe(
        Effect.withConfigProvider(
          ConfigProvider.fromMap(new Map([["SMTP_URL", server.url], ["MAIL_FROM", "Someone <someone@example.net>"]]))
        )
      )
      yield* sendOne(Context.get(context, Mailer), sampleMail())
      assert.strictEqual(server.messages[0]?.envelope.from, "someone@example.net")

      const missing = yield* Layer.build(SmtpMailer.layerConfig).pipe(
        Effect.withConfigProvider(ConfigProvider.fromMap(new Map())),
        Effect.flip
      )
      assert.include(String(missing), "SMTP_URL")
    }))

  it("describeFailure classifies replies and connection errors", () => {
    assert.isTrue(describeFailure({ code: "EENVELOPE", responseCode: 550, command: "RCPT TO" }).permanent)
    assert.isTrue(describeFailure({ code: "EMESSAGE", responseCode: 554, command: "DATA" }).permanent)
    assert.isFalse(describeFailure({ code: "EENVELOPE", responseCode: 450 }).permanent)
    assert.isFalse(describeFailure({ code: "EPROTOCOL", responseCode: 503 }).permanent)
    assert.isFalse(describeFailure({ code: "EAUTH", responseCode: 535 }).permanent)
    assert.isFalse(describeFailure({ code: "ESOCKET", originalCode: "ECONNREFUSED" }).permanent)
    assert.isFalse(describeFailure({ code: "ETIMEDOUT" }).permanent)
    assert.isFalse(describeFailure(new Error("boom")).permanent)
    assert.isFalse(describeFailure("not even an error").permanent)
    assert.strictEqual(
      describeFailure({
        code: "EENVELOPE",
        responseCode: 550,
        command: "RCPT TO",
        response: "550 Mailbox unavailable\r\nmore"
      })
        .reason,
      "SMTP EENVELOPE 550 at RCPT TO: 550 Mailbox unavailable"
    )
  })
})

// ---------------------------------------------------------------------------------------------------------

// A Console that keeps what is logged, on top of the current one for everything else.
const capturingConsole = Effect.map(Effect.console, (base) => {
  const lines: Array<string> = []
  const console: Console.Console = {
    ...base,
    log: (...args) => Effect.sync(() => void lines.push(args.map(String).join(" ")))
  }
  return { console, lines } as const
})

describe("ConsoleMailer", () => {
  it.effect("prints recipient, subject, List-Unsubscribe headers and the confirm link, delimited", () =>
    Effect.gen(function*() {
      const { console, lines } = yield* capturingConsole
      const { mail, confirm, unsubscribe } = subscriberMail("ada@example.com")
      const mailer = yield* Effect.provide(Mailer, ConsoleMailer.layer)

      yield* sendOne(mailer, mail).pipe(Effect.withConsole(console))

      assert.lengthOf(lines, 1, "one block per mail, printed at once")
      const out = lines[0]!
      assert.include(out, "To: Ada Lovelace <ada@example.com>")
      assert.include(out, "Subject: Confirm your subscription to Analytical Engines")
      assert.include(out, `List-Unsubscribe: <${unsubscribe}>`)
      assert.include(out, "List-Unsubscribe-Post: List-Unsubscribe=One-Click")
      assert.include(out, confirm)
      assert.match(out, /^=+ mail\n/)
      assert.match(out, /\n=+ end of mail$/)
    }))
})

describe("MemoryMailer", () => {
  const withMemory = <A, E>(self: Effect.Effect<A, E, Mailer | MemoryMailer>) =>
    Effect.provide(self, MemoryMailer.layer)

  it.effect("records sent mails in order", () =>
    withMemory(
      Effect.gen(function*() {
        const mailer = yield* Mailer
        const memory = yield* MemoryMailer
        const a = sampleMail({ subject: "a" })
        const b = sampleMail({ subject: "b" })
        yield* sendOne(mailer, a)
        yield* sendOne(mailer, b)
        assert.deepStrictEqual(yield* memory.sent, [a, b])
        yield* memory.reset
        assert.deepStrictEqual(yield* memory.sent, [])
      })
    ))

  it.effect("failNext makes the next sends fail, transient or permanent, then delivers again", () =>
    withMemory(
      Effect.gen(function*() {
        const mailer = yield* Mailer
        const memory = yield* MemoryMailer
        yield* memory.failNext(2, false)
        yield* memory.failNext(1, true, "550 no such user")
        const results = yield* Effect.forEach([1, 2, 3, 4], (i) =>
          Effect.either(sendOne(mailer, sampleMail({ subject: `try ${i}` }))))
        assert.deepStrictEqual(
          results.map((r) => (r._tag === "Left" ? r.left.permanent : "sent")),
          [false, false, true, "sent"]
        )
        const third = results[2]!
        assert.strictEqual(third._tag === "Left" ? third.left.reason : "", "550 no such user")
        assert.deepStrictEqual(
          (yield* memory.sent).map((m) =>
            m.subject
          ),
          ["try 4"]
        )
        assert.lengthOf(yield* memory.attempts, 4)
      })
    ))

  it.effect("awaitSent waits for deliveries made by another fiber", () =>
    withMemory(
      Effect.gen(function*() {
        const mailer = yield* Mailer
        const memory = yield* MemoryMailer
        const waiting = yield* Effect.fork(memory.awaitSent(2))
        yield* sendOne(mailer, sampleMail({ subject: "one" }))
        yield* sendOne(mailer, sampleMail({ subject: "two" }))
        const sent = yield* Fiber.join(waiting)
        assert.deepStrictEqual(
          sent.map((m) => m.subject),
          ["one", "two"]
        )
      })
    ))

  it.effect("each build of the layer starts empty", () =>
    Effect.gen(function*() {
      yield* withMemory(Effect.flatMap(Mailer, (m) => sendOne(m, sampleMail())))
      const sent = yield* withMemory(Effect.flatMap(MemoryMailer, (m) => m.sent))
      assert.deepStrictEqual(sent, [])
    }))
})
