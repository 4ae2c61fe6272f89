import { createServer, type IncomingHttpHeaders, request as upstream, type Server } from "node:http"
import { OpenAPIBackend } from "openapi-backend"

// A proxy in front of an app under test that checks every request and response against the OpenAPI document
// the app serves, with openapi-backend (its request, response and response-header validators). The fetch-based
// suites talk to it (app.baseUrl); raw-socket tests of malformed HTTP (RawHttp.ts) talk to the app's own port.
//
// A response that does not conform is a violation: an undeclared status, a media type the status does not
// declare, a body or a header field its schema refuses. A request the document refuses that the app accepted
// (2xx) is one too: document and service must agree on what is valid. Requests the document refuses and the
// app refuses as well are what the error-case tests send: counted, not violations.
export interface ContractCounts {
  requests: number
  responses: number
  refusedByBoth: number
  readonly violations: Array<string>
}

type Operation = ReturnType<OpenAPIBackend["matchOperation"]> & { responses?: Record<string, any> }

const mediaTypeOf = (headers: IncomingHttpHeaders) =>
  String(headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase()

const parseBody = (type: string, text: string): unknown => {
  if (text === "") return undefined
  if (type === "application/json") {
    try {
      return JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text)
    } catch {
      return text
    }
  }
  if (type === "application/x-www-form-urlencoded") return Object.fromEntries(new URLSearchParams(text))
  return text
}

const errorsOf = (result: { readonly errors?: ReadonlyArray<any> | null }) =>
  (result.errors ?? []).map((e) => `${e.instancePath ?? ""} ${e.message ?? ""}`.trim()).join("; ")

export class ContractProxy {
  readonly counts: ContractCounts = { requests: 0, responses: 0, refusedByBoth: 0, violations: [] }
  private api: OpenAPIBackend | undefined
  private constructor(private readonly server: Server, readonly port: number, private readonly appPort: number) {}

  static start(port: number, appPort: number): Promise<ContractProxy> {
    return new Promise((ok, fail) => {
      const server = createServer()
      const proxy = new ContractProxy(server, port, appPort)
      server.on("request", (req, res) => proxy.forward(req, res))
      server.once("error", fail)
      server.listen(port, "127.0.0.1", () => ok(proxy))
    })
  }

  // The document as the app serves it, read once it is up. `quick` skips openapi-backend's check of the document
  // itself, which knows OpenAPI 3.0 only (the linters check this 3.1 document in `npm test`).
  async load(): Promise<void> {
    if (this.api !== undefined) return
    const definition = await (await fetch(`http://127.0.0.1:${this.appPort}/openapi.json`)).json()
    const api = new OpenAPIBackend({
      definition,
      strict: false,
      quick: true,
      validate: true,
      // `format` is an annotation in the document's JSON Schema (2020-12, OpenAPI 3.1), not an assertion: the
      // service may accept " ann@example.com " (it trims) although it is no `email`. Not asserted, and not warned
      // about once per schema.
      ajvOpts: { strict: false, validateFormats: false }
    })
    await api.init()
    this.api = api
  }

  close(): Promise<void> {
    this.server.closeAllConnections()
    return new Promise((ok) => this.server.close(() => ok()))
  }

  private forward(req: import("node:http").IncomingMessage, res: import("node:http").ServerResponse) {
    const requestChunks: Array<Buffer> = []
    const out = upstream({
      host: "127.0.0.1",
      port: this.appPort,
      method: req.method,
      path: req.url,
      headers: req.headers
    }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.rawHeaders)
      const responseChunks: Array<Buffer> = []
      answer.on("data", (chunk: Buffer) => {
        responseChunks.push(chunk)
        res.write(chunk)
      })
      answer.on("end", () => {
        res.end()
        this.check(req, Buffer.concat(requestChunks).toString("utf8"), {
          status: answer.statusCode ?? 0,
          headers: answer.headers,
          body: Buffer.concat(responseChunks).toString("utf8")
        })
      })
      answer.on("error", () => res.destroy())
    })
    // The app gone (stopped, killed): the client's connection fails as it would without the proxy.
    out.on("error", () => res.destroy())
    req.on("data", (chunk: Buffer) => {
      requestChunks.push(chunk)
      out.write(chunk)
    })
    req.on("end", () => out.end())
    req.on("error", () => out.destroy())
  }

  private check(
    req: import("node:http").IncomingMessage,
    requestText: string,
    response: { readonly status: number; readonly headers: IncomingHttpHeaders; readonly body: string }
  ) {
    const api = this.api
    if (api === undefined) return
    const url = new URL(req.url ?? "/", "http://proxy")
    const method = (req.method ?? "GET").toLowerCase()
    const request = {
      method,
      path: url.pathname,
      headers: req.headers as Record<string, string>,
      query: Object.fromEntries(url.searchParams),
      body: parseBody(mediaTypeOf(req.headers), requestText)
    }
    const at = `${req.method} ${req.url} -> ${response.status}`
    const violation = (what: string) => this.counts.violations.push(`${at}: ${what}`)
    this.counts.requests++
    this.counts.responses++
    const operation = api.matchOperation(request as any) as Operation | undefined
    if (operation === undefined) {
      // Not an operation: a path that is not one (404 route_not_found), or a method the path does not take (405).
      const onPath = api.getOperations().find((o: { method: string }) =>
        api.router.matchOperation({ ...request, method: o.method } as any)
      )
      if (onPath === undefined && response.status !== 404) violation("a path the document does not have, not 404")
      if (onPath !== undefined && (response.status !== 405 || response.headers.allow === undefined)) {
        violation("a method the document does not declare here, not 405 with Allow")
      }
      return
    }
    const requestResult = api.validateRequest(request as any, operation)
    if (!requestResult.valid && !(method === "head" || method === "options" || method === "trace")) {
      if (response.status < 300) {
        violation(`accepted a request the document refuses (${errorsOf(requestResult)})`)
      } else this.counts.refusedByBoth++
    }
    const declared = operation.responses?.[String(response.status)] ?? operation.responses?.default
    if (declared === undefined) return violation(`status ${response.status} is not declared`)
    const content = declared.content as Record<string, { schema?: unknown }> | undefined
    const type = mediaTypeOf(response.headers)
    const bodyless = method === "head" || response.status === 204 || response.status === 304
    if (!bodyless && response.body !== "") {
      if (content === undefined) return violation(`a body (${type}) where the status declares none`)
      const declaredType = Object.keys(content).find((t) => t.split(";")[0]!.trim() === type)
      if (declaredType === undefined) {
        return violation(`${type} is not among the status's media types (${Object.keys(content).join(", ")})`)
      }
      if (type === "application/json") {
        const result = api.validateResponse(JSON.parse(response.body), operation, response.status)
        if (!result.valid) violation(`body: ${errorsOf(result)}`)
      }
    }
    const headers = api.validateResponseHeaders(response.headers, operation, { statusCode: response.status })
    if (!headers.valid) violation(`header fields: ${errorsOf(headers)}`)
  }
}
