import { type HttpApi, type HttpApiEndpoint, type HttpApiGroup, HttpServerResponse } from "@effect/platform"
import {
  Cause,
  Context,
  Effect,
  Equal,
  Exit,
  type Fiber,
  type FiberId,
  FiberRef,
  FiberRefs,
  Layer,
  Option,
  Runtime
} from "effect"
import { SiteSettings } from "../../../core/shared/SiteSettings.ts"
import { StorageHealth } from "../../../core/shared/StorageHealth.ts"
import { apiError } from "./ApiError.ts"
import { groupTag } from "./ApiHandlers.ts"
import type { RequestHeaders } from "./Caching.ts"
import type { Cors } from "./Cors.ts"
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
  requestIdOf,
  validHost
} from "./Edge.ts"
import { compileEndpoint, type Endpoint } from "./Endpoint.ts"
import { rateLimitedLabels, rateLimitedRequests, recordAnswer } from "./Observability.ts"
import { makeRouter } from "./Routes.ts"
import { authenticatedAs } from "./Security.ts"
import { SharedLimiter } from "./SharedLimiter.ts"
import { traceEcho } from "./Trace.ts"

// The one request pipeline, derived from the HttpApi: every request, on Node and on Deno, is routed by the
// spec's paths and methods, checked against the spec's schemas (path, payload and its media types, headers,
// query), authenticated by the spec's security, answered by the handler of its endpoint and encoded with the
// spec's success schema and status. The OpenAPI document and the typed client come from the same spec.
//
// It replaces HttpApiBuilder's router and middleware stack (docs/decisions/0021-one-request-pipeline.md): a request
// is one fiber running one Effect built from steps compiled once per endpoint (apps/http/pipeline/Endpoint.ts).
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

const clientIdOf = (client: unknown): string =>
  typeof client === "object" && client !== null && typeof (client as { id?: unknown }).id === "string"
    ? (client as { id: string }).id
    : ""

// The fiber answering a request; observe it with addObserver (called at once when it is already done).
export type Pipeline = (request: IncomingRequest) => Fiber.RuntimeFiber<HttpServerResponse.HttpServerResponse>

export interface PipelineOptions {
  readonly maxBodyBytes: number
  readonly trace: boolean
  readonly limiters: Limiters
  // SUBSCRIBE_ALLOWED_ORIGINS (apps/http/pipeline/Cors.ts): preflights, and the headers of the answers, for those origins.
  readonly cors?: Cors | undefined
  // A span per request (route template, status) when a tracer exports them; none, at no cost, otherwise.
  readonly tracing: boolean
  // The access line's fields as log annotations (JSON lines), or all in its message (one line of text).
  readonly logFormat: "json" | "text"
}

export const makePipeline = <ApiId extends string, Groups extends HttpApiGroup.HttpApiGroup.Any, E, R>(
  api: HttpApi.HttpApi<ApiId, Groups, E, R>,
  options: PipelineOptions
): Effect.Effect<Pipeline, never, HttpApiGroup.ApiGroup<ApiId, Groups["identifier"]> | SiteSettings | StorageHealth> =>
  Effect.gen(function*() {
    const { render, respond } = makeResponder((yield* SiteSettings).baseUrl, (yield* StorageHealth).isUnavailable)
    const app = yield* Effect.runtime<never>()
    const base = Runtime.make({ ...app, fiberRefs: forkedRefs(app.fiberRefs) })
    const shared = Option.getOrUndefined(yield* Effect.serviceOption(SharedLimiter))
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
        routes.push({
          method,
          path,
          value: compileEndpoint(group, item, implemented.context, base, readBody, options.tracing)
        })
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

    // The route template of the request being routed (routing is synchronous), for its metrics, log and span.
    let template = "unmatched"
    // The shared limit's check, when the request draws from a bucket and the instances share them.
    let sharedCheck: Effect.Effect<number> | undefined

    // What is decided before the endpoint runs, in this order: TRACE, CONNECT, OPTIONS, 405 + Allow, rate limits,
    // the declared length, the media type, 404.
    const route = (
      request: IncomingRequest,
      pathname: string,
      requestId: string
    ): Effect.Effect<HttpServerResponse.HttpServerResponse, unknown> | Routed => {
      const { headers, method } = request
      if (!validHost(headers.host)) {
        return Effect.fail(apiError("host_invalid", "The Host header is not a valid host and port."))
      }
      const resource = router.lookup(pathname)
      const allowed = resource?.allowed
      template = resource?.route(method)?.route ?? "unmatched"
      if (method === "TRACE") {
        if (options.trace) return Effect.succeed(traceEcho(request))
        if (allowed === undefined) return Effect.fail(apiError("route_not_found", "No such route."))
        return Effect.succeed(render(
          apiError("method_not_allowed", "TRACE is disabled on this server."),
          requestId,
          { allow: allowed.join(", ") }
        ))
      }
      // CONNECT asks for a tunnel to host:port, and this service is no proxy. A path it has answers with the
      // path's Allow below; anything else with the methods the service takes.
      if (method === "CONNECT" && allowed === undefined) {
        return Effect.succeed(render(
          apiError("method_not_allowed", "This service is no proxy: CONNECT is not allowed; Allow lists its methods."),
          requestId,
          { allow: router.methods.join(", ") }
        ))
      }
      if (allowed !== undefined && method === "OPTIONS") {
        return Effect.succeed(
          options.cors?.preflight(pathname, headers, allowed) ??
            HttpServerResponse.empty({ status: 204, headers: { allow: allowed.join(", ") } })
        )
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
      sharedCheck = limited === undefined || shared === undefined ? undefined : shared(limited[1], limited[0])
      if (wait > 0) {
        rateLimitedRequests.unsafeUpdate(1, rateLimitedLabels(limited![1]))
        return Effect.succeed(render(rateLimited(wait), requestId, { "retry-after": String(wait) }))
      }
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

    const traced = (
      effect: Effect.Effect<HttpServerResponse.HttpServerResponse>,
      method: string,
      route: string
    ) =>
      Effect.withSpan(
        Effect.tap(effect, (response) => Effect.annotateCurrentSpan("http.response.status_code", response.status)),
        `${method} ${route}`,
        { kind: "server", attributes: { "http.request.method": method, "http.route": route } }
      )

    // The request id of the fiber being forked (forking is synchronous), set as it starts.
    let forkingRequestId = ""
    const forkOptions = {
      updateRefs: (refs: FiberRefs.FiberRefs, fiberId: FiberId.Runtime) =>
        withRequestId(refs, fiberId, forkingRequestId)
    }

    return (request) => {
      const startedAt = performance.now()
      const requestId = requestIdOf(request.headers[RequestIdHeader])
      const queryAt = request.url.indexOf("?")
      const pathname = queryAt === -1 ? request.url : request.url.slice(0, queryAt)
      sharedCheck = undefined
      template = "unmatched"
      let runtime = unrouted
      let effect: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown>
      // Routing and the steps that run before the first asynchronous one are plain calls: whatever one throws
      // becomes a defect of this request (logged, answered 500), never an exception out of the server's callback.
      try {
        const routed = route(request, pathname, requestId)
        const check = sharedCheck as Effect.Effect<number> | undefined
        if (Effect.isEffect(routed)) effect = routed
        else {
          runtime = routed.endpoint.runtime
          const query = queryAt === -1 ? "" : request.url.slice(queryAt + 1)
          const run = routed.endpoint.run
          effect = check === undefined ? run(request, routed.params, query) : Effect.flatMap(check, (wait) => {
            if (wait === 0) return run(request, routed.params, query)
            rateLimitedRequests.unsafeUpdate(1, rateLimitedLabels("shared"))
            return Effect.succeed(render(rateLimited(wait), requestId, { "retry-after": String(wait) }))
          })
        }
      } catch (thrown) {
        effect = Effect.die(thrown)
      }
      const routeTemplate = template
      const cors = options.cors
      const answered = cors === undefined
        ? respond(requestId, effect)
        : Effect.map(respond(requestId, effect), (r) => cors.answer(request.method, pathname, request.headers, r))
      const headed = request.method === "HEAD" ? Effect.map(answered, headLength) : answered
      forkingRequestId = requestId
      // Runtime.runFork(runtime)(effect) would make a closure and an array of arguments first.
      const fiber = Runtime.runFork(
        runtime,
        options.tracing ? traced(headed, request.method, routeTemplate) : headed,
        forkOptions
      )
      fiber.addObserver((exit) =>
        recordAnswer(fiber, {
          method: request.method,
          route: routeTemplate,
          status: Exit.isSuccess(exit) ? exit.value.status : Cause.isInterruptedOnly(exit.cause) ? 499 : 500,
          requestId,
          startedAt,
          clientId: clientIdOf(authenticatedAs.get(request))
        }, options.logFormat)
      )
      return fiber
    }
  })

// The refs a request's fiber starts from: the app's, less those that need no copy. Every fork copies each ref
// it is given into the new fiber's own map, so the context (which the fork sets anew), the runtime flags (which a
// fiber refreshes before anyone reads them) and the refs still at their initial value (which a fiber reads when
// it has none) are left out: each fiber reads the very same values, from fewer entries.
export const forkedRefs = (refs: FiberRefs.FiberRefs): FiberRefs.FiberRefs => {
  const initial = FiberRefs.empty()
  let kept = refs
  for (const ref of FiberRefs.fiberRefs(refs)) {
    if (
      ref === FiberRef.currentContext || ref === FiberRef.currentRuntimeFlags ||
      Equal.equals(FiberRefs.getOrDefault(refs, ref), FiberRefs.getOrDefault(initial, ref))
    ) kept = FiberRefs.delete(kept, ref)
  }
  return kept
}

// The request id as the fiber's own value of CurrentRequestId. The refs handed to updateRefs are the new fiber's
// own copy (Runtime.runFork has just made them from the runtime's), so the id is set in them rather than in a
// second copy of every ref: FiberRefs.updateAs would copy the map again.
export const withRequestId = (refs: FiberRefs.FiberRefs, fiberId: FiberId.Runtime, requestId: string) => {
  refs.locals.set(CurrentRequestId, [[fiberId, requestId]])
  return refs
}

export class RequestPipeline extends Context.Tag("RequestPipeline")<RequestPipeline, Pipeline>() {}

export const pipelineLayer = <ApiId extends string, Groups extends HttpApiGroup.HttpApiGroup.Any, E, R>(
  api: HttpApi.HttpApi<ApiId, Groups, E, R>,
  options: PipelineOptions
) => Layer.effect(RequestPipeline, makePipeline(api, options))
