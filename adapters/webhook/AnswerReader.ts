// An HTTP/1.x answer read as RFC 9112 frames it, for PostClient.ts: no body for 1xx, 204 and 304, else chunked,
// else Content-Length, else until the connection closes. Only the status and whether the connection may carry
// another request are kept; the body is read and dropped. Interim answers (100 Continue, 103 Early Hints) are
// skipped; heads and chunk lines are bounded.

const MaxHead = 16 * 1024

export interface Answer {
  readonly status: number
  readonly keep: boolean
}

// The answer on a connection, fed its bytes as they come (latin1: one character per byte).
export const answerReader = () => {
  let buffer = ""
  let status = 0
  let keep = false
  // Where the answer is: its head; a body of `left` bytes; a chunked body's size line, data (`left` bytes), the
  // CRLF after the data, or trailers; a body that ends with the connection; or the end.
  let at: "head" | "length" | "size" | "data" | "crlf" | "trailers" | "close" | "end" = "head"
  let left = 0

  // Reads a whole head from the buffer: why it cannot be read, or undefined. The caller has seen its end.
  const head = (end: number): string | undefined => {
    const lines = buffer.slice(0, end).split("\r\n")
    buffer = buffer.slice(end + 4)
    const line = /^HTTP\/1\.([01]) ([1-9]\d\d)(?: |$)/.exec(lines[0]!)
    if (line === null) return "not an HTTP/1.x answer"
    status = Number(line[2])
    // An interim answer (100 Continue, 103 Early Hints): the final one follows. A switch of protocol does not.
    if (status === 101) return "the server switched protocols"
    if (status < 200) return undefined
    const fields = new Map<string, string>()
    for (const field of lines.slice(1)) {
      const colon = field.indexOf(":")
      if (colon <= 0) return "malformed answer header"
      const name = field.slice(0, colon).trim().toLowerCase()
      const value = field.slice(colon + 1).trim()
      fields.set(name, fields.has(name) ? `${fields.get(name)}, ${value}` : value)
    }
    keep = line[1] === "1" && !/(^|,)\s*close\s*(,|$)/i.test(fields.get("connection") ?? "")
    const encoding = fields.get("transfer-encoding")
    const length = fields.get("content-length")
    if (status === 204 || status === 304) at = "end"
    else if (encoding !== undefined) at = /(^|,)\s*chunked$/i.test(encoding) ? "size" : "close"
    else if (length === undefined) at = "close"
    else if (/^\d{1,15}$/.test(length)) [at, left] = ["length", Number(length)]
    else return "malformed Content-Length"
    if (at === "close") keep = false
    return undefined
  }

  // Takes up to `left` bytes of the buffer.
  const skip = () => {
    const take = Math.min(left, buffer.length)
    buffer = buffer.slice(take)
    left -= take
    return left === 0
  }

  // Reads what the buffer holds: why the answer cannot be read, or undefined (read on with more bytes, or ended).
  const read = (): string | undefined => {
    for (;;) {
      switch (at) {
        case "head": {
          const end = buffer.indexOf("\r\n\r\n")
          if (end < 0) return buffer.length > MaxHead ? "answer head too large" : undefined
          const flaw = head(end)
          if (flaw !== undefined) return flaw
          break
        }
        case "length":
          if (!skip()) return undefined
          at = "end"
          break
        case "size": {
          const end = buffer.indexOf("\r\n")
          if (end < 0) return buffer.length > MaxHead ? "malformed chunk" : undefined
          const size = /^([0-9a-fA-F]{1,12})(?:[ \t]*;.*)?$/.exec(buffer.slice(0, end))
          if (size === null) return "malformed chunk"
          buffer = buffer.slice(end + 2)
          left = Number.parseInt(size[1]!, 16)
          at = left === 0 ? "trailers" : "data"
          break
        }
        case "data":
          if (!skip()) return undefined
          at = "crlf"
          break
        case "crlf":
          if (buffer.length < 2) return undefined
          if (!buffer.startsWith("\r\n")) return "malformed chunk"
          buffer = buffer.slice(2)
          at = "size"
          break
        case "trailers": {
          if (buffer.startsWith("\r\n")) {
            buffer = buffer.slice(2)
            at = "end"
            break
          }
          const end = buffer.indexOf("\r\n\r\n")
          if (end < 0) return buffer.length > MaxHead ? "answer trailers too large" : undefined
          buffer = buffer.slice(end + 4)
          at = "end"
          break
        }
        case "close":
          buffer = ""
          return undefined
        case "end":
          return undefined
      }
    }
  }

  return {
    started: () => status !== 0 || buffer.length > 0,
    // The answer once it has ended, "more" until then, or why it cannot be read.
    feed: (bytes: string): Answer | "more" | { readonly error: string } => {
      buffer += bytes
      const flaw = read()
      if (flaw !== undefined) return { error: flaw }
      // Anything after the answer was not asked for: the connection is not reused.
      return at === "end" ? { status, keep: keep && buffer.length === 0 } : "more"
    },
    // The connection closed: the answer, if it was one that ends with the connection.
    closed: (): Answer | undefined => (at === "close" ? { status, keep: false } : undefined)
  }
}
