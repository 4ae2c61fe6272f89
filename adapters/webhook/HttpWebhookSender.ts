import { Effect, Layer } from "effect"
import { createHmac } from "node:crypto"
import { lookup as lookupCallback } from "node:dns"
import { lookup } from "node:dns/promises"
import { Agent as HttpAgent, request as httpRequest } from "node:http"
import { Agent as HttpsAgent, request as httpsRequest } from "node:https"
import { isIP, type LookupFunction } from "node:net"
import { DeliveryFailed, SecretPrefix, UrlRefused, WebhookSender } from "../../core/Webhooks.ts"

// Webhooks over node:http(s), signed as Standard Webhooks says (webhook-id, webhook-timestamp, webhook-signature
// "v1,<base64 HMAC-SHA256 of id.timestamp.body>" keyed by the secret's bytes). Redirects are not followed (a
// redirect could point inside the network), and the name is resolved and checked before every attempt, so a
// name that later resolves to a private address is refused at delivery too. The connection itself resolves the
// name through the same check (guardedLookup), so a name flipping between the check and the connection (DNS
// rebinding) is refused as well.
export interface WebhookSenderOptions {
  readonly allowHttp: boolean
  readonly allowPrivate: boolean
  readonly timeoutMs?: number
}

const v4Private = (ip: string) => {
  const [a, b] = ip.split(".").map(Number) as [number, number]
  return a === 0 || a === 10 || a === 127 || (a === 100 && b >= 64 && b < 128) || (a === 169 && b === 254) ||
    (a === 172 && b >= 16 && b < 32) || (a === 192 && b === 168) || (a === 192 && b === 0) ||
    (a === 198 && (b === 18 || b === 19)) || a >= 224
}

// Private, loopback, link-local, unique-local, multicast and unspecified addresses.
export const isPrivateAddress = (ip: string): boolean => {
  if (isIP(ip) === 4) return v4Private(ip)
  const v6 = ip.toLowerCase().replace(/^\[|\]$/g, "")
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(v6)
  if (mapped) return v4Private(mapped[1]!)
  return v6 === "::" || v6 === "::1" || /^f[cd]/.test(v6) || /^fe[89ab]/.test(v6) || v6.startsWith("ff")
}

export const sign = (secret: string, id: string, timestamp: number, body: string) =>
  createHmac("sha256", Buffer.from(secret.slice(SecretPrefix.length), "base64"))
    .update(`${id}.${timestamp}.${body}`)
    .digest("base64")

// The resolver of the delivery's own connection: the addresses it would connect to, checked again.
export const guardedLookup: LookupFunction = (hostname, options, callback) =>
  lookupCallback(hostname, options, (error, address, family) => {
    if (error !== null) return callback(error, address as string, family)
    const all = Array.isArray(address) ? address.map((a: { address: string }) => a.address) : [address]
    if (all.some(isPrivateAddress)) {
      return callback(
        Object.assign(new Error("the host resolves to a private address"), { code: "EPRIVATEADDRESS" }),
        address as string,
        family
      )
    }
    callback(null, address as string, family)
  })

const causeOf = (e: unknown): string => {
  const code = (e as { code?: unknown })?.code
  return typeof code === "string" ? code : "network error"
}

// Connections are kept alive between deliveries (one endpoint gets many): a TLS handshake per event would
// cost more than the event.
const httpAgent = new HttpAgent({ keepAlive: true, maxSockets: 64 })
const httpsAgent = new HttpsAgent({ keepAlive: true, maxSockets: 64 })

export const make = (options: WebhookSenderOptions) => {
  const timeoutMs = options.timeoutMs ?? 10_000
  const allowPrivate = options.allowPrivate

  const check = (raw: string) =>
    Effect.gen(function*() {
      const url = URL.canParse(raw) ? new URL(raw) : undefined
      if (url === undefined) return yield* new UrlRefused({ reason: "url is not an absolute URL." })
      if (url.protocol !== "https:" && !(options.allowHttp && url.protocol === "http:")) {
        return yield* new UrlRefused({ reason: "url must use https." })
      }
      if (url.username !== "" || url.password !== "") {
        return yield* new UrlRefused({ reason: "url must not carry credentials." })
      }
      if (options.allowPrivate) return
      const host = url.hostname.replace(/^\[|\]$/g, "")
      const addresses = isIP(host) !== 0 ? [host] : yield* Effect.tryPromise({
        try: () => lookup(host, { all: true, verbatim: true }).then((all) => all.map((a) => a.address)),
        catch: () => new UrlRefused({ reason: "url's host name does not resolve." })
      })
      if (addresses.some(isPrivateAddress)) {
        return yield* new UrlRefused({ reason: "url points to a private, loopback or link-local address." })
      }
    })

  return WebhookSender.of({
    check,
    send: (request) =>
      check(request.url).pipe(
        Effect.mapError((e) => new DeliveryFailed({ reason: `refused: ${e.reason}` })),
        Effect.zipRight(Effect.async<number, DeliveryFailed>((resume) => {
          const url = new URL(request.url)
          const body = Buffer.from(request.body)
          const options = {
            method: "POST",
            agent: url.protocol === "https:" ? httpsAgent : httpAgent,
            ...(allowPrivate ? {} : { lookup: guardedLookup }),
            headers: {
              "content-type": "application/json",
              "content-length": String(body.length),
              "user-agent": "paysub-webhooks/1",
              "webhook-id": request.id,
              "webhook-timestamp": String(request.timestamp),
              "webhook-signature": `v1,${sign(request.secret, request.id, request.timestamp, request.body)}`
            }
          }
          let done = false
          const finish = (effect: Effect.Effect<number, DeliveryFailed>) => {
            if (done) return
            done = true
            clearTimeout(timer)
            resume(effect)
          }
          // Redirects are not followed: a 3xx is an answer like any other non-2xx.
          const req = (url.protocol === "https:" ? httpsRequest : httpRequest)(url, options, (response) => {
            response.resume()
            response.on("end", () => finish(Effect.succeed(response.statusCode ?? 0)))
            response.on("error", (e) => finish(Effect.fail(new DeliveryFailed({ reason: causeOf(e) }))))
          })
          const timer = setTimeout(() => {
            finish(Effect.fail(new DeliveryFailed({ reason: `no answer within ${timeoutMs / 1000} s` })))
            req.destroy()
          }, timeoutMs)
          req.on("error", (e) => finish(Effect.fail(new DeliveryFailed({ reason: causeOf(e) }))))
          req.end(body)
          return Effect.sync(() => {
            clearTimeout(timer)
            req.destroy()
          })
        })),
        Effect.flatMap((status) =>
          status >= 200 && status < 300 ? Effect.void : Effect.fail(new DeliveryFailed({ reason: `HTTP ${status}` }))
        )
      )
  })
}

export const layer = (options: WebhookSenderOptions) => Layer.succeed(WebhookSender, make(options))
