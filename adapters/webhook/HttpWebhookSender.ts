import { Effect, Layer } from "effect"
import { createHmac, createSecretKey, type KeyObject } from "node:crypto"
import { lookup as lookupCallback } from "node:dns"
import { lookup } from "node:dns/promises"
import { isIP, type LookupFunction } from "node:net"
import {
  type Answer,
  SecretPrefix,
  type SignedRequest,
  UrlRefused,
  WebhookSender
} from "../../core/webhooks/Webhooks.ts"
import { makePostClient } from "./PostClient.ts"
import { hostOf, isLocalName, isPublicAddress } from "./PublicAddress.ts"

// Webhooks over HTTP(S) (PostClient.ts: kept-alive connections, a pool per origin), signed as Standard Webhooks
// says (webhook-id, webhook-timestamp, webhook-signature "v1,<base64 HMAC-SHA256 of id.timestamp.body>" keyed by
// the secret's bytes). Redirects are not followed (a redirect could point inside the network), and the name is
// resolved and checked before every round of attempts, so a name that later resolves to a private address is
// refused at delivery too. A new connection resolves the name through the same check (guardedLookup), so a name
// flipping between the check and the connection (DNS rebinding) is refused as well.
export interface WebhookSenderOptions {
  readonly allowHttp: boolean
  readonly allowPrivate: boolean
  readonly timeoutMs?: number
}

// Anything but a public unicast address (PublicAddress.ts): private, loopback, link-local, unique-local, multicast,
// unspecified, reserved, and the IPv6 forms that carry one of those.
export const isPrivateAddress = (ip: string): boolean => !isPublicAddress(ip)

// The HMAC key of a secret: its bytes as a KeyObject. createHmac given raw bytes checks and wraps them into a key
// on every call, which cost three times the HMAC of a delivery's body itself (about 10 µs of the delivery
// thread's 14 µs per signature); given a KeyObject it does not. Keyed by the secret itself, a few per endpoint
// at most (a rotation's), dropped all at once past MaxKeys.
const MaxKeys = 1024
const keys = new Map<string, KeyObject>()
const keyOf = (secret: string): KeyObject => {
  let key = keys.get(secret)
  if (key === undefined) {
    if (keys.size >= MaxKeys) keys.clear()
    key = createSecretKey(Buffer.from(secret.slice(SecretPrefix.length), "base64"))
    keys.set(secret, key)
  }
  return key
}

export const sign = (secret: string, id: string, timestamp: number, body: string) =>
  createHmac("sha256", keyOf(secret)).update(`${id}.${timestamp}.${body}`).digest("base64")

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

// The checks and sends without Effect: the delivery thread calls these for each of its jobs
// (adapters/thread/DeliveryWorker.ts), and the layer below wraps them, as SmtpMailer's makeSender does for mail.
export interface WebhookDelivery {
  // Why the URL is refused, or undefined.
  readonly refusal: (raw: string) => Promise<string | undefined>
  // Sends the requests at once (a round of one endpoint's deliveries): each one's Answer, in order (the status
  // it was answered with, or why there was none). Each URL is checked and resolved once per round. Never rejects; an aborted `signal` abandons the requests and
  // leaves the promise pending.
  readonly send: (
    requests: ReadonlyArray<SignedRequest>,
    signal?: AbortSignal
  ) => Promise<ReadonlyArray<Answer>>
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

  const client = makePostClient({ timeoutMs, lookup: allowPrivate ? undefined : guardedLookup })
  // A round's URL, checked: the URL to post to, or why nothing is posted there. node:net skips the `lookup`
  // option for an IP literal, so a literal is checked here as well, just before connecting.
  const target = async (raw: string): Promise<URL | string> => {
    const refused = await refusal(raw)
    if (refused !== undefined) return `refused: ${refused}`
    const url = new URL(raw)
    const host = hostOf(url)
    const literal = !allowPrivate && (isLocalName(host) || (isIP(host) !== 0 && isPrivateAddress(host)))
    return literal ? `refused: ${privateRefusal}` : url
  }
  // Redirects are not followed: a 3xx is an answer like any other non-2xx.
  const post = (request: SignedRequest, url: URL, signal?: AbortSignal): Promise<Answer> => {
    const signature = sign(request.secret, request.id, request.timestamp, request.body)
    const headers = "content-type: application/json\r\nuser-agent: paysub-webhooks/1\r\n" +
      `webhook-id: ${request.id}\r\nwebhook-timestamp: ${request.timestamp}\r\nwebhook-signature: v1,${signature}\r\n`
    return client.post(url, headers, request.body, signal).then((outcome) =>
      "error" in outcome ? outcome.error : outcome.status
    )
  }

  return {
    refusal,
    // A throw fails the round's deliveries like a network error.
    send: async (requests, signal) => {
      const urls = [...new Set(requests.map((r) => r.url))]
      try {
        const targets = new Map(await Promise.all(urls.map(async (raw) => [raw, await target(raw)] as const)))
        return await Promise.all(requests.map((request) => {
          const url = targets.get(request.url)!
          return typeof url === "string" ? url : post(request, url, signal)
        }))
      } catch (e) {
        return requests.map(() => causeOf(e))
      }
    }
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
    send: (requests) =>
      Effect.async<ReadonlyArray<Answer>>((resume, signal) => {
        delivery.send(requests, signal).then((answers) => resume(Effect.succeed(answers)))
      })
  })
}

export const layer = (options: WebhookSenderOptions) => Layer.succeed(WebhookSender, make(options))
