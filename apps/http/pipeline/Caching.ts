import { HttpServerResponse } from "@effect/platform"
import { DateTime, Schema } from "effect"
import { sha256 } from "../../../adapters/crypto/Sha256.ts"
import { textAnswer } from "./TextBody.ts"

// Conditional GETs (RFC 9110 13.1): a strong ETag from the representation's bytes, Last-Modified from the
// data, 304 when If-None-Match matches or, without If-None-Match, when If-Modified-Since is not older. A
// resource that keeps no time of its last change (a transfer changes when it is reconciled or refunded, a
// refund when it is answered) sends no Last-Modified and is validated by its ETag alone: a Last-Modified that
// does not move with every change would answer 304 to a stale copy.
export const etagOf = (body: string) => `"${sha256(body, "base64url").slice(0, 27)}"`
export const httpDate = (t: DateTime.Utc) => new Date(DateTime.toEpochMillis(t)).toUTCString()

// A client that revalidates sends back the one ETag it was given: that case is answered without parsing.
const matches = (ifNoneMatch: string, etag: string) =>
  ifNoneMatch === etag || ifNoneMatch.trim() === "*" ||
  ifNoneMatch.split(",").some((t) => t.trim().replace(/^W\//, "") === etag)

// The request's header fields, by lower-case name.
export type RequestHeaders = { readonly [name: string]: string | undefined }

// The header fields of a conditional GET, declared on the endpoints that answer 304 (and so in the spec).
export const ConditionalHeaders = Schema.Struct({
  "if-none-match": Schema.optional(Schema.String),
  "if-modified-since": Schema.optional(Schema.String)
})
// Those of a resource validated by its ETag alone.
export const EntityTagHeaders = Schema.Struct({ "if-none-match": Schema.optional(Schema.String) })

export const notModified = (
  headers: RequestHeaders,
  etag: string,
  lastModified: DateTime.Utc | undefined
): boolean => {
  const ifNoneMatch = headers["if-none-match"]
  if (ifNoneMatch !== undefined) return matches(ifNoneMatch, etag)
  if (lastModified === undefined) return false
  const since = Date.parse(headers["if-modified-since"] ?? "")
  return !Number.isNaN(since) && Math.floor(DateTime.toEpochMillis(lastModified) / 1000) * 1000 <= since
}

// Cache-Control: private, or public for maxAgeSeconds (60 by default) with Expires counted from `now`.
export type CacheControl =
  | { readonly public: false }
  | { readonly public: true; readonly maxAgeSeconds?: number; readonly now: DateTime.Utc }

export const cacheableJson = (
  headers: RequestHeaders,
  body: string,
  lastModified: DateTime.Utc | undefined,
  cacheControl: CacheControl
) => {
  const etag = etagOf(body)
  const responseHeaders: Record<string, string> = {
    etag,
    ...(lastModified === undefined ? {} : { "last-modified": httpDate(lastModified) }),
    "cache-control": cacheControl.public ? `public, max-age=${cacheControl.maxAgeSeconds ?? 60}` : "private"
  }
  if (cacheControl.public) {
    responseHeaders.expires = httpDate(DateTime.add(cacheControl.now, { seconds: cacheControl.maxAgeSeconds ?? 60 }))
  }
  return notModified(headers, etag, lastModified)
    ? HttpServerResponse.empty({ status: 304, headers: responseHeaders })
    : textAnswer(body, { status: 200, contentType: "application/json", headers: responseHeaders })
}
