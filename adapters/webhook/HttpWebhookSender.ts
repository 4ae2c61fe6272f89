import { Effect, Layer } from "effect"
import { createHmac } from "node:crypto"
import { lookup as lookupCallback } from "node:dns"
import { lookup } from "node:dns/promises"
import { Agent as HttpAgent, request as httpRequest } from "node:http"
import { Agent as HttpsAgent, request as httpsRequest } from "node:https"
import { isIP, type LookupFunction } from "node:net"
import {
  DeliveryFailed,
  SecretPrefix,
  type SignedRequest,
  UrlRefused,
  WebhookSender
} from "../../core/webhooks/Webhooks.ts"
import { hostOf, isLocalName, isPublicAddress } from "./PublicAddress.ts"

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

// Anything but a public unicast address (PublicAddress.ts): private, loopback, link-local, unique-local, multicast,
// unspecified, reserved, and the IPv6 forms that carry one of those.
export const isPrivateAddress = (ip: string): boolean => !isPublicAddress(ip)

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

// The checks and sends without Effect: the delivery thread calls these for each of its jobs
// (adapters/thread/DeliveryWorker.ts), and the layer below wraps them, as SmtpMailer's makeSender does for mail.
export interface WebhookDelivery {
  // Why the URL is refused, or undefined.
  readonly refusal: (raw: string) => Promise<string | undefined>
  // Why the delivery failed, or undefined for a 2xx. Never rejects; an aborted `signal` abandons the request and
  // leaves the promise pending.
  readonly send: (request: SignedRequest, signal?: AbortSignal) => Promise<string | undefined>
}

export const makeDelivery = (options: WebhookSenderOptions): WebhookDelivery => {
  const timeoutMs = options.timeoutMs ?? 10_000
  const allowPrivate = options.allowPrivate

  const privateRefusal = "url points to a private, loopback or link-local address."

  const refusal = async (raw: string): Promise<string | undefined> => {
    const url = URL.canParse(raw) ? new URL(raw) : undefined
    if (url === undefined) return "url is not an absolute URL."
    if (url.protocol !== "https:" && !(options.allowHttp && url.protocol === "http:")) return "url must use https."
    if (url.username !== "" || url.password !== "") return "url must not carry credentials."
    if (allowPrivate) return undefined
    const host = hostOf(url)
    if (isLocalName(host)) return privateRefusal
    let addresses: ReadonlyArray<string> = [host]
    if (isIP(host) === 0) {
      try {
        addresses = (await lookup(host, { all: true, verbatim: true })).map((a) => a.address)
      } catch {
        return "url's host name does not resolve."
      }
    }
    return addresses.some(isPrivateAddress) ? privateRefusal : undefined
  }

  const post = (request: SignedRequest, signal?: AbortSignal) =>
    new Promise<string | undefined>((resolve) => {
      const url = new URL(request.url)
      // node:net skips the `lookup` option for an IP literal, so the literal is checked here, just before connecting.
      const host = hostOf(url)
      if (!allowPrivate && (isLocalName(host) || (isIP(host) !== 0 && isPrivateAddress(host)))) {
        return resolve(`refused: ${privateRefusal}`)
      }
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
      const finish = (reason: string | undefined) => {
        clearTimeout(timer)
        resolve(reason)
      }
      // Redirects are not followed: a 3xx is an answer like any other non-2xx.
      const req = (url.protocol === "https:" ? httpsRequest : httpRequest)(url, options, (response) => {
        response.resume()
        response.on("end", () => {
          const status = response.statusCode ?? 0
          finish(status >= 200 && status < 300 ? undefined : `HTTP ${status}`)
        })
        response.on("error", (e) => finish(causeOf(e)))
      })
      const timer = setTimeout(() => {
        finish(`no answer within ${timeoutMs / 1000} s`)
        req.destroy()
      }, timeoutMs)
      req.on("error", (e) => finish(causeOf(e)))
      signal?.addEventListener("abort", () => {
        clearTimeout(timer)
        req.destroy()
      }, { once: true })
      req.end(body)
    })

  return {
    refusal,
    // A throw of node:http's (say, a header it will not send) fails the delivery like a network error.
    send: (request, signal) =>
      refusal(request.url).then((refused) => refused === undefined ? post(request, signal) : `refused: ${refused}`)
        .catch(causeOf)
  }
}

export const make = (options: WebhookSenderOptions) => {
  const delivery = makeDelivery(options)
  return WebhookSender.of({
    check: (raw) =>
      Effect.flatMap(
        Effect.promise(() => delivery.refusal(raw)),
        (reason) => reason === undefined ? Effect.void : Effect.fail(new UrlRefused({ reason }))
      ),
    send: (request) =>
      Effect.async<void, DeliveryFailed>((resume, signal) => {
        delivery.send(request, signal).then((reason) =>
          resume(reason === undefined ? Effect.void : Effect.fail(new DeliveryFailed({ reason })))
        )
      })
  })
}

export const layer = (options: WebhookSenderOptions) => Layer.succeed(WebhookSender, make(options))
