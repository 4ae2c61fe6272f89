import { type HttpApi, type HttpApiEndpoint, type HttpApiGroup, HttpServerResponse } from "@effect/platform"
import { Context, Effect, type Fiber, FiberRefs, Layer, Runtime } from "effect"
import { SiteSettings } from "../../core/SiteSettings.ts"
import { apiError } from "./ApiError.ts"
import { groupTag } from "./ApiHandlers.ts"
import type { RequestHeaders } from "./Caching.ts"
import {
  acceptedBodies,
  CurrentRequestId,
  hasBody,
  type Limiters,
  limitKey,
  makeResponder,
  mediaType,
  rateLimited,
  RequestIdHeader,
  requestIdOf
} from "./Edge.ts"
import { compileEndpoint, type Endpoint } from "./Endpoint.ts"
import { makeRouter } from "./Routes.ts"
import { traceEcho } from "./Trace.ts"

// The one request pipeline, derived from the HttpApi: every request, on Node and on Deno, is routed by the
// spec's paths and methods, checked against the spec's schemas (path, payload and its media types, headers,
// query), authenticated by the spec's security, answered by the handler of its endpoint and encoded with the
// spec's success schema and status. The OpenAPI document and the typed client come from the same spec.
//
// It replaces HttpApiBuilder's router and middleware stack (docs/decisions/0021-one-request-pipeline.md): a request
// is one fiber running one Effect built from steps compiled once per endpoint (apps/http/Endpoint.ts).
export interface IncomingRequest {
  readonly method: string
  // Path and query, as in the request line.
  readonly url: string
  readonly headers: RequestHeaders
  readonly remoteAddress: string | undefined
  readonly httpVersion: string
  // Field names and values as received, in order (TRACE echoes them; read only then).
  readonly rawHeaders: () => ReadonlyArray<string>
  // The body as text: rejects with BodyTooLarge past maxBytes (the rest is discarded, so the answer still
  // reaches the client), and with another error when the client goes away.
  readonly text: (maxBytes: number) => Promise<string>
}

export class BodyTooLarge extends Error {}

// The fiber answering a request; observe it with addObserver (called at once when it is already done).
export type Pipeline = (request: IncomingRequest) => Fiber.RuntimeFiber<HttpServerResponse.HttpServerResponse>

export interface PipelineOptions {
  readonly maxBodyBytes: number
  readonly trace: boolean
  readonly limiters: Limiters
}

export const makePipeline = <ApiId extends string, Groups extends HttpApiGroup.HttpApiGroup.Any, E, R>(
  api: HttpApi.HttpApi<ApiId, Groups, E, R>,
  options: PipelineOptions
): Effect.Effect<Pipeline, never, HttpApiGroup.ApiGroup<ApiId, Groups["identifier"]> | SiteSettings> =>
  Effect.gen(function*() {
    const { render, respond } = makeResponder((yield* SiteSettings).baseUrl)
    const base = yield* Effect.runtime<never>()
    const bodyTooLarge = () => apiError("body_too_large", "The request body is too large.")
    const readBody = (request: IncomingRequest) =>
      Effect.catchAll(
        Effect.tryPromise({ try: () => request.text(options.maxBodyBytes), catch: (e) => e }),
        (e) => e instanceof BodyTooLarge ? Effect.fail(bodyTooLarge()) : Effect.interrupt
      )

    const routes: Array<{ method: string; path: string; value: Endpoint }> = []
    for (const group of Object.values((api as unknown as HttpApi.HttpApi.AnyWithProps).groups)) {
      const implemented = yield* groupTag(api.identifier, group.identifier as Groups["identifier"])
      for (const endpoint of Object.keys(group.endpoints)) {
        const item = implemented.items.find((i) => i.endpoint.name === endpoint)
        if (item === undefined) return yield* Effect.dieMessage(`${group.identifier}.${endpoint} has no handler`)
        if (item.withFullRequest) return yield* Effect.dieMessage(`${group.identifier}.${endpoint}: handleRaw`)
        const { method, path } = item.endpoint as HttpApiEndpoint.HttpApiEndpoint.AnyWithProps
        routes.push({ method, path, value: compileEndpoint(group, item, implemented.context, base, readBody) })
      }
    }
    const router = makeRouter(routes, { trace: options.trace })
    const unrouted = Runtime.make({
      context: Context.empty(),
      fiberRefs: base.fiberRefs,
      runtimeFlags: base.runtimeFlags
    })

    const unsupportedType = (accepts: ReadonlyArray<string>) =>
      apiError(
        "unsupported_media_type",
        accepts.length === 1
          ? `Content-Type must be ${accepts[0]}.`
          : `Content-Type must be one of ${accepts.join(", ")}.`
      )

    interface Routed {
      readonly endpoint: Endpoint
      readonly params: Readonly<Record<string, string>>
    }

    // What is decided before the endpoint runs, in this order: TRACE, OPTIONS, 405 + Allow, rate limits, the
    // declared length, the media type, 404.
    const route = (
      request: IncomingRequest,
      pathname: string,
      requestId: string
    ): Effect.Effect<HttpServerResponse.HttpServerResponse, unknown> | Routed => {
      const { headers, method } = request
      const resource = router.lookup(pathname)
      const allowed = resource?.allowed
      if (method === "TRACE") {
        if (options.trace) return Effect.succeed(traceEcho(request))
        if (allowed === undefined) return Effect.fail(apiError("route_not_found", "No such route."))
        return Effect.succeed(render(
          apiError("method_not_allowed", "TRACE is disabled on this server."),
          requestId,
          { allow: allowed.join(", ") }
        ))
      }
      if (allowed !== undefined && method === "OPTIONS") {
        return Effect.succeed(HttpServerResponse.empty({ status: 204, headers: { allow: allowed.join(", ") } }))
      }
      if (allowed !== undefined && !allowed.includes(method)) {
        return Effect.succeed(render(
          apiError(
            "method_not_allowed",
            "This method is not allowed on this path; the Allow header lists the ones it takes."
          ),
          requestId,
          { allow: allowed.join(", ") }
        ))
      }
      const limited = limitKey(method, pathname, headers.authorization, request.remoteAddress, options.limiters)
      const wait = limited === undefined ? 0 : options.limiters[limited[1]](limited[0], Date.now())
      if (wait > 0) return Effect.succeed(render(rateLimited(wait), requestId, { "retry-after": String(wait) }))
      if (Number(headers["content-length"] ?? 0) > options.maxBodyBytes) {
        return Effect.fail(apiError("body_too_large", `The request body is larger than ${options.maxBodyBytes} bytes.`))
      }
      const endpoint = resource?.route(method)
      const accepts = endpoint?.accepts ?? acceptedBodies
      if (hasBody(headers) && !accepts.includes(mediaType(headers))) return Effect.fail(unsupportedType(accepts))
      if (endpoint === undefined) return Effect.fail(apiError("route_not_found", "No such route."))
      return { endpoint, params: resource!.params }
    }

    // HEAD answers carry the Content-Length the GET would have, without the body.
    const headLength = (response: HttpServerResponse.HttpServerResponse) =>
      response.body._tag === "Uint8Array"
        ? HttpServerResponse.setHeader(response, "content-length", String(response.body.body.length))
        : response

    return (request) => {
      const requestId = requestIdOf(request.headers[RequestIdHeader])
      const queryAt = request.url.indexOf("?")
      const pathname = queryAt === -1 ? request.url : request.url.slice(0, queryAt)
      const routed = route(request, pathname, requestId)
      let runtime = unrouted
      let effect: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown>
      if (Effect.isEffect(routed)) effect = routed
      else {
        runtime = routed.endpoint.runtime
        effect = routed.endpoint.run(request, routed.params, queryAt === -1 ? "" : request.url.slice(queryAt + 1))
      }
      const answered = respond(requestId, effect)
      return Runtime.runFork(runtime)(request.method === "HEAD" ? Effect.map(answered, headLength) : answered, {
        updateRefs: (refs, fiberId) =>
          FiberRefs.updateAs(refs, { fiberId, fiberRef: CurrentRequestId, value: requestId })
      })
    }
  })

export class RequestPipeline extends Context.Tag("RequestPipeline")<RequestPipeline, Pipeline>() {}

export const pipelineLayer = <ApiId extends string, Groups extends HttpApiGroup.HttpApiGroup.Any, E, R>(
  api: HttpApi.HttpApi<ApiId, Groups, E, R>,
  options: PipelineOptions
) => Layer.effect(RequestPipeline, makePipeline(api, options))
