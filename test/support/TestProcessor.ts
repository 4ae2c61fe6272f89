// A real card processor for tests: node:http on 127.0.0.1 speaking the JSON contract HttpCardNetwork
// talks (docs/card-processor.md: POST /authorizations and POST /refunds, and GET /authorizations/{transfer id}
// and GET /refunds/{refund id} for the outcome of one whose answer was lost), deciding by the sandbox's tables:
// an authorization by card number, a refund by the authorization code of its charge. It remembers its answer
// per Idempotency-Key (a repeated key gets the first answer and no new decision), can be told to fail or
// hang the next requests or answer them with any body, and can be stopped and started on the same port.
// It records requests without card data: only the last four digits of the card number are kept.
import { Context, Effect, Layer, type Scope } from "effect"
import http from "node:http"
import type { AddressInfo } from "node:net"
import { sandboxRefundBehaviour } from "../../adapters/cardnetwork/SandboxCardNetwork.ts"
import {
  type Answer,
  authorizationAnswer,
  describeBody,
  error,
  header,
  pending,
  readBody,
  refundAnswer,
  validateAuthorization,
  validateRefund
} from "./ProcessorWire.ts"

export interface RecordedRequest {
  readonly method: string
  readonly path: string
  // Which endpoint: an authorization or a refund, asked for or looked up.
  readonly kind: "authorization" | "refund" | "other"
  readonly idempotencyKey: string | undefined
  // The Authorization header as received (an API key, not card data).
  readonly authorization: string | undefined
  readonly contentType: string | undefined
  // From the body, when it was the expected JSON; the card number only as its last four digits. A refund's
  // transferId is its body's `transfer`.
  readonly transferId: string | undefined
  readonly refundId: string | undefined
  readonly authorizationCode: string | undefined
  readonly last4: string | undefined
  readonly expMonth: unknown
  readonly expYear: unknown
  readonly cvcLength: number | undefined
  readonly hasAuthenticationValue: boolean
  readonly amount: unknown
  readonly currency: unknown
  readonly merchantId: unknown
  // The body's top-level field names.
  readonly fields: ReadonlyArray<string>
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
  // A lookup answered with the decision.
  readonly decided?: boolean
}

export interface TestProcessorOptions {
  // Requests must carry `Authorization: Bearer <apiKey>` (401 otherwise); by default none is needed.
  readonly apiKey?: string
  // Decided authorizations and refunds are answered this much later (decided at once): a process killed
  // meanwhile leaves a charge or a refund whose answer it never read.
  readonly answerDelayMs?: number
}

type Script =
  | { readonly _tag: "Fail"; readonly status: number }
  | { readonly _tag: "Hang" }
  | { readonly _tag: "Drop" }
  | { readonly _tag: "Reply"; readonly status: number; readonly body: string; readonly contentType: string }

type Kind = "authorization" | "refund"

// One endpoint's memory: answers by Idempotency-Key (the transfer or refund id), and the requests read and
// left hanging, undecided until decideHung(), by id.
interface Ledger {
  readonly answers: Map<string, { readonly fingerprint: string; readonly answer: Answer }>
  readonly undecided: Map<string, { readonly key: string; readonly fingerprint: string; readonly decide: () => Answer }>
}

const routes: ReadonlyArray<readonly [Kind, string]> = [["authorization", "/authorizations"], ["refund", "/refunds"]]
const kindOf = (path: string): Kind | undefined => routes.find(([, prefix]) => path === prefix)?.[0]
const lookupOf = (path: string): { readonly kind: Kind; readonly id: string } | undefined => {
  for (const [kind, prefix] of routes) {
    const match = new RegExp(`^${prefix}/([^/]+)$`).exec(path)
    if (match !== null) return { kind, id: decodeURIComponent(match[1]!) }
  }
  return undefined
}
const newLedger = (): Ledger => ({ answers: new Map(), undecided: new Map() })

export class TestProcessor {
  private server: http.Server | undefined
  private boundPort = 0
  private readonly scripts: Array<Script> = []
  private readonly ledgers: Record<Kind, Ledger> = { authorization: newLedger(), refund: newLedger() }
  private readonly recorded: Array<RecordedRequest> = []
  private readonly hanging = new Set<http.ServerResponse>()
  private readonly decisions: Record<Kind, number> = { authorization: 0, refund: 0 }

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
    return this.decisions.authorization
  }

  // How many refunds were decided (a replayed Idempotency-Key does not count).
  get refunds(): number {
    return this.decisions.refund
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

  // Decides the authorizations and refunds left hanging (by the sandbox's tables), as a processor that was
  // slow does: their connections stay unanswered, and a lookup now answers the decision.
  decideHung(): void {
    for (const ledger of Object.values(this.ledgers)) {
      for (const [id, { decide, fingerprint, key }] of ledger.undecided) {
        ledger.answers.set(key, { fingerprint, answer: decide() })
        ledger.undecided.delete(id)
      }
    }
  }

  // How many lookups of this transfer were answered with its decision (not `pending`, not 404).
  decisionsLookedUp(transferId: string): number {
    return this.lookups("authorization", transferId).filter((r) => r.decided).length
  }

  // Lookups answered per transfer id, by what they said.
  lookupsOf(transferId: string): ReadonlyArray<number | undefined> {
    return this.lookups("authorization", transferId).map((r) => r.status)
  }

  // Lookups answered per refund id, by what they said.
  refundLookupsOf(refundId: string): ReadonlyArray<number | undefined> {
    return this.lookups("refund", refundId).map((r) => r.status)
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

  // Forgets requests, remembered answers, scripts and the counts of decisions.
  reset(): void {
    this.scripts.length = 0
    this.recorded.length = 0
    for (const kind of ["authorization", "refund"] as const) {
      this.ledgers[kind].answers.clear()
      this.ledgers[kind].undecided.clear()
      this.decisions[kind] = 0
    }
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

  private lookups(kind: Kind, id: string): ReadonlyArray<RecordedRequest> {
    const idOf = (r: RecordedRequest) => kind === "refund" ? r.refundId : r.transferId
    return this.recorded.filter((r) => r.handling === "looked up" && r.kind === kind && idOf(r) === id)
  }

  // The request, read and checked for its endpoint: its id, what a repeated key must agree on, and how to
  // decide it (once: a decision counts).
  private validate(kind: Kind, body: unknown) {
    if (kind === "authorization") {
      const valid = validateAuthorization(body)
      return valid && {
        id: valid.transferId,
        fingerprint: valid.fingerprint,
        timesOut: false,
        decide: () => authorizationAnswer(valid, ++this.decisions.authorization)
      }
    }
    const valid = validateRefund(body)
    if (valid === undefined) return undefined
    const behaviour = sandboxRefundBehaviour(valid.authorizationCode)
    return {
      id: valid.refundId,
      fingerprint: valid.fingerprint,
      // A refund of an "SBT" charge is decided and never answered: the sandbox's time-out, over HTTP.
      timesOut: behaviour._tag === "TimesOut",
      decide: () => {
        this.decisions.refund++
        return refundAnswer(behaviour)
      }
    }
  }

  private keepHanging(response: http.ServerResponse): void {
    this.hanging.add(response)
    response.on("close", () => this.hanging.delete(response))
  }

  private async handle(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const raw = await readBody(request)
    let body: unknown
    try {
      body = JSON.parse(raw)
    } catch {
      body = undefined
    }
    const path = request.url ?? ""
    const lookup = request.method === "GET" ? lookupOf(path) : undefined
    const kind = lookup?.kind ?? kindOf(path)
    const base: Omit<RecordedRequest, "handling" | "status"> = {
      method: request.method ?? "",
      path,
      kind: kind ?? "other",
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

    // A lookup: the remembered answer, `pending` while undecided, 404 for an id never received.
    if (lookup !== undefined) {
      const ledger = this.ledgers[lookup.kind]
      const remembered = ledger.answers.get(lookup.id)
      const answer = remembered?.answer ?? (ledger.undecided.has(lookup.id) ? pending : error(404, "not_found"))
      this.recorded.push({
        ...base,
        ...(lookup.kind === "refund" ? { refundId: lookup.id } : { transferId: lookup.id }),
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
          this.keepHanging(response)
          const valid = kind === undefined ? undefined : this.validate(kind, body)
          if (kind !== undefined && valid !== undefined && base.idempotencyKey !== undefined) {
            this.ledgers[kind].undecided.set(valid.id, { key: base.idempotencyKey, ...valid })
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
    if (request.method !== "POST" || kind === undefined) return reject(error(404, "not_found"))
    if (this.options.apiKey !== undefined && base.authorization !== `Bearer ${this.options.apiKey}`) {
      return reject(error(401, "unauthorized"))
    }
    const key = base.idempotencyKey
    if (key === undefined || key === "") return reject(error(400, "idempotency_key_missing"))
    const valid = this.validate(kind, body)
    if (valid === undefined) return reject(error(400, "invalid_request"))

    const ledger = this.ledgers[kind]
    const remembered = ledger.answers.get(key)
    if (remembered !== undefined) {
      // A key reused for a different request is a client bug, as with real processors.
      if (remembered.fingerprint !== valid.fingerprint) return reject(error(409, "idempotency_key_reused"))
      record("replayed", remembered.answer.status)
      return send(remembered.answer)
    }

    const answer = valid.decide()
    ledger.answers.set(key, { fingerprint: valid.fingerprint, answer })
    if (valid.timesOut) {
      record("decided", undefined)
      return this.keepHanging(response)
    }
    record("decided", answer.status)
    const delay = this.options.answerDelayMs ?? 0
    if (delay === 0) return send(answer)
    this.keepHanging(response)
    setTimeout(() => {
      if (!response.destroyed) send(answer)
    }, delay)
  }
}

// The processor as a service, for `layer(TestCardProcessor.layer())` or `Effect.provide`.
export class TestCardProcessor extends Context.Tag("test/TestCardProcessor")<TestCardProcessor, TestProcessor>() {
  static readonly layer = (options?: TestProcessorOptions): Layer.Layer<TestCardProcessor> =>
    Layer.scoped(TestCardProcessor, TestProcessor.scoped(options))
}

export const stopProcessor = (processor: TestProcessor): Effect.Effect<void> => Effect.promise(() => processor.stop())
export const startProcessor = (processor: TestProcessor): Effect.Effect<void> => Effect.promise(() => processor.start())
