import { createServer, type IncomingMessage, type Server } from "node:http"
import { Webhook } from "standardwebhooks"
import { freePort } from "./AppProcess.ts"

export interface ReceivedWebhook {
  readonly id: string
  readonly timestamp: string
  readonly body: string
  readonly event: any
}

// A real HTTP receiver on a real socket. Every delivery is verified with the standardwebhooks package against
// the endpoint's secret (set once the endpoint is registered); one that does not verify is answered 400 and
// counted in `rejected`. `down()` closes the socket (connections are refused) until `up()`.
export class WebhookReceiver {
  readonly received: Array<ReceivedWebhook> = []
  readonly rejected: Array<string> = []
  secret: string | undefined
  // Answered with this status instead of 204 while set (e.g. 500, or "hang" to never answer).
  failWith: number | "hang" | undefined
  // Each verified delivery is answered this long after it arrived, so that deliveries are in flight under load.
  answerAfterMs = 0
  private server: Server | undefined
  private readonly waiters = new Set<() => void>()

  private constructor(readonly port: number) {}

  static async start(): Promise<WebhookReceiver> {
    const receiver = new WebhookReceiver(await freePort())
    await receiver.up()
    return receiver
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/hooks`
  }

  private async handle(request: IncomingMessage, body: string): Promise<[number, string]> {
    if (this.failWith === "hang") return new Promise(() => {})
    if (this.failWith !== undefined) return [this.failWith, ""]
    if (this.secret === undefined) return [503, "no secret yet"]
    const headers = Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k, String(v)]))
    try {
      new Webhook(this.secret).verify(body, headers)
    } catch (e) {
      this.rejected.push(`${headers["webhook-id"]}: ${(e as Error).message}`)
      return [400, "signature"]
    }
    this.received.push({
      id: headers["webhook-id"]!,
      timestamp: headers["webhook-timestamp"]!,
      body,
      event: JSON.parse(body)
    })
    for (const wake of this.waiters) wake()
    if (this.answerAfterMs > 0) await new Promise((r) => setTimeout(r, this.answerAfterMs))
    return [204, ""]
  }

  up(): Promise<void> {
    const server = createServer((request, response) => {
      let body = ""
      request.setEncoding("utf8")
      request.on("data", (chunk) => (body += chunk))
      request.on("end", () => {
        void this.handle(request, body).then(([status, text]) => response.writeHead(status).end(text))
      })
    })
    this.server = server
    return new Promise((ok) => server.listen(this.port, "127.0.0.1", () => ok()))
  }

  down(): Promise<void> {
    const server = this.server
    this.server = undefined
    if (server === undefined) return Promise.resolve()
    server.closeAllConnections()
    return new Promise((ok) => server.close(() => ok()))
  }

  async waitFor(predicate: (all: ReadonlyArray<ReceivedWebhook>) => boolean, timeoutMs = 15_000): Promise<void> {
    const deadline = Date.now() + timeoutMs
    while (!predicate(this.received)) {
      const left = deadline - Date.now()
      if (left <= 0) {
        throw new Error(
          `webhooks not received within ${timeoutMs} ms; got ${this.received.length}: ${
            this.received.map((r) => r.event.type).join(", ")
          }; rejected: ${this.rejected.join("; ")}`
        )
      }
      await new Promise<void>((ok) => {
        const wake = () => (this.waiters.delete(wake), clearTimeout(timer), ok())
        const timer = setTimeout(wake, Math.min(left, 250))
        this.waiters.add(wake)
      })
    }
  }

  ofType(type: string): Array<ReceivedWebhook> {
    return this.received.filter((r) => r.event.type === type)
  }
}

export const webhookEnv: Readonly<Record<string, string>> = {
  WEBHOOK_ALLOW_HTTP: "on",
  WEBHOOK_ALLOW_PRIVATE: "on"
}
