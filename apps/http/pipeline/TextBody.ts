import { HttpServerResponse } from "@effect/platform"

// The API's answers carry their text as the body, not its UTF-8 bytes, with the Content-Length of those bytes:
// Node writes a string body in the same write as the head, where a Uint8Array is a second buffer (a writev), and
// the bytes are made once, by that write. Same status, headers and bytes as HttpServerResponse.text and
// unsafeJson give (docs/decisions/0070).
export interface TextOptions {
  readonly status?: number | undefined
  readonly headers?: Readonly<Record<string, string>> | undefined
  readonly contentType?: string | undefined
}

export const textAnswer = (text: string, options?: TextOptions): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.raw(text, {
    status: options?.status ?? 200,
    ...(options?.headers === undefined ? {} : { headers: options.headers }),
    contentType: options?.contentType ?? "text/plain",
    contentLength: Buffer.byteLength(text)
  })

export const jsonAnswer = (value: unknown, options?: TextOptions): HttpServerResponse.HttpServerResponse =>
  textAnswer(JSON.stringify(value), { ...options, contentType: options?.contentType ?? "application/json" })
