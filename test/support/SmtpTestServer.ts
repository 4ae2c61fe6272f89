// A real SMTP server for tests: smtp-server on 127.0.0.1, every message parsed with mailparser. It can be
// stopped and started again on the same port (SMTP down, then back up), refuse chosen recipients, and
// insist on one user name and password.
import { Context, Effect, Layer, type Scope } from "effect"
import { type ParsedMail, simpleParser } from "mailparser"
import type { AddressInfo } from "node:net"
import { SMTPServer, type SMTPServerError } from "smtp-server"

export interface ReceivedMail {
  // What the client said in MAIL FROM and RCPT TO.
  readonly envelope: { readonly from: string | false; readonly to: ReadonlyArray<string> }
  // The user the client authenticated as, if it did.
  readonly user: string | undefined
  readonly raw: string
  readonly parsed: ParsedMail
  // The header section as sent, unfolded, by lower-case name (a repeated header keeps its last value).
  // mailparser merges List-* headers into one structured `list` entry; these are the plain values.
  readonly headers: Readonly<Record<string, string>>
  readonly subject: string | undefined
  readonly text: string | undefined
  readonly html: string | undefined
}

export interface Rejection {
  readonly code: number
  readonly message: string
}

export interface SmtpTestServerOptions {
  // Recipients answered with a 550 at RCPT TO (case-insensitive). More can be added with rejectRecipient.
  readonly rejectRecipients?: Iterable<string>
  // Only this user and password may log in (others get 535); by default any login is accepted.
  readonly credentials?: { readonly user: string; readonly pass: string }
  // The user name and password put into `url`.
  readonly user?: string
  readonly pass?: string
}

const unfoldHeaders = (parsed: ParsedMail): Record<string, string> => {
  const headers: Record<string, string> = {}
  for (const { key, line } of parsed.headerLines) {
    const colon = line.indexOf(":")
    headers[key] = line
      .slice(colon + 1)
      .replace(/\r?\n[ \t]+/g, " ")
      .trim()
  }
  return headers
}

const readStream = (stream: NodeJS.ReadableStream): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    stream.on("data", (chunk: Buffer) => chunks.push(chunk))
    stream.on("end", () => resolve(Buffer.concat(chunks)))
    stream.on("error", reject)
  })

export class SmtpTestServer {
  private server: SMTPServer | undefined
  private boundPort = 0
  private readonly received: Array<ReceivedMail> = []
  private readonly waiters = new Set<() => void>()
  private readonly rejections = new Map<string, Rejection>()
  readonly logins: Array<{ readonly user: string; readonly pass: string }> = []
  readonly user: string
  readonly pass: string

  constructor(private readonly options: SmtpTestServerOptions = {}) {
    this.user = options.user ?? "user"
    this.pass = options.pass ?? "pass"
    for (const address of options.rejectRecipients ?? []) this.rejectRecipient(address)
  }

  // Creates a server and starts it on a free port.
  static async start(options?: SmtpTestServerOptions): Promise<SmtpTestServer> {
    const server = new SmtpTestServer(options)
    await server.start()
    return server
  }

  // Scoped: started on acquire, stopped on release.
  static scoped(options?: SmtpTestServerOptions): Effect.Effect<SmtpTestServer, never, Scope.Scope> {
    return Effect.acquireRelease(
      Effect.promise(() => SmtpTestServer.start(options)),
      (server) => Effect.promise(() => server.stop())
    )
  }

  get port(): number {
    if (this.boundPort === 0) throw new Error("SmtpTestServer was never started")
    return this.boundPort
  }

  get url(): string {
    return `smtp://${encodeURIComponent(this.user)}:${encodeURIComponent(this.pass)}@127.0.0.1:${this.port}`
  }

  get running(): boolean {
    return this.server !== undefined
  }

  get messages(): ReadonlyArray<ReceivedMail> {
    return [...this.received]
  }

  clear(): void {
    this.received.length = 0
    this.logins.length = 0
  }

  rejectRecipient(address: string, rejection: Partial<Rejection> = {}): void {
    const code = rejection.code ?? 550
    const message = rejection.message ?? (code >= 500 ? "Mailbox unavailable" : "Mailbox busy, try again later")
    this.rejections.set(address.toLowerCase(), { code, message })
  }

  acceptRecipient(address: string): void {
    this.rejections.delete(address.toLowerCase())
  }

  // Resolves with the first message (already received or still to come) the predicate accepts.
  waitFor(predicate: (mail: ReceivedMail) => boolean = () => true, timeoutMs = 5000): Promise<ReceivedMail> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = this.received.find(predicate)
        if (found === undefined) return false
        this.waiters.delete(check)
        clearTimeout(timer)
        resolve(found)
        return true
      }
      const timer = setTimeout(() => {
        this.waiters.delete(check)
        reject(
          new Error(`SmtpTestServer: no matching message within ${timeoutMs} ms (${this.received.length} received)`)
        )
      }, timeoutMs)
      if (!check()) this.waiters.add(check)
    })
  }

  // Listens on 127.0.0.1: on a free port the first time, on the same port after a stop.
  async start(): Promise<void> {
    if (this.server !== undefined) return
    const server = new SMTPServer({
      secure: false,
      disabledCommands: ["STARTTLS"],
      authOptional: true,
      allowInsecureAuth: true,
      disableReverseLookup: true,
      logger: false,
      closeTimeout: 100,
      socketTimeout: 10_000,
      onAuth: (auth, _session, callback) => {
        const user = auth.username ?? ""
        const pass = auth.password ?? ""
        this.logins.push({ user, pass })
        const expected = this.options.credentials
        if (expected !== undefined && (expected.user !== user || expected.pass !== pass)) {
          return callback(null, { message: "Authentication credentials invalid", responseCode: 535 })
        }
        callback(null, { user })
      },
      onRcptTo: (address, _session, callback) => {
        const rejection = this.rejections.get(address.address.toLowerCase())
        if (rejection === undefined) return callback()
        const error: SMTPServerError = new Error(rejection.message)
        error.responseCode = rejection.code
        callback(error)
      },
      onData: (stream, session, callback) => {
        readStream(stream)
          .then(async (raw) => {
            const parsed = await simpleParser(raw)
            this.received.push({
              envelope: {
                from: session.envelope.mailFrom === false ? false : session.envelope.mailFrom.address,
                to: session.envelope.rcptTo.map((r) => r.address)
              },
              user: typeof session.user === "string" ? session.user : undefined,
              raw: raw.toString("utf8"),
              parsed,
              headers: unfoldHeaders(parsed),
              subject: parsed.subject,
              text: parsed.text,
              html: parsed.html === false ? undefined : parsed.html
            })
            for (const waiter of [...this.waiters]) waiter()
            callback()
          })
          .catch((err: unknown) => callback(err instanceof Error ? err : new Error(String(err))))
      }
    })
    // Errors of single connections end up here; a test server has nothing to do about them.
    server.on("error", () => {})
    await new Promise<void>((resolve, reject) => {
      const onError = (err: Error) => reject(err)
      server.server.once("error", onError)
      server.listen(this.boundPort, "127.0.0.1", () => {
        server.server.off("error", onError)
        resolve()
      })
    })
    this.boundPort = (server.server.address() as AddressInfo).port
    this.server = server
  }

  // Stops listening and drops open connections; `start()` brings it back on the same port.
  async stop(): Promise<void> {
    const server = this.server
    if (server === undefined) return
    this.server = undefined
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

// The server as a service, for `layer(TestSmtp.layer())` or `Effect.provide`.
export class TestSmtp extends Context.Tag("test/TestSmtp")<TestSmtp, SmtpTestServer>() {
  static readonly layer = (options?: SmtpTestServerOptions): Layer.Layer<TestSmtp> =>
    Layer.scoped(TestSmtp, SmtpTestServer.scoped(options))
}

// Effect versions of the promise methods, for use inside tests.
export const waitForMail = (
  server: SmtpTestServer,
  predicate?: (mail: ReceivedMail) => boolean,
  timeoutMs?: number
): Effect.Effect<ReceivedMail> => Effect.promise(() => server.waitFor(predicate, timeoutMs))

export const stopServer = (server: SmtpTestServer): Effect.Effect<void> => Effect.promise(() => server.stop())
export const startServer = (server: SmtpTestServer): Effect.Effect<void> => Effect.promise(() => server.start())
