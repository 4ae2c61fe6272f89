import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { DateTime, Schema } from "effect"
import { IdempotencyKey } from "../../../core/payments/Idempotency.ts"
import { formatAmount } from "../../../core/payments/Money.ts"
import {
  type Refund,
  RefundFailureReason,
  RefundId,
  RefundReason,
  RefundRequest,
  RefundStatus
} from "../../../core/payments/Refund.ts"
import { documented } from "../meta/OpenApiDocument.ts"
import {
  BadRequest,
  Conflict,
  NotFound,
  PayloadTooLarge,
  ServiceUnavailable,
  Unauthorized,
  UnprocessableEntity,
  UnsupportedMediaType
} from "../pipeline/ApiError.ts"
import { EntityTagHeaders } from "../pipeline/Caching.ts"
import { MerchantAuth } from "../pipeline/MerchantAuth.ts"
import { Limit } from "../pipeline/Paging.ts"

// The wire shape of a refund (docs/refunds.md). Money is a decimal string in the transfer's currency.
export const RefundView = Schema.Struct({
  id: Schema.String,
  transfer: Schema.String,
  amount: Schema.String,
  currency: Schema.String,
  status: RefundStatus,
  reason: Schema.optional(RefundReason),
  created: Schema.String,
  failure_reason: Schema.optional(RefundFailureReason)
})

// The domain Refund as the wire shows it, in the API's answers and in events: fields in RefundView's order.
export const refundView = (r: Refund): typeof RefundView.Type => ({
  id: r.id,
  transfer: r.transferId,
  amount: formatAmount(r.amount, r.currency),
  currency: r.currency,
  status: r.status,
  ...(r.reason === undefined ? {} : { reason: r.reason }),
  created: DateTime.formatIso(r.createdAt),
  ...(r.failureReason === undefined ? {} : { failure_reason: r.failureReason })
})

const refundExample = {
  id: "re_4nQk8Vb2xYt7LwZ3mRs9PaCd",
  transfer: "tr_8mZkq3Vb9xYt2LwQ4nRs6PaC",
  amount: "5.00",
  currency: "USD",
  status: "succeeded" as const,
  reason: "requested_by_customer" as const,
  created: "2026-01-06T09:30:00.000Z"
}
export const RefundEnvelope = Schema.Struct({ refund: RefundView }).annotations({
  examples: [{ refund: refundExample }]
})
export const RefundList = Schema.Struct({
  object: Schema.Literal("list"),
  data: Schema.Array(RefundView),
  has_more: Schema.Boolean
}).annotations({ examples: [{ object: "list", data: [refundExample], has_more: false }] })

export const CreateRefundPayload = RefundRequest.annotations({
  examples: [{ amount: "5.00", reason: "requested_by_customer" }]
})

const TransferPath = Schema.Struct({ id: Schema.String })

export class RefundsApi extends HttpApiGroup.make("refunds")
  .add(
    HttpApiEndpoint.post("create", "/merchant/transfers/payment/:id/refunds")
      .setPath(TransferPath)
      .setPayload(CreateRefundPayload)
      .setHeaders(Schema.Struct({ "idempotency-key": Schema.optional(IdempotencyKey) }))
      .addSuccess(RefundEnvelope, { status: 201 })
      // The card network's answer was lost: the refund, `unknown`, is reconciled later (docs/refunds.md).
      .addSuccess(
        RefundEnvelope.annotations({
          identifier: "PendingRefundEnvelope",
          examples: [{ refund: { ...refundExample, status: "unknown" } }]
        }),
        { status: 202 }
      )
      .addError(BadRequest)
      .addError(NotFound)
      .addError(Conflict)
      .addError(PayloadTooLarge)
      .addError(UnsupportedMediaType)
      .addError(UnprocessableEntity)
      .addError(ServiceUnavailable)
      .annotateContext(documented(
        "Refund a transfer",
        "Gives back `amount` (all that is left when absent) of one of the client's approved transfers, in the transfer's currency. 201 with the refund, succeeded or failed (failure_reason says why; a failed refund gives its amount back); 202 with status unknown when the card network's answer was lost (the refund is reconciled later, and counts against the transfer until then). Refused with 400: amount_too_large (more than is left), transfer_already_refunded, transfer_not_refundable (not approved), parameter_invalid. With an Idempotency-Key, a retry with the same parameters replays the first answer byte for byte with Idempotent-Replayed: true; a refusal does not keep the key.",
        {
          headers: {
            201: ["Location", "Idempotent-Replayed"],
            202: ["Location", "Idempotent-Replayed"]
          }
        }
      ))
  )
  .add(
    HttpApiEndpoint.get("list", "/merchant/transfers/payment/:id/refunds")
      .setPath(TransferPath)
      .setUrlParams(Schema.Struct({
        limit: Schema.optional(Limit),
        starting_after: Schema.optional(RefundId.annotations({
          message: () => "starting_after must be a refund id (re_...)."
        }))
      }))
      .addSuccess(RefundList)
      .addError(BadRequest)
      .addError(NotFound)
      .annotateContext(documented(
        "List a transfer's refunds",
        "The refunds of one of the client's transfers, newest first, a page at a time: pass the last id of a page as starting_after for the next. Another client's transfer is 404, as is a starting_after that names no refund of this transfer."
      ))
  )
  .add(
    HttpApiEndpoint.get("get", "/merchant/refunds/:id")
      .setPath(Schema.Struct({ id: Schema.String }))
      .setHeaders(EntityTagHeaders)
      .addSuccess(RefundEnvelope)
      .addError(NotFound)
      .annotateContext(documented(
        "Get a refund",
        "One of the client's refunds by id, in its current state. Conditional: send the ETag back as If-None-Match for a 304. Another client's refund, or a malformed id, is 404."
      ))
  )
  .addError(Unauthorized)
  .middleware(MerchantAuth)
  .annotateContext(OpenApi.annotations({
    description:
      "Refunds of approved transfers, in full or in parts, with a merchant API key (Authorization: Bearer sk_...)."
  }))
{}
