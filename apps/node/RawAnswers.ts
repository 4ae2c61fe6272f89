import type { HttpServerResponse } from "@effect/platform"
import { Exit, FiberId } from "effect"
import { type IncomingMessage, STATUS_CODES } from "node:http"
import type { Duplex } from "node:stream"
import { apiError } from "../http/pipeline/ApiError.ts"
import { errorBody, RequestIdHeader, requestIdOf } from "../http/pipeline/Edge.ts"
import type { ErrorCode } from "../http/pipeline/ErrorCatalog.ts"
import { ErrorCatalog } from "../http/pipeline/ErrorCatalog.ts"
import type { Pipeline } from "../http/pipeline/Pipeline.ts"

// What Node answers on its own, outside the pipeline (a request with Connection: Upgrade, a request its parser
// refuses, an Expect it does not know), answered with the documented error body and a request id, then closed.
const reasons: Record<number, string> = {
  400: "Bad Request",
  408: "Request Timeout",
  413: "Content Too Large",
  417: "Expectation Failed",
  431: "Request Header Fields Too Large"
}

const rawErrorResponse = (baseUrl: string, code: ErrorCode, message: string, incomingId?: string) => {
  const requestId = requestIdOf(incomingId)
  const status = ErrorCatalog[code].status
  const body = JSON.stringify(errorBody(baseUrl, apiError(code, message), requestId))
  return `HTTP/1.1 ${status} ${reasons[status] ?? ""}\r\nContent-Type: application/json\r\nContent-Length: ${
    Buffer.byteLength(body)
  }\r\nDate: ${new Date().toUTCString()}\r\n${RequestIdHeader}: ${requestId}\r\nConnection: close\r\n\r\n${body}`
}

// Writes the answer and closes the socket once it is written: nothing held open for the client to keep.
const answerAndClose = (socket: Duplex, response: string | Buffer) => {
  socket.on("error", () => socket.destroy())
  if (!socket.writable) return socket.destroy()
  socket.end(response, () => socket.destroy())
  // A client that reads nothing cannot hold it either.
  setTimeout(() => socket.destroy(), 1_000).unref()
}

export const refuseUpgrade = (baseUrl: string) => (request: IncomingMessage, socket: Duplex) =>
  answerAndClose(
    socket,
    rawErrorResponse(
      baseUrl,
      "upgrade_not_supported",
      "This service serves no websockets or other protocols: send the request without Upgrade.",
      request.headers[RequestIdHeader] as string | undefined
    )
  )

export const refuseExpectation = (baseUrl: string) => (request: IncomingMessage) =>
  answerAndClose(
    request.socket,
    rawErrorResponse(
      baseUrl,
      "expectation_failed",
      "Only Expect: 100-continue is supported.",
      request.headers[RequestIdHeader] as string | undefined
    )
  )

// Node's own answers to what its parser refuses, as its default listener chooses them.
const clientErrorCode = (code: string | undefined): [ErrorCode, string] =>
  code === "ERR_HTTP_REQUEST_TIMEOUT"
    ? ["request_timeout", "The request did not arrive in time."]
    : code === "HPE_HEADER_OVERFLOW"
    ? ["header_fields_too_large", "The header fields are too large."]
    : code === "HPE_CHUNK_EXTENSIONS_OVERFLOW"
    ? ["body_too_large", "The chunk extensions are too large."]
    : ["request_malformed", "The request is not well-formed HTTP/1.1."]

export const answerClientError = (baseUrl: string) => (error: Error & { code?: string }, socket: Duplex) => {
  // A response already under way (or a reset connection) cannot get another one.
  const inProgress = (socket as { _httpMessage?: { _headerSent?: boolean } })._httpMessage
  if (error.code === "ECONNRESET" || inProgress?._headerSent) return socket.destroy()
  const [code, message] = clientErrorCode(error.code)
  answerAndClose(socket, rawErrorResponse(baseUrl, code, message))
}

// The pipeline's answer, written on a socket that Node no longer frames answers for (after a CONNECT), then
// closed: a body is sent with its length, and nothing else is read from the socket.
const serialize = (method: string, answer: HttpServerResponse.HttpServerResponse) => {
  const body = answer.body._tag === "Uint8Array"
    ? Buffer.from(answer.body.body)
    : answer.body._tag === "Raw" && typeof answer.body.body === "string"
    ? Buffer.from(answer.body.body)
    : Buffer.alloc(0)
  const headers: Record<string, string> = { date: new Date().toUTCString(), ...answer.headers }
  headers["content-length"] = String(body.length)
  headers["connection"] = "close"
  const head = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join("")
  const statusLine = `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status] ?? ""}\r\n`
  return Buffer.concat([Buffer.from(`${statusLine}${head}\r\n`, "latin1"), method === "HEAD" ? Buffer.alloc(0) : body])
}

export const answerOnSocket = (fiber: ReturnType<Pipeline>, method: string, socket: Duplex) => {
  socket.on("error", () => socket.destroy())
  socket.once("close", () => fiber.unsafeInterruptAsFork(FiberId.none))
  fiber.addObserver(Exit.match({
    onSuccess: (answer) => answerAndClose(socket, serialize(method, answer)),
    onFailure: () => socket.destroy()
  }))
}
