// A real card processor for tests: node:http on 127.0.0.1 speaking the JSON contract HttpCardNetwork
// talks (POST /authorizations, and GET /authorizations/{transfer id} for the outcome of one whose answer
// was lost), deciding by the sandbox's table. It remembers its answer per
// Idempotency-Key (a repeated key gets the first answer and no new authorization), can be told to fail or
// hang the next requests or answer them with any body, and can be stopped and started on the same port.
// It records requests without card data: only the last four digits of the card number are kept.
import { Context, Effect, Layer, type Scope } from "effect"
import http from "node:http"
import type { AddressInfo } from "node:net"
import { sandboxDecision } from "../../adapters/cardnetwork/SandboxCardNetwork.ts"

export interface RecordedRequest {
  readonly method: string
  readonly path: string
  readonly idempotencyKey: string | undefined
  // The Authorization header as received (an API key, not card data).
  readonly authorization: string | undefined
  readonly contentType: string | undefined
  // From the body, when it was the expected JSON; the card number only as its last four digits.
  readonly transferId: string | undefined
  readonly last4: string | undefined
  readonly expMonth: unknown
  readonly expYear: unknown
  readonly cvcLength: number | undefined
  readonly hasAuthenticationValue: boolean
  readonly amount: unknown
  readonly currency: unknown
  readonly merchantId: unknown
  // What the processor did: decided anew, replayed a remembered answer, or followed a script.
  readonly handling:
    | "decided"
    | "replayed"
    | "failed"
    | "hung"
    | "dropped"
    | "scripted"
    | "rejected"
    | "looked up"
  // The status answered (undefined for a request left hanging).
  readonly status: number | undefined
  // A lookup answered with the transfer's decision.
  readonly decided?: boolean
}

export interface TestProcessorOptions {
  // Requests must carry `Authorization: Bearer <apiKey>` (401 otherwise); by default none is needed.
  readonly apiKey?: string
  // Decided authorizations are answered this much later (decided at once): a process killed meanwhile
  // leaves a charge whose answer it never read.
  readonly answerDelayMs?: number
}

type Script =
  | { readonly _tag: "Fail"; readonly status: number }
  | { readonly _tag: "Hang" }
  | { readonly _tag: "Drop" }
  | { readonly _tag: "Reply"; readonly status: number; readonly body: string; readonly contentType: string }

interface Answer {
  readonly status: number
  readonly body: string
}

interface ValidRequest {
  readonly transferId: string
  readonly pan: string
  readonly authenticated: boolean
  // What a repeated key must agree on (no card data beyond the last four digits).
  readonly fingerprint: string
}

const header = (request: http.IncomingMessage, name: string): string | undefined => {
  const value = request.headers[name]
  return Array.isArray(value) ? value[0] : value
}

const readBody = (request: http.IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    let size = 0
    request.on("data", (chunk: Buffer) => {
      size += chunk.length
      if (size > 64 * 1024) request.destroy(new Error("body too large"))
      else chunks.push(chunk)
    })
    request.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
    request.on("error", reject)
  })

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

const validate = (body: unknown): ValidRequest | undefined => {
  if (!isRecord(body) || !isRecord(body.card)) return undefined
  const card = body.card
  const ok = typeof body.transfer_id === "string" && body.transfer_id !== "" &&
    typeof card.number === "string" && /^[0-9]{12,19}$/.test(card.number) &&
    Number.isInteger(card.exp_month) && (card.exp_month as number) >= 1 && (card.exp_month as number) <= 12 &&
    Number.isInteger(card.exp_year) &&
    typeof card.cvc === "string" && /^[0-9]{3,4}$/.test(card.cvc) &&
    (body.authentication_value === undefined ||
      (typeof body.authentication_value === "string" && body.authentication_value !== "")) &&
    typeof body.amount === "string" && /^(0|[1-9][0-9]*)$/.test(body.amount) &&
    typeof body.currency === "string" && /^[A-Z]{3}$/.test(body.currency) &&
    typeof body.merchant_id === "string" && body.merchant_id !== ""
  if (!ok) return undefined
  const pan = card.number as string
  return {
    transferId: body.transfer_id as string,
    pan,
    authenticated: body.authentication_value !== undefined,
    fingerprint: JSON.stringify([body.transfer_id, pan.slice(-4), body.amount, body.currency, body.merchant_id])
  }
}

// Only what may be kept: never the number, the CVC or the authentication value.
const describeBody = (body: unknown) => {
  const b = isRecord(body) ? body : {}
  const card = isRecord(b.card) ? b.card : {}
  return {
    transferId: typeof b.transfer_id === "string" ? b.transfer_id : undefined,
    last4: typeof card.number === "string" ? card.number.slice(-4) : undefined,
    expMonth: card.exp_month,
    expYear: card.exp_year,
    cvcLength: typeof card.cvc === "string" ? card.cvc.length : undefined,
    hasAuthenticationValue: b.authentication_value !== undefined,
    amount: b.amount,
    currency: b.currency,
    merchantId: b.merchant_id
  }
}

const error = (status: number, code: string): Answer => ({ status, body: JSON.stringify({ error: code }) })

export class TestProcessor {
  private server: http.Server | undefined
  private boundPort = 0
  private readonly scripts: Array<Script> = []
  private readonly answers = new Map<string, { readonly fingerprint: string; readonly answer: Answer }>()
  private readonly recorded: Array<RecordedRequest> = []
  private readonly hanging = new Set<http.ServerResponse>()
  // Authorizations read and left hanging, undecided until decideHung().
  private readonly undecided = new Map<string, { readonly key: string; readonly valid: ValidRequest }>()
  private decisions = 0

  constructor(private readonly options: TestProcessorOptions = {}) {}

  static async start(options?: TestProcessorOptions): Promise<TestProcessor> {
    const processor = new TestProcessor(options)
    await processor.start()
    return processor
  }

  // Scoped: started on acquire, stopped on release.
  static scoped(options?: TestProcessorOptions): Effect.Effect<TestProcessor, never, Scope.Scope> {
    return Effect.acquireRelease(
      Effect.promise(() => TestProcessor.start(options)),
      (processor) => Effect.promise(() => processor.stop())
    )
  }

  get port(): number {
    if (this.boundPort === 0) throw new Error("TestProcessor was never started")
    return this.boundPort
  }

  // The base URL to give HttpCardNetwork.
  get url(): string {
    return `http://127.0.0.1:${this.port}`
  }

  get running(): boolean {
    return this.server !== undefined
  }

  // Every request received, oldest first, without card numbers.
  get requests(): ReadonlyArray<RecordedRequest> {
    return [...this.recorded]
  }

  // How many authorizations were decided (a replayed Idempotency-Key does not count).
  get authorizations(): number {
    return this.decisions
  }

  // The next n requests get this status and an error body, without a decision and without being remembered.
  failNext(n: number, status = 503): void {
    for (let i = 0; i < n; i++) this.scripts.push({ _tag: "Fail", status })
  }

  // The next n requests are read and never answered (until the processor stops).
  hangNext(n = 1): void {
    for (let i = 0; i < n; i++) this.scripts.push({ _tag: "Hang" })
  }

  // The next n requests are read, then their connection is closed without an answer.
  dropNext(n = 1): void {
    for (let i = 0; i < n; i++) this.scripts.push({ _tag: "Drop" })
  }

  // Decides the authorizations left hanging (by the sandbox's table), as a processor that was slow does:
  // their connections stay unanswered, and a lookup now answers the decision.
  decideHung(): void {
    for (const [transferId, { key, valid }] of this.undecided) {
      this.answers.set(key, { fingerprint: valid.fingerprint, answer: this.decide(valid) })
      this.undecided.delete(transferId)
    }
  }

  // How many lookups of this transfer were answered with its decision (not `pending`, not 404).
  decisionsLookedUp(transferId: string): number {
    return this.recorded.filter((r) => r.handling === "looked up" && r.transferId === transferId && r.decided).length
  }

  // Lookups answered per transfer id, by what they said.
  lookupsOf(transferId: string): ReadonlyArray<number | undefined> {
    return this.recorded.filter((r) => r.handling === "looked up" && r.transferId === transferId).map((r) => r.status)
  }

  // The next n requests get exactly this answer, e.g. a malformed body, without a decision.
  replyNext(
    n: number,
    reply: { readonly status?: number; readonly body: string; readonly contentType?: string }
  ): void {
    for (let i = 0; i < n; i++) {
      this.scripts.push({
        _tag: "Reply",
        status: reply.status ?? 200,
        body: reply.body,
        contentType: reply.contentType ?? "application/json"
      })
    }
  }

  // Forgets requests, remembered answers, scripts and the count of authorizations.
  reset(): void {
    this.scripts.length = 0
    this.answers.clear()
    this.recorded.length = 0
    this.undecided.clear()
    this.decisions = 0
  }

  // Listens on 127.0.0.1: on a free port the first time, on the same port after a stop.
  async start(): Promise<void> {
    if (this.server !== undefined) return
    const server = http.createServer((request, response) => {
      this.handle(request, response).catch(() => {
        if (!response.headersSent) response.writeHead(500).end()
      })
    })
    await new Promise<void>((resolve, reject) => {
      const onError = (err: Error) => reject(err)
      server.once("error", onError)
      server.listen(this.boundPort, "127.0.0.1", () => {
        server.off("error", onError)
        resolve()
      })
    })
    this.boundPort = (server.address() as AddressInfo).port
    this.server = server
  }

  // Stops listening and drops every connection, hanging requests included; `start()` brings it back on the
  // same port, with its memory of answers intact.
  async stop(): Promise<void> {
    const server = this.server
    if (server === undefined) return
    this.server = undefined
    for (const response of this.hanging) response.destroy()
    this.hanging.clear()
    const closed = new Promise<void>((resolve) => server.close(() => resolve()))
    server.closeAllConnections()
    await closed
  }

  private async handle(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const raw = await readBody(request)
    let body: unknown
    try {
      body = JSON.parse(raw)
    } catch {
      body = undefined
    }
    const base = {
      method: request.method ?? "",
      path: request.url ?? "",
      idempotencyKey: header(request, "idempotency-key"),
      authorization: header(request, "authorization"),
      contentType: header(request, "content-type"),
      ...describeBody(body)
    }
    const record = (handling: RecordedRequest["handling"], status: number | undefined) =>
      this.recorded.push({ ...base, handling, status })
    const send = (answer: Answer, contentType = "application/json") => {
      response.writeHead(answer.status, { "content-type": contentType }).end(answer.body)
    }

    // A lookup: the remembered answer, `pending` while undecided, 404 for a transfer never received.
    const lookup = /^\/authorizations\/([^/]+)$/.exec(request.url ?? "")
    if (request.method === "GET" && lookup !== null) {
      const transferId = decodeURIComponent(lookup[1]!)
      const remembered = this.answers.get(transferId)
      const answer = remembered !== undefined
        ? remembered.answer
        : this.undecided.has(transferId)
        ? { status: 200, body: JSON.stringify({ status: "pending" }) }
        : error(404, "not_found")
      this.recorded.push({
        ...base,
        transferId,
        handling: "looked up",
        status: answer.status,
        decided: remembered !== undefined
      })
      return send(answer)
    }

    const script = this.scripts.shift()
    if (script !== undefined) {
      switch (script._tag) {
        case "Fail":
          record("failed", script.status)
          return send(error(script.status, "unavailable"))
        case "Hang": {
          record("hung", undefined)
          this.hanging.add(response)
          response.on("close", () => this.hanging.delete(response))
          const valid = validate(body)
          if (valid !== undefined && base.idempotencyKey !== undefined) {
            this.undecided.set(valid.transferId, { key: base.idempotencyKey, valid })
          }
          return
        }
        case "Drop":
          record("dropped", undefined)
          request.socket.destroy()
          return
        case "Reply":
          record("scripted", script.status)
          return send({ status: script.status, body: script.body }, script.contentType)
      }
    }

    const reject = (answer: Answer) => {
      record("rejected", answer.status)
      send(answer)
    }
    if (request.method !== "POST" || request.url !== "/authorizations") return reject(error(404, "not_found"))
    if (this.options.apiKey !== undefined && base.authorization !== `Bearer ${this.options.apiKey}`) {
      return reject(error(401, "unauthorized"))
    }
    const key = base.idempotencyKey
    if (key === undefined || key === "") return reject(error(400, "idempotency_key_missing"))
    const valid = validate(body)
    if (valid === undefined) return reject(error(400, "invalid_request"))

    const remembered = this.answers.get(key)
    if (remembered !== undefined) {
      // A key reused for a different request is a client bug, as with real processors.
      if (remembered.fingerprint !== valid.fingerprint) return reject(error(409, "idempotency_key_reused"))
      record("replayed", remembered.answer.status)
      return send(remembered.answer)
    }

    const answer = this.decide(valid)
    this.answers.set(key, { fingerprint: valid.fingerprint, answer })
    record("decided", answer.status)
    const delay = this.options.answerDelayMs ?? 0
    if (delay === 0) return send(answer)
    this.hanging.add(response)
    response.on("close", () => this.hanging.delete(response))
    setTimeout(() => {
      if (!response.destroyed) send(answer)
    }, delay)
  }

  private decide(valid: ValidRequest): Answer {
    this.decisions++
    const outcome = sandboxDecision(valid.pan, valid.authenticated)
    return {
      status: 200,
      body: JSON.stringify(
        outcome._tag === "Approved"
          ? { status: "approved", authorization_code: `TP${String(this.decisions % 10_000).padStart(4, "0")}` }
          : {
            status: "declined",
            code: outcome.code,
            ...(outcome.declineCode === undefined ? {} : { decline_code: outcome.declineCode })
          }
      )
    }
  }
}

// The processor as a service, for `layer(TestCardProcessor.layer())` or `Effect.provide`.
export class TestCardProcessor extends Context.Tag("test/TestCardProcessor")<TestCardProcessor, TestProcessor>() {
  static readonly layer = (options?: TestProcessorOptions): Layer.Layer<TestCardProcessor> =>
    Layer.scoped(TestCardProcessor, TestProcessor.scoped(options))
}

export const stopProcessor = (processor: TestProcessor): Effect.Effect<void> => Effect.promise(() => processor.stop())
export const startProcessor = (processor: TestProcessor): Effect.Effect<void> => Effect.promise(() => processor.start())
