import { HttpServerResponse } from "@effect/platform"
import type { RequestHeaders } from "./Caching.ts"

// Cross-origin signups: a site listed in SUBSCRIBE_ALLOWED_ORIGINS may post its own form to POST /subscribe by
// fetch and read the answer. Only that route, only those origins: for any other origin the answers carry no
// CORS header, and the browser keeps the answer from the page.
export interface Cors {
  // The answer to a preflight (OPTIONS) from an allowed origin; undefined for the plain OPTIONS answer.
  readonly preflight: (
    pathname: string,
    headers: RequestHeaders,
    allowed: ReadonlyArray<string>
  ) => HttpServerResponse.HttpServerResponse | undefined
  // Every answer to POST /subscribe (errors included), with the headers that let the allowed origin read it.
  readonly answer: (
    method: string,
    pathname: string,
    headers: RequestHeaders,
    response: HttpServerResponse.HttpServerResponse
  ) => HttpServerResponse.HttpServerResponse
}

const Path = "/subscribe"
const MaxAgeSeconds = "600"

// "https://Example.com/" and "https://example.com" are one origin: scheme and host in lower case, no slash.
export const parseOrigins = (list: string): ReadonlyArray<string> =>
  list.split(",").map((o) => o.trim().replace(/\/+$/, "").toLowerCase()).filter((o) => o !== "")

export const makeCors = (origins: ReadonlyArray<string>): Cors | undefined => {
  if (origins.length === 0) return undefined
  const allowedOrigin = (headers: RequestHeaders) => {
    const origin = headers.origin
    return origin !== undefined && origins.includes(origin.toLowerCase()) ? origin : undefined
  }
  return {
    preflight: (pathname, headers, allowed) => {
      const origin = pathname === Path ? allowedOrigin(headers) : undefined
      if (origin === undefined) return undefined
      return HttpServerResponse.empty({
        status: 204,
        headers: {
          allow: allowed.join(", "),
          "access-control-allow-origin": origin,
          "access-control-allow-methods": "POST",
          "access-control-allow-headers": "Content-Type, Accept, X-Request-Id",
          "access-control-max-age": MaxAgeSeconds,
          vary: "Origin"
        }
      })
    },
    answer: (method, pathname, headers, response) => {
      if (pathname !== Path || method !== "POST") return response
      const origin = allowedOrigin(headers)
      if (origin === undefined) return HttpServerResponse.setHeader(response, "vary", "Origin")
      return HttpServerResponse.setHeaders(response, {
        "access-control-allow-origin": origin,
        "access-control-expose-headers": "X-Request-Id",
        vary: "Origin"
      })
    }
  }
}
