import { HttpServerResponse } from "@effect/platform"
import type { IncomingRequest } from "./Pipeline.ts"

const redactedInTrace = new Set(["authorization", "cookie", "proxy-authorization"])

// TRACE: the request line and header fields as received (Node keeps their case and order; Deno gives them in
// lower case), credentials left out.
export const traceEcho = (request: IncomingRequest) => {
  const raw = request.rawHeaders()
  const lines = [`${request.method} ${request.url} HTTP/${request.httpVersion}`]
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!
    lines.push(redactedInTrace.has(name.toLowerCase()) ? `${name}: [removed]` : `${name}: ${raw[i + 1]}`)
  }
  return HttpServerResponse.text(`${lines.join("\r\n")}\r\n\r\n`, { contentType: "message/http" })
}
