// HTTP/1.1 over a bare TCP socket (node:net), for what fetch cannot send or cannot show: TRACE, exact request
// lines and header case, HEAD answers read byte for byte (is anything after the header block?), bodies sent in
// pieces (Content-Length larger than what is sent, chunked uploads), header lines trickled one byte at a time.
import { assert } from "@effect/vitest"
import { connect, type Socket } from "node:net"

export type HeaderList = ReadonlyArray<readonly [string, string]>

export interface RawResponse {
  readonly statusLine: string
  readonly status: number
  // Header fields in the order and case received.
  readonly headers: HeaderList
  // The body as framed by Content-Length or chunked encoding (decoded); empty for HEAD, 204 and 304.
  readonly body: Buffer
  // Every byte after the header block that belonged to this response (for HEAD, 204 and 304 there must be none).
  readonly rawBody: Buffer
}

const headerEnd = Buffer.from("\r\n\r\n")

// The first value of a header field, by case-insensitive name.
export const header = (response: { readonly headers: HeaderList }, name: string): string | undefined =>
  response.headers.find(([n]) => n.toLowerCase() === name.toLowerCase())?.[1]

export const headerNames = (response: { readonly headers: HeaderList }): Array<string> =>
  response.headers.map(([n]) => n.toLowerCase())

export const bodyJson = (response: RawResponse): any => JSON.parse(response.body.toString("utf8"))

// The documented error body with its status and code, naming the response's own request id, with Date and an
// exact Content-Length.
export const assertErrorResponse = (response: RawResponse, status: number, code: string) => {
  assert.strictEqual(response.status, status, response.body.toString("utf8"))
  const body = bodyJson(response)
  assert.strictEqual(body.error.code, code)
  assert.strictEqual(body.error.request_id, header(response, "x-request-id"))
  assert.match(body.error.doc_url, new RegExp(`/docs/errors#${code}$`))
  assert.isDefined(header(response, "date"))
  assert.strictEqual(Number(header(response, "content-length")), response.body.length)
}

// Parses one response from the front of `buffer`: undefined while incomplete. `closed` says the peer closed
// the connection (a body without length runs to the close).
export const parseResponse = (
  buffer: Buffer,
  options: { readonly head?: boolean; readonly closed?: boolean } = {}
): { readonly response: RawResponse; readonly consumed: number } | undefined => {
  const end = buffer.indexOf(headerEnd)
  if (end < 0) return undefined
  const [statusLine = "", ...lines] = buffer.subarray(0, end).toString("latin1").split("\r\n")
  const status = Number(statusLine.split(" ")[1])
  const headers = lines.map((line): readonly [string, string] => {
    const colon = line.indexOf(":")
    return [line.slice(0, colon), line.slice(colon + 1).trim()]
  })
  const start = end + headerEnd.length
  const value = (name: string) => header({ headers }, name)
  const done = (rawEnd: number, body: Buffer) => ({
    response: { statusLine, status, headers, body, rawBody: buffer.subarray(start, rawEnd) },
    consumed: rawEnd
  })
  if (options.head || status === 204 || status === 304 || (status >= 100 && status < 200)) {
    // No body may follow; whatever bytes the server sent anyway stay visible to the caller through
    // `RawConnection.received` (and rawRequest reports them as rawBody).
    return done(start, Buffer.alloc(0))
  }
  if (/chunked/i.test(value("transfer-encoding") ?? "")) {
    const chunks: Array<Buffer> = []
    let at = start
    for (;;) {
      const lineEnd = buffer.indexOf("\r\n", at)
      if (lineEnd < 0) return undefined
      const size = parseInt(buffer.subarray(at, lineEnd).toString("latin1").split(";")[0]!, 16)
      if (Number.isNaN(size)) throw new Error(`bad chunk size line at ${at}`)
      if (size === 0) {
        const trailerEnd = buffer.indexOf("\r\n", lineEnd + 2)
        if (trailerEnd < 0) return undefined
        // No trailers expected: the chunked body ends with "0\r\n\r\n".
        return done(trailerEnd + 2, Buffer.concat(chunks))
      }
      if (buffer.length < lineEnd + 2 + size + 2) return undefined
      chunks.push(buffer.subarray(lineEnd + 2, lineEnd + 2 + size))
      at = lineEnd + 2 + size + 2
    }
  }
  const length = value("content-length")
  if (length !== undefined) {
    const n = Number(length)
    if (buffer.length < start + n) return undefined
    return done(start + n, buffer.subarray(start, start + n))
  }
  return options.closed ? done(buffer.length, buffer.subarray(start)) : undefined
}

export class RawConnection {
  private chunks: Array<Buffer> = []
  private waiters: Array<() => void> = []
  private offset = 0
  private closedAt: number | undefined
  bytesSent = 0
  readonly openedAt = Date.now()

  private constructor(readonly socket: Socket) {
    socket.on("data", (chunk: Buffer) => {
      this.chunks.push(chunk)
      this.notify()
    })
    socket.on("close", () => {
      this.closedAt = Date.now()
      this.notify()
    })
    // A reset after the server answered is expected in some tests (it stops reading our upload).
    socket.on("error", () => {})
  }

  // localAddress: the client's own address, e.g. another loopback address (127.0.0.2) to be another client.
  static open(port: number, host = "127.0.0.1", localAddress?: string): Promise<RawConnection> {
    return new Promise((ok, fail) => {
      const socket = connect({ port, host, ...(localAddress === undefined ? {} : { localAddress }) })
      socket.setNoDelay(true)
      socket.once("connect", () => ok(new RawConnection(socket)))
      socket.once("error", fail)
    })
  }

  private notify() {
    const waiters = this.waiters
    this.waiters = []
    waiters.forEach((w) => w())
  }

  private changed(): Promise<void> {
    return new Promise((ok) => this.waiters.push(ok))
  }

  // Until something arrives or the connection closes, at most `ms`.
  private async changedWithin(ms: number): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined
    await Promise.race([this.changed(), new Promise<void>((ok) => (timer = setTimeout(ok, ms)))])
    clearTimeout(timer)
  }

  get received(): Buffer {
    if (this.chunks.length > 1) this.chunks = [Buffer.concat(this.chunks)]
    return this.chunks[0] ?? Buffer.alloc(0)
  }
  get closed(): boolean {
    return this.closedAt !== undefined
  }
  // Milliseconds from connect to the server's close, if it closed.
  get closedAfter(): number | undefined {
    return this.closedAt === undefined ? undefined : this.closedAt - this.openedAt
  }
  // Whether a complete response head has arrived (not yet consumed by response()).
  get hasResponseHead(): boolean {
    return this.received.subarray(this.offset).includes(headerEnd)
  }

  // Writes and waits until the bytes are handed to the kernel (backpressure respected). Fails once the
  // server has closed or reset the connection.
  write(data: string | Buffer): Promise<void> {
    const bytes = typeof data === "string" ? Buffer.from(data, "latin1") : data
    return new Promise((ok, fail) => {
      if (this.socket.destroyed || this.closed) return fail(new Error("connection closed"))
      this.socket.write(bytes, (error) => {
        if (error) return fail(error)
        this.bytesSent += bytes.length
        ok()
      })
    })
  }

  // The next complete response on this connection.
  async response(options: { readonly head?: boolean; readonly timeoutMs?: number } = {}): Promise<RawResponse> {
    const deadline = Date.now() + (options.timeoutMs ?? 10_000)
    for (;;) {
      const parsed = parseResponse(this.received.subarray(this.offset), { ...options, closed: this.closed })
      if (parsed !== undefined) {
        this.offset += parsed.consumed
        return parsed.response
      }
      if (this.closed) {
        throw new Error(`connection closed before a complete response:\n${this.received.toString("latin1")}`)
      }
      const left = deadline - Date.now()
      if (left <= 0) throw new Error(`no complete response in time:\n${this.received.toString("latin1")}`)
      await this.changedWithin(left)
    }
  }

  // Resolves with true as soon as `condition` holds (checked whenever bytes arrive or the connection closes),
  // with false when timeoutMs pass first.
  async waitFor(condition: () => boolean, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs
    while (!condition()) {
      const left = deadline - Date.now()
      if (left <= 0) return false
      await this.changedWithin(left)
    }
    return true
  }

  // Resolves with true when the server closed the connection within timeoutMs.
  waitClose(timeoutMs: number): Promise<boolean> {
    return this.waitFor(() => this.closed, timeoutMs)
  }

  destroy(): void {
    this.socket.destroy()
  }
}

export interface RequestSpec {
  readonly method: string
  readonly target: string
  // In the order and case to send; Host and Connection: close are added unless given.
  readonly headers?: HeaderList | Readonly<Record<string, string>>
  readonly body?: string
}

export const requestText = (port: number, spec: RequestSpec): string => {
  const given: HeaderList = Array.isArray(spec.headers)
    ? spec.headers as HeaderList
    : Object.entries(spec.headers ?? {})
  const names = new Set(given.map(([n]) => n.toLowerCase()))
  const headers: Array<readonly [string, string]> = []
  if (!names.has("host")) headers.push(["Host", `127.0.0.1:${port}`])
  headers.push(...given)
  if (!names.has("connection")) headers.push(["Connection", "close"])
  if (spec.body !== undefined && !names.has("content-length") && !names.has("transfer-encoding")) {
    headers.push(["Content-Length", String(Buffer.byteLength(spec.body))])
  }
  return `${spec.method} ${spec.target} HTTP/1.1\r\n${headers.map(([n, v]) => `${n}: ${v}\r\n`).join("")}\r\n${
    spec.body ?? ""
  }`
}

// One request on its own connection (Connection: close): the response, with rawBody holding every byte the
// server sent after the header block until it closed the connection.
export const rawRequest = async (
  port: number,
  spec: RequestSpec,
  timeoutMs = 10_000,
  localAddress?: string
): Promise<RawResponse & { readonly raw: Buffer }> => {
  const connection = await RawConnection.open(port, "127.0.0.1", localAddress)
  try {
    await connection.write(requestText(port, spec))
    const response = await connection.response({ head: spec.method === "HEAD", timeoutMs })
    if (!(await connection.waitClose(timeoutMs))) throw new Error("the server kept the connection open")
    const raw = connection.received
    const start = raw.indexOf(headerEnd) + headerEnd.length
    return { ...response, rawBody: raw.subarray(start), raw }
  } finally {
    connection.destroy()
  }
}
