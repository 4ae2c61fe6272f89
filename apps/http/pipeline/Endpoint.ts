import {
  type HttpApiEndpoint,
  type HttpApiGroup,
  HttpApiSchema,
  HttpServerRequest,
  HttpServerResponse,
  UrlParams
} from "@effect/platform"
import { Context, Effect, Either, Option, Runtime, Schema } from "effect"
import { prefersHtml } from "../pages/Pages.ts"
import { type ApiError, apiError, isApiError, statusOf } from "./ApiError.ts"
import { middlewaresOf } from "./ApiHandlers.ts"
import { declaredOnlyDecoder } from "./DeclaredOnly.ts"
import { fromParseError, unknownParameter } from "./DecodeErrors.ts"
import { acceptedBodies, unparsableBody } from "./Edge.ts"
import { jsonDepthWithin, MaxJsonDepth } from "./JsonDepth.ts"
import type { IncomingRequest } from "./Pipeline.ts"
import { secured } from "./Security.ts"
import { jsonAnswer, textAnswer } from "./TextBody.ts"

// One endpoint of the spec, compiled once: its decoders, its handler, its success encoder and its security,
// as one step from the request to the response.
export type Step = (request: IncomingRequest, params: Readonly<Record<string, string>>, query: string) => Effect.Effect<
  HttpServerResponse.HttpServerResponse,
  unknown
>

export interface Endpoint {
  readonly run: Step
  // The path as declared in the spec (`/feeds/:name`).
  readonly route: string
  readonly runtime: Runtime.Runtime<never>
  // Media types of the payload, from its encodings; the request-wide ones for an endpoint without a payload.
  readonly accepts: ReadonlyArray<string>
}

// An endpoint people post a form to, declared with `.annotate(HtmlForm, ...)` in the spec: when the request's
// Accept prefers text/html, it answers pages, made from its success value, or from an error (a decoder's or the
// handler's) and the fields as posted. Other requests get the spec's JSON, unchanged.
export class HtmlForm extends Context.Tag("paysub/HtmlForm")<HtmlForm, {
  readonly success: (value: unknown) => HttpServerResponse.HttpServerResponse
  readonly error: (
    error: ApiError,
    fields: Readonly<Record<string, unknown>>,
    status: number
  ) => HttpServerResponse.HttpServerResponse
}>() {}

// A step a handler may run once the body is read, after the route's security and path and before the payload,
// headers and query are decoded: the handler's result, encoded as the handler's own would be, or undefined, and
// the request takes its whole path. Idempotent retries use it: a body whose bytes the handler saw decoded before,
// under the same key, needs no decoding again to be recognised (docs/decisions/0039). It runs only on a request
// without a query, which a decoder could refuse for a reason the body does not hold.
// Like the handler, it runs on the group's context, with what the security middleware provides.
export type BeforeDecode = (request: IncomingRequest, body: string) => Effect.Effect<unknown, unknown, any>
const BeforeDecodeKey = Symbol.for("paysub/BeforeDecode")
export const withBeforeDecode = (step: BeforeDecode) => <H extends object>(handler: H): H =>
  Object.assign(handler, { [BeforeDecodeKey]: step })

type Decoder = (
  input: unknown,
  use: (value: any) => Effect.Effect<HttpServerResponse.HttpServerResponse, unknown>
) => Effect.Effect<HttpServerResponse.HttpServerResponse, unknown>

// The spec's schemas are synchronous: decoded to an Either, without an Effect step per schema. A failure becomes
// the error body at once: the issue tree, which holds the input, is dropped here.
const decoder = (schema: Schema.Schema<any, any, any>, onlyDeclared = false): Decoder => {
  const decode = onlyDeclared
    ? declaredOnlyDecoder(schema)
    : Schema.decodeUnknownEither(schema as Schema.Schema<unknown, unknown, never>)
  return (input, use) => {
    const result = decode(input)
    return Either.isLeft(result) ? Effect.fail(fromParseError(result.left)) : use(result.right)
  }
}

// Payloads and queries name only the members their schemas declare: another one is refused (400
// parameter_unknown), as the document's `additionalProperties: false` says (./DeclaredOnly.ts). A schema whose
// input comes from elsewhere (a page's link, which mail and trackers may extend) says so with its own
// parseOptions annotation.
const declaredOnly = true

const noQuery: Decoder = (input, use) => {
  const [name] = Object.keys(input as object)
  return name === undefined ? use({}) : Effect.fail(unknownParameter([name]))
}

// An empty query is an empty record, without a URLSearchParams and its copies (most requests have no query).
const queryRecord = (query: string): Readonly<Record<string, string | ReadonlyArray<string>>> =>
  query === "" ? {} : UrlParams.toRecord(UrlParams.fromInput(new URLSearchParams(query)))

// The success schemas of an endpoint, each with its status and encoding (as HttpApiBuilder encodes them).
export const successEncoder = (schema: Schema.Schema.Any) => {
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
          ? jsonAnswer(encoded, { status, contentType })
          : textAnswer(encoded as string, { status, contentType })
      }
    }
  })
  // A handler that answers the same value as the last request (a constant, as health's) gets the same response:
  // values and responses are immutable, so the encoding is not made again.
  let lastValue: unknown
  let lastResponse: HttpServerResponse.HttpServerResponse | undefined
  return (value: unknown) => {
    if (HttpServerResponse.isServerResponse(value)) return value
    if (value === lastValue && lastResponse !== undefined) return lastResponse
    const response = (encoders.length === 1 ? encoders[0]! : encoders.find((e) => e.is(value)) ?? encoders[0]!)
      .toResponse(value)
    if (typeof value === "object" && value !== null) {
      lastValue = value
      lastResponse = response
    }
    return response
  }
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
// has been read by then). The pipeline has refused a Host that is not a valid authority before this runs.
const serverRequest = (request: IncomingRequest) =>
  HttpServerRequest.fromWeb(
    new Request(`http://${request.headers.host || "localhost"}${request.url}`, {
      method: request.method,
      headers: request.headers as Record<string, string>
    })
  )

// What a handler is called with, as HttpApiBuilder calls it. The whole request is built only when read.
class HandlerArgs {
  path: unknown = undefined
  payload: unknown = undefined
  headers: unknown = undefined
  urlParams: unknown = undefined
  #whole: HttpServerRequest.HttpServerRequest | undefined
  readonly #incoming: IncomingRequest
  constructor(incoming: IncomingRequest) {
    this.#incoming = incoming
  }
  get request() {
    return this.#whole ??= serverRequest(this.#incoming)
  }
}
type Form = Context.Tag.Service<HtmlForm>
// The fields as posted, kept for the page of an error (a form posted by a browser).
const posted = new WeakMap<HandlerArgs, unknown>()

export const compileEndpoint = (
  group: HttpApiGroup.HttpApiGroup.AnyWithProps,
  item: {
    readonly endpoint: HttpApiEndpoint.HttpApiEndpoint.Any
    readonly handler: (args: any) => Effect.Effect<unknown, unknown, unknown>
  },
  context: Context.Context<never>,
  base: Runtime.Runtime<never>,
  readBody: (request: IncomingRequest) => Effect.Effect<string, unknown>,
  tracing = false
): Endpoint => {
  const endpoint = item.endpoint as HttpApiEndpoint.HttpApiEndpoint.AnyWithProps
  // With a tracer on, the handler (one use case) is a span of its own, named after the group and endpoint.
  const spanName = `${group.identifier}.${endpoint.name}`
  const handler = tracing
    ? (args: any) => Effect.withSpan(item.handler(args), spanName)
    : item.handler
  const encode = successEncoder(endpoint.successSchema)
  const beforeDecode = (item.handler as { [BeforeDecodeKey]?: BeforeDecode })[BeforeDecodeKey]
  const form = Option.getOrUndefined(Context.getOption(endpoint.annotations, HtmlForm))
  const decodePath = Option.getOrUndefined(Option.map(endpoint.pathSchema, (s) => decoder(s)))
  const decodePayload = Option.getOrUndefined(Option.map(endpoint.payloadSchema, (s) => decoder(s, declaredOnly)))
  const decodeHeaders = Option.getOrUndefined(Option.map(endpoint.headersSchema, (s) => decoder(s)))
  // An API call with a key and no query schema takes no query member at all; a public endpoint without one
  // (health, the documents, the feeds, the pages) ignores its query, as its document says (a free-form query).
  const decodeQuery = Option.match(endpoint.urlParamsSchema, {
    onNone: () => middlewaresOf(group, endpoint).length > 0 ? noQuery : undefined,
    onSome: (s) => decoder(s, declaredOnly)
  })
  // A payload whose every field is optional may be left out: no body is then no fields.
  const optionalPayload = Option.exists(
    endpoint.payloadSchema,
    (schema) => Either.isRight(Schema.decodeUnknownEither(schema as Schema.Schema<unknown, unknown, never>)({}))
  )

  // Path, payload, headers, query: the order in which HttpApiBuilder decodes them, so the first error is
  // the same one. The steps are made once here and take the request's state as arguments: a request allocates
  // its arguments and the closures of the decoders it runs, not a closure per step.
  // The handler's requirements are in its group's context, which the fiber runs on.
  // A flatMap to a value made once, rather than Effect.map, whose every call adds two closures and a step.
  const encoded = (value: unknown) => Effect.succeed(encode(value))
  const call = (args: HandlerArgs, html: Form | undefined) =>
    Effect.flatMap(
      handler(args) as Effect.Effect<unknown, unknown>,
      html === undefined ? encoded : (value) => Effect.succeed(html.success(value))
    )
  const withQuery = (args: HandlerArgs, query: string, html: Form | undefined) =>
    decodeQuery === undefined ? call(args, html) : decodeQuery(queryRecord(query), (q) => {
      args.urlParams = q
      return call(args, html)
    })
  const afterPayload = (args: HandlerArgs, request: IncomingRequest, query: string, html: Form | undefined) =>
    decodeHeaders === undefined ? withQuery(args, query, html) : decodeHeaders(request.headers, (h) => {
      args.headers = h
      return withQuery(args, query, html)
    })
  const decodeBody =
    (args: HandlerArgs, request: IncomingRequest, query: string, html: Form | undefined) => (text: string) =>
      Effect.flatMap(
        text === "" && optionalPayload ? Effect.succeed({}) : parseBody(request.headers["content-type"], text),
        (raw) => {
          if (html !== undefined) posted.set(args, raw)
          return decodePayload!(raw, (p) => {
            args.payload = p
            return afterPayload(args, request, query, html)
          })
        }
      )
  const withPayload = (args: HandlerArgs, request: IncomingRequest, query: string, html: Form | undefined) => {
    if (decodePayload === undefined) return afterPayload(args, request, query, html)
    const decode = decodeBody(args, request, query, html)
    return Effect.flatMap(
      readBody(request),
      beforeDecode === undefined || query !== "" ? decode : (text) =>
        Effect.flatMap(
          beforeDecode(request, text) as Effect.Effect<unknown, unknown>,
          (early) => early === undefined ? decode(text) : Effect.succeed((html?.success ?? encode)(early))
        )
    )
  }
  const handle: Step = (request, params, query) => {
    const html = form !== undefined && prefersHtml(request.headers.accept) ? form : undefined
    const args = new HandlerArgs(request)
    const answer = decodePath === undefined ? withPayload(args, request, query, html) : decodePath(params, (p) => {
      args.path = p
      return withPayload(args, request, query, html)
    })
    if (html === undefined) return answer
    return Effect.catchIf(answer, isApiError, (e) => {
      const fields = posted.get(args)
      return Effect.succeed(
        html.error(
          e,
          typeof fields === "object" && fields !== null ? fields as Record<string, unknown> : {},
          statusOf(e)
        )
      )
    })
  }

  return {
    run: secured(handle, [...middlewaresOf(group, endpoint)].reverse(), context),
    route: endpoint.path,
    runtime: Runtime.make({ context, fiberRefs: base.fiberRefs, runtimeFlags: base.runtimeFlags }),
    accepts: Option.match(endpoint.payloadSchema, { onNone: () => acceptedBodies, onSome: payloadTypes })
  }
}
