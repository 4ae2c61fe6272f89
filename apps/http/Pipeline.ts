import {
  type HttpApi,
  type HttpApiEndpoint,
  type HttpApiGroup,
  HttpApiMiddleware,
  HttpApiSchema,
  HttpServerRequest,
  HttpServerResponse,
  UrlParams
} from "@effect/platform"
import { Context, Effect, Either, type Fiber, FiberRefs, Layer, Option, Redacted, Runtime, Schema } from "effect"
import { SiteSettings } from "../../core/SiteSettings.ts"
import { apiError } from "./ApiError.ts"
import { groupTag, middlewaresOf } from "./ApiHandlers.ts"
import type { RequestHeaders } from "./Caching.ts"
import { fromParseError } from "./DecodeErrors.ts"
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
  unparsableBody
} from "./Edge.ts"
import { jsonDepthWithin, MaxJsonDepth } from "./JsonDepth.ts"
import { makeRouter, type Match } from "./Routes.ts"
import { traceEcho } from "./Trace.ts"

// The one request pipeline, derived from the HttpApi: every request, on Node and on Deno, is routed by the
// spec's paths and methods, checked against the spec's schemas (path, payload and its media types, headers,
// query), authenticated by the spec's security, answered by the handler of its endpoint and encoded with the
// spec's success schema and status. The OpenAPI document and the typed client come from the same spec.
//
// It replaces HttpApiBuilder's router and middleware stack, which cost about 1,000 µs of CPU per request over
// the work itself (README, "Why the service has its own pipeline"): here a request is one fiber running one
// Effect built from steps compiled once per endpoint.
export interface IncomingRequest {
  readonly method: string
  // Path and query, as in the request line.
  readonly url: string
  readonly headers: RequestHeaders
  readonly remoteAddress: string | undefined
  readonly httpVersion: string
  // Field names and values as received, in order (TRACE echoes them).
  readonly rawHeaders: ReadonlyArray<string>
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

type Step = (request: IncomingRequest, params: Readonly<Record<string, string>>, query: string) => Effect.Effect<
  HttpServerResponse.HttpServerResponse,
  unknown
>

interface Endpoint {
  readonly run: Step
  readonly runtime: Runtime.Runtime<never>
  // Media types of the payload, from its encodings; the request-wide ones for an endpoint without a payload.
  readonly accepts: ReadonlyArray<string>
}

const BearerPrefixLength = "Bearer ".length

type Decoder = (
  input: unknown,
  use: (value: any) => Effect.Effect<HttpServerResponse.HttpServerResponse, unknown>
) => Effect.Effect<HttpServerResponse.HttpServerResponse, unknown>

// The spec's schemas are synchronous: decoded to an Either, without an Effect step per schema. A failure becomes
// the error body at once: the issue tree, which holds the input, is dropped here.
const decoder = (schema: Schema.Schema<any, any, any>): Decoder => {
  const decode = Schema.decodeUnknownEither(schema as Schema.Schema<unknown, unknown, never>)
  return (input, use) => {
    const result = decode(input)
    return Either.isLeft(result) ? Effect.fail(fromParseError(result.left)) : use(result.right)
  }
}

const queryRecord = (query: string) => UrlParams.toRecord(UrlParams.fromInput(new URLSearchParams(query)))

// The success schemas of an endpoint, each with its status and encoding (as HttpApiBuilder encodes them).
const successEncoder = (schema: Schema.Schema.Any) => {
  const members = new Set<Schema.Schema.Any>()
  HttpApiSchema.deunionize(members, schema)
  const encoders = [...members].map((member) => {
    const encode = Schema.encodeUnknownEither(member as Schema.Schema<unknown, unknown, never>)
    const status = HttpApiSchema.getStatusSuccess(member)
    const { contentType, kind } = HttpApiSchema.getEncoding(member.ast)
    const empty = HttpApiSchema.isVoid(member.ast)
    return {
      is: Schema.is(Schema.typeSchema(member as Schema.Schema<unknown, unknown, never>)),
      toResponse: (value: unknown): HttpServerResponse.HttpServerResponse => {
        if (empty) return HttpServerResponse.empty({ status })
        const encoded = Either.getOrThrow(encode(value))
        return kind === "Json"
          ? HttpServerResponse.unsafeJson(encoded, { status, contentType })
          : HttpServerResponse.text(encoded as string, { status, contentType })
      }
    }
  })
  return (value: unknown) =>
    HttpServerResponse.isServerResponse(value)
      ? value
      : (encoders.length === 1 ? encoders[0]! : encoders.find((e) => e.is(value)) ?? encoders[0]!).toResponse(value)
}

const payloadTypes = (schema: Schema.Schema.Any) => {
  const members = new Set<Schema.Schema.Any>()
  HttpApiSchema.deunionize(members, schema)
  return [...new Set([...members].map((m) => HttpApiSchema.getEncoding(m.ast).contentType))]
}

// Which parser reads the body: by substring of the whole Content-Type, as @effect/platform's HttpApiBuilder.
const parseBody = (contentType: string | undefined, text: string): Effect.Effect<unknown, unknown> => {
  const type = (contentType ?? "application/json").toLowerCase()
  if (type.includes("application/json")) {
    // A UTF-8 byte order mark, as some .NET and Windows clients send, is not part of the JSON text.
    const json = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text
    if (!jsonDepthWithin(json, MaxJsonDepth)) {
      return Effect.fail(apiError("body_invalid", `The request body nests deeper than ${MaxJsonDepth} levels.`))
    }
    return Effect.try({ try: () => JSON.parse(json) as unknown, catch: unparsableBody })
  }
  if (type.includes("x-www-form-urlencoded")) return Effect.sync(() => queryRecord(text))
  return Effect.succeed(text)
}

// A handler that asks for the whole request gets one built from the request line and header fields (the body
// has been read by then); none of the loaded endpoints asks.
const serverRequest = (request: IncomingRequest) =>
  HttpServerRequest.fromWeb(
    new Request(`http://${request.headers.host ?? "localhost"}${request.url}`, {
      method: request.method,
      headers: request.headers as Record<string, string>
    })
  )

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

    const compile = (
      group: HttpApiGroup.HttpApiGroup.AnyWithProps,
      item: {
        readonly endpoint: HttpApiEndpoint.HttpApiEndpoint.Any
        readonly handler: (args: any) => Effect.Effect<unknown, unknown, unknown>
      },
      context: Context.Context<never>
    ): Endpoint => {
      const endpoint = item.endpoint as HttpApiEndpoint.HttpApiEndpoint.AnyWithProps
      const encode = successEncoder(endpoint.successSchema)
      const decodePath = Option.getOrUndefined(Option.map(endpoint.pathSchema, decoder))
      const decodePayload = Option.getOrUndefined(Option.map(endpoint.payloadSchema, decoder))
      const decodeHeaders = Option.getOrUndefined(Option.map(endpoint.headersSchema, decoder))
      const decodeQuery = Option.getOrUndefined(Option.map(endpoint.urlParamsSchema, decoder))
      // A payload whose every field is optional may be left out: no body is then no fields.
      const optionalPayload = Option.exists(
        endpoint.payloadSchema,
        (schema) => Either.isRight(Schema.decodeUnknownEither(schema as Schema.Schema<unknown, unknown, never>)({}))
      )

      // Path, payload, headers, query: the order in which HttpApiBuilder decodes them, so the first error is
      // the same one.
      const handle: Step = (request, params, query) => {
        let whole: HttpServerRequest.HttpServerRequest | undefined
        const args: Record<string, unknown> = {
          path: undefined,
          payload: undefined,
          headers: undefined,
          urlParams: undefined,
          get request() {
            return whole ??= serverRequest(request)
          }
        }
        // The handler's requirements are in its group's context, which the fiber runs on.
        const call = () => Effect.map(item.handler(args) as Effect.Effect<unknown, unknown>, encode)
        const afterPayload = () => {
          const withQuery = () =>
            decodeQuery === undefined ? call() : decodeQuery(queryRecord(query), (q) => {
              args.urlParams = q
              return call()
            })
          return decodeHeaders === undefined ? withQuery() : decodeHeaders(request.headers, (h) => {
            args.headers = h
            return withQuery()
          })
        }
        const withPayload = () =>
          decodePayload === undefined ? afterPayload() : readBody(request).pipe(
            Effect.flatMap((text) =>
              text === "" && optionalPayload ? Effect.succeed({}) : parseBody(request.headers["content-type"], text)
            ),
            Effect.flatMap((raw) =>
              decodePayload(raw, (p) => {
                args.payload = p
                return afterPayload()
              })
            )
          )
        return decodePath === undefined ? withPayload() : decodePath(params, (p) => {
          args.path = p
          return withPayload()
        })
      }

      let run = handle
      for (const tag of [...middlewaresOf(group, endpoint)].reverse()) {
        if (!(HttpApiMiddleware.SecurityTypeId in tag)) {
          throw new Error(`${tag.key}: the pipeline runs security middleware only; declare other rules in the spec`)
        }
        const service = Context.unsafeGet(context, tag as any) as Record<string, (c: unknown) => Effect.Effect<any>>
        const schemes = Object.entries((tag as HttpApiMiddleware.TagClassSecurityAny).security)
        for (const [, security] of schemes) {
          if (security._tag !== "Bearer") throw new Error(`${tag.key}: the pipeline reads Bearer credentials only`)
        }
        const authenticate = (request: IncomingRequest) => {
          const credential = Redacted.make((request.headers.authorization ?? "").slice(BearerPrefixLength))
          return schemes.slice(1).reduce(
            (effect, [key]) => Effect.catchAll(effect, () => service[key]!(credential)),
            service[schemes[0]![0]]!(credential)
          )
        }
        const inner = run
        const provides = tag.provides as Context.Tag<any, any> | undefined
        run = tag.optional
          ? (request, params, query) =>
            Effect.matchEffect(authenticate(request), {
              onFailure: () => inner(request, params, query),
              onSuccess: (value) =>
                provides === undefined
                  ? inner(request, params, query)
                  : Effect.provideService(inner(request, params, query), provides, value)
            })
          : provides === undefined
          ? (request, params, query) => Effect.zipRight(authenticate(request), inner(request, params, query))
          : (request, params, query) =>
            Effect.flatMap(
              authenticate(request),
              (value) => Effect.provideService(inner(request, params, query), provides, value)
            )
      }
      return {
        run,
        runtime: Runtime.make({ context, fiberRefs: base.fiberRefs, runtimeFlags: base.runtimeFlags }),
        accepts: Option.match(endpoint.payloadSchema, { onNone: () => acceptedBodies, onSome: payloadTypes })
      }
    }

    const routes: Array<{ method: string; path: string; value: Endpoint }> = []
    for (const group of Object.values((api as unknown as HttpApi.HttpApi.AnyWithProps).groups)) {
      const implemented = yield* groupTag(api.identifier, group.identifier as Groups["identifier"])
      for (const endpoint of Object.keys(group.endpoints)) {
        const item = implemented.items.find((i) => i.endpoint.name === endpoint)
        if (item === undefined) return yield* Effect.dieMessage(`${group.identifier}.${endpoint} has no handler`)
        if (item.withFullRequest) return yield* Effect.dieMessage(`${group.identifier}.${endpoint}: handleRaw`)
        const { method, path } = item.endpoint as HttpApiEndpoint.HttpApiEndpoint.AnyWithProps
        routes.push({ method, path, value: compile(group, item, implemented.context) })
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

    // What is decided before the endpoint runs, in this order: TRACE, OPTIONS, 405 + Allow, rate limits, the
    // declared length, the media type, 404.
    const route = (
      request: IncomingRequest,
      pathname: string,
      requestId: string
    ): Effect.Effect<HttpServerResponse.HttpServerResponse, unknown> | Match<Endpoint> => {
      const { headers, method } = request
      const allowed = router.allowed(pathname)
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
      const found = router.find(method, pathname)
      const accepts = found?.value.accepts ?? acceptedBodies
      if (hasBody(headers) && !accepts.includes(mediaType(headers))) return Effect.fail(unsupportedType(accepts))
      if (found === undefined) return Effect.fail(apiError("route_not_found", "No such route."))
      return found
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
        runtime = routed.value.runtime
        effect = routed.value.run(request, routed.params, queryAt === -1 ? "" : request.url.slice(queryAt + 1))
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
