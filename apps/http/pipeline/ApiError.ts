import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"
import { ErrorCatalog, type ErrorCode } from "./ErrorCatalog.ts"

// The body of interface 2.2, extended as Stripe extends it. doc_url and request_id are filled in by the
// edge (apps/http/pipeline/Edge.ts) when the response is written, since they depend on BASE_URL and the request.
export const ErrorDetail = Schema.Struct({
  type: Schema.String,
  code: Schema.String,
  message: Schema.String,
  param: Schema.optional(Schema.String),
  decline_code: Schema.optional(Schema.String),
  // A 402 names the transfer it recorded, declined (as Stripe's card errors name their payment_intent).
  transfer: Schema.optional(Schema.String),
  doc_url: Schema.optional(Schema.String),
  request_id: Schema.optional(Schema.String)
})
export type ErrorDetail = typeof ErrorDetail.Type

const status = <A>(status: number, description: string) => HttpApiSchema.annotations<A>({ status, description })

export class BadRequest
  extends Schema.Class<BadRequest>("BadRequest")({ error: ErrorDetail }, status(400, "Invalid request"))
{}
export class Unauthorized extends Schema.Class<Unauthorized>("Unauthorized")(
  { error: ErrorDetail },
  status(401, "Missing or invalid API key")
) {}
export class NotFound extends Schema.Class<NotFound>("NotFound")({ error: ErrorDetail }, status(404, "Not found")) {}
export class UnsupportedMediaType extends Schema.Class<UnsupportedMediaType>("UnsupportedMediaType")(
  { error: ErrorDetail },
  status(415, "Unsupported Content-Type")
) {}
export class InternalError extends Schema.Class<InternalError>("InternalError")(
  { error: ErrorDetail },
  status(500, "Internal error")
) {}

export class PaymentRequired extends Schema.Class<PaymentRequired>("PaymentRequired")(
  { error: ErrorDetail },
  status(402, "The card could not be charged")
) {}
export class MethodNotAllowed extends Schema.Class<MethodNotAllowed>("MethodNotAllowed")(
  { error: ErrorDetail },
  status(405, "Method not allowed")
) {}
export class TooManyRequests extends Schema.Class<TooManyRequests>("TooManyRequests")(
  { error: ErrorDetail },
  status(429, "Rate limited")
) {}
export class Conflict extends Schema.Class<Conflict>("Conflict")({ error: ErrorDetail }, status(409, "Conflict")) {}
export class PayloadTooLarge extends Schema.Class<PayloadTooLarge>("PayloadTooLarge")(
  { error: ErrorDetail },
  status(413, "Body too large")
) {}
export class UnprocessableEntity extends Schema.Class<UnprocessableEntity>("UnprocessableEntity")(
  { error: ErrorDetail },
  status(422, "Idempotency-Key reused with another body")
) {}
export class ServiceUnavailable extends Schema.Class<ServiceUnavailable>("ServiceUnavailable")(
  { error: ErrorDetail },
  status(503, "A dependency is unavailable")
) {}

// Answered by the Node server itself, before a request reaches the pipeline (apps/node/RawAnswers.ts).
export class RequestTimeout extends Schema.Class<RequestTimeout>("RequestTimeout")(
  { error: ErrorDetail },
  status(408, "The request did not arrive in time")
) {}
export class ExpectationFailed extends Schema.Class<ExpectationFailed>("ExpectationFailed")(
  { error: ErrorDetail },
  status(417, "Expect header not supported")
) {}
export class HeaderFieldsTooLarge extends Schema.Class<HeaderFieldsTooLarge>("HeaderFieldsTooLarge")(
  { error: ErrorDetail },
  status(431, "Header fields too large")
) {}

const classByStatus = {
  400: BadRequest,
  401: Unauthorized,
  402: PaymentRequired,
  404: NotFound,
  405: MethodNotAllowed,
  408: RequestTimeout,
  409: Conflict,
  413: PayloadTooLarge,
  415: UnsupportedMediaType,
  417: ExpectationFailed,
  422: UnprocessableEntity,
  431: HeaderFieldsTooLarge,
  429: TooManyRequests,
  500: InternalError,
  503: ServiceUnavailable
}
const classes = Object.values(classByStatus)
export type ApiError = InstanceType<(typeof classes)[number]>

export const apiError = <C extends ErrorCode>(
  code: C,
  message: string,
  extra: { readonly param?: string; readonly decline_code?: string; readonly transfer?: string } = {}
): InstanceType<(typeof classByStatus)[(typeof ErrorCatalog)[C]["status"]]> => {
  const entry = ErrorCatalog[code]
  const Class = classByStatus[entry.status]
  // Built from the catalog, not from input: no check needed (the constructor's costs about 40 µs).
  return new Class({ error: { type: entry.type, code, message, ...extra } }, true) as any
}

export const isApiError = (u: unknown): u is ApiError => classes.some((c) => u instanceof c)

export const statusOf = (e: ApiError): number => ErrorCatalog[e.error.code as ErrorCode]?.status ?? 500
