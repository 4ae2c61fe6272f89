import { HttpApiError, HttpServerResponse, UrlParams } from "@effect/platform"
import { Context, Effect, type Fiber, Layer, ParseResult, Redacted, Runtime, Schema } from "effect"
import { Clients } from "../../core/Clients.ts"
import { SiteSettings } from "../../core/SiteSettings.ts"
import { Subscriptions } from "../../core/Subscriptions.ts"
import type { RequestHeaders } from "./Caching.ts"
import {
  acceptedBodies,
  hasBody,
  type Limiters,
  limitKey,
  makeResponder,
  mediaType,
  RequestIdHeader,
  requestIdOf,
  unparsableBody
} from "./Edge.ts"
import { bearerClient } from "./MerchantAuthLive.ts"
import { SubscribePayload } from "./SubscriptionsApi.ts"
import { subscribeAnswer } from "./SubscriptionsHandlers.ts"
import { CreateTransferPayload } from "./TransfersApi.ts"
import { TransferResponses } from "./TransfersHandlers.ts"

// The hot path: the three requests that carry the load (creating a transfer, reading one back, subscribing)
// answered with one Effect per request instead of the whole HttpApi stack (router, middleware chain, request
// and response schemas, span), which cost about 4x the CPU of the work itself. It gives the same answers as
// the HttpApi handlers because it calls the same code: the payload schemas of the endpoints, the shared
// response functions (TransferResponses, subscribeAnswer), the edge's rate limiters, request ids and error
// bodies. It only takes the plain, common case; anything else (HEAD, a query string, an Idempotency-Key, a
// missing or non-Bearer Authorization, another media type, a chunked, empty or over-limit body, a rate-limited
// client) is left to the HttpApi, before any byte of the body is read.
export interface HotRequest {
  readonly method: string
  // Path and query, as in the request line.
  readonly url: string
  readonly headers: RequestHeaders
  readonly remoteAddress: string | undefined
  readonly text: () => Promise<string>
}

// The fiber answering a request it takes (already done when nothing had to wait: observe it with addObserver,
// which then calls back at once), or undefined when it leaves the request to the HttpApi.
export type HotPathHandler = (
  request: HotRequest
) => Fiber.RuntimeFiber<HttpServerResponse.HttpServerResponse> | undefined
export class HotPath extends Context.Tag("HotPath")<HotPath, HotPathHandler>() {}

const TransfersPath = "/merchant/transfers/payment"
const transferIdPath = /^\/merchant\/transfers\/payment\/([A-Za-z0-9_]{1,64})$/
const BearerPrefix = "Bearer "

const decodeTransfer = Schema.decodeUnknown(CreateTransferPayload)
const decodeSubscribe = Schema.decodeUnknown(SubscribePayload)
const refailParseError = Effect.catchIf(ParseResult.isParseError, HttpApiError.HttpApiDecodeError.refailParseError)

export const hotPathLayer = (options: { readonly maxBodyBytes: number; readonly limiters: Limiters }) =>
  Layer.effect(
    HotPath,
    Effect.gen(function*() {
      // Nothing on this path reads CurrentRequestId or logs but the responder, which names the request id
      // itself: the fiber needs no FiberRefs of its own.
      const run = Runtime.runFork(yield* Effect.runtime<never>())
      const bearer = bearerClient(yield* Clients)
      const transfers = yield* TransferResponses
      const subscriptions = yield* Subscriptions
      const { respond } = makeResponder((yield* SiteSettings).baseUrl)

      const plainBody = (headers: RequestHeaders) => {
        const length = Number(headers["content-length"])
        return headers["transfer-encoding"] === undefined && length > 0 && length <= options.maxBodyBytes
      }
      // The client that hung up mid-body gets what the HttpApi gives it: an interrupted request.
      const body = (request: HotRequest) => Effect.catchAll(Effect.tryPromise(request.text), () => Effect.interrupt)
      const json = (text: string) => Effect.try({ try: () => JSON.parse(text) as unknown, catch: unparsableBody })

      // Takes a token from the request's bucket; false when the bucket is empty (the HttpApi then answers 429).
      const admitted = (request: HotRequest, path: string) => {
        const key = limitKey(request.method, path, request.headers.authorization, request.remoteAddress)
        if (key === undefined) return true
        return options.limiters[key[1]](key[0], Date.now()) === 0
      }

      const answer = <E>(
        request: HotRequest,
        effect: (requestId: string) => Effect.Effect<HttpServerResponse.HttpServerResponse, E>
      ) => {
        const requestId = requestIdOf(request.headers[RequestIdHeader])
        return run(respond(requestId, effect(requestId)))
      }

      const merchant = (request: HotRequest) => {
        const authorization = request.headers.authorization
        return authorization !== undefined && authorization.startsWith(BearerPrefix)
          ? bearer(Redacted.make(authorization.slice(BearerPrefix.length)))
          : undefined
      }

      return (request) => {
        const { headers, method, url } = request
        if (method === "POST" && url === TransfersPath) {
          const client = merchant(request)
          if (
            client === undefined || headers["idempotency-key"] !== undefined ||
            mediaType(headers) !== "application/json" || !plainBody(headers) || !admitted(request, url)
          ) return undefined
          return answer(request, (requestId) =>
            Effect.gen(function*() {
              const { id } = yield* client
              const payload = yield* body(request).pipe(Effect.flatMap(json), Effect.flatMap(decodeTransfer))
              return yield* transfers.submit(id, payload.payment_transfer, requestId)
            }).pipe(refailParseError))
        }
        if (method === "GET") {
          // A GET with a body meets the edge's body checks (415, 413) first: left to the HttpApi.
          if (hasBody(headers)) return undefined
          const id = transferIdPath.exec(url)?.[1]
          const client = id === undefined ? undefined : merchant(request)
          if (client === undefined || !admitted(request, url)) return undefined
          return answer(request, () => Effect.flatMap(client, (c) => transfers.get(c.id, id!, headers)))
        }
        if (method === "POST" && url === "/subscribe") {
          const type = mediaType(headers)
          if (!acceptedBodies.includes(type) || !plainBody(headers) || !admitted(request, url)) return undefined
          // The HttpApi picks the parser by substring of the whole header (@effect/platform's requestPayload):
          // so does this, for the same answer to e.g. a form type with "application/json" in a parameter.
          const form = !(headers["content-type"] ?? "").toLowerCase().includes("application/json")
          return answer(request, () =>
            body(request).pipe(
              Effect.flatMap((text) =>
                form
                  ? Effect.sync(() => UrlParams.toRecord(UrlParams.fromInput(new URLSearchParams(text))))
                  : json(text)
              ),
              Effect.flatMap(decodeSubscribe),
              Effect.flatMap((payload) => subscribeAnswer(subscriptions, payload)),
              // Every field of SubscribeResponse encodes to itself, so its JSON is the encoded body's (the HttpApi
              // encodes it; test/http/HotPath.http.test.ts compares both answers byte for byte).
              Effect.map((response) => HttpServerResponse.unsafeJson(response)),
              refailParseError
            ))
        }
        return undefined
      }
    })
  )
