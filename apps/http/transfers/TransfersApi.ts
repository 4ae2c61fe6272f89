import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { DateTime, Schema } from "effect"
import { IdempotencyKey } from "../../../core/payments/Idempotency.ts"
import { formatAmount } from "../../../core/payments/Money.ts"
import { PaymentTransferRequest, Reference, type Transfer, TransferId } from "../../../core/payments/Transfer.ts"
import { documented } from "../meta/OpenApiDocument.ts"
import {
  BadRequest,
  Conflict,
  NotFound,
  PayloadTooLarge,
  PaymentRequired,
  ServiceUnavailable,
  Unauthorized,
  UnprocessableEntity,
  UnsupportedMediaType
} from "../pipeline/ApiError.ts"
import { EntityTagHeaders } from "../pipeline/Caching.ts"
import { MerchantAuth } from "../pipeline/MerchantAuth.ts"
import { Limit } from "../pipeline/Paging.ts"
import { ExampleTransferRequest } from "./ExampleTransfer.ts"

const Party = {
  first_name: Schema.String,
  middle_name: Schema.optional(Schema.String),
  email: Schema.String
}

// The wire shape of a transfer. Money is a decimal string in the currency's minor-unit precision.
export const TransferView = Schema.Struct({
  id: Schema.String,
  reference: Schema.String,
  amount: Schema.String,
  currency: Schema.String,
  // What its refunds took back (pending, unknown and succeeded ones; docs/refunds.md), and whether that is all.
  amount_refunded: Schema.String,
  refunded: Schema.Boolean,
  status: Schema.Literal("pending", "unknown", "approved", "declined"),
  sender: Schema.Struct({
    ...Party,
    card: Schema.Struct({
      brand: Schema.String,
      last4: Schema.String,
      exp_month: Schema.Int,
      exp_year: Schema.Int,
      fingerprint: Schema.String
    })
  }),
  recipient: Schema.Struct({ ...Party, merchant_id: Schema.String }),
  failure_code: Schema.optional(Schema.String),
  decline_code: Schema.optional(Schema.String),
  created: Schema.String
})

// The domain Transfer as the wire shows it: the one mapping, checked against TransferView, for the responses
// and for the spec (whose clients decode TransferView). Its fields are in TransferView's order.
export const transferView = (t: Transfer): typeof TransferView.Type => ({
  id: t.id,
  reference: t.reference,
  amount: formatAmount(t.amount, t.currency),
  currency: t.currency,
  amount_refunded: formatAmount(t.amountRefunded, t.currency),
  refunded: t.amountRefunded === t.amount,
  status: t.status,
  sender: t.sender,
  recipient: t.recipient,
  ...(t.failure
    ? { failure_code: t.failure.code, ...(t.failure.decline_code ? { decline_code: t.failure.decline_code } : {}) }
    : {}),
  created: DateTime.formatIso(t.createdAt)
})

const transferExample = {
  id: "tr_8mZkq3Vb9xYt2LwQ4nRs6PaC",
  reference: "order-1001",
  amount: "12.30",
  currency: "USD",
  amount_refunded: "0.00",
  refunded: false,
  status: "approved" as const,
  sender: {
    first_name: "Ann",
    email: "ann@example.com",
    card: { brand: "visa", last4: "4242", exp_month: 12, exp_year: 2030, fingerprint: "fp_3kT9wQ2mZx" }
  },
  recipient: { first_name: "Bob", email: "bob@example.com", merchant_id: "merchant_1" },
  created: "2026-01-05T10:00:00.000Z"
}
export const TransferEnvelope = Schema.Struct({ payment_transfer: TransferView }).annotations({
  examples: [{ payment_transfer: transferExample }]
})
export const TransferList = Schema.Struct({
  object: Schema.Literal("list"),
  data: Schema.Array(TransferView),
  has_more: Schema.Boolean
}).annotations({ examples: [{ object: "list", data: [transferExample], has_more: false }] })
export const BalanceView = Schema.Struct({
  balances: Schema.Array(Schema.Struct({ merchant_id: Schema.String, currency: Schema.String, amount: Schema.String }))
}).annotations({ examples: [{ balances: [{ merchant_id: "merchant_1", currency: "USD", amount: "12.30" }] }] })

const TransferPayload = Schema.Struct({ payment_transfer: PaymentTransferRequest })
// The example is decoded by the schema it illustrates (the document shows it encoded again).
export const CreateTransferPayload = TransferPayload.annotations({
  examples: [
    Schema.decodeUnknownSync(TransferPayload)(ExampleTransferRequest)
  ]
})

export class TransfersApi extends HttpApiGroup.make("transfers")
  .add(
    HttpApiEndpoint.post("create", "/merchant/transfers/payment")
      .setPayload(CreateTransferPayload)
      .setHeaders(Schema.Struct({ "idempotency-key": Schema.optional(IdempotencyKey) }))
      .addSuccess(TransferEnvelope, { status: 201 })
      // The outcome is not known yet (docs/unknown-outcomes.md): the transfer, `unknown`, with its Location.
      .addSuccess(TransferEnvelope.annotations({ identifier: "PendingTransferEnvelope" }), { status: 202 })
      .addError(BadRequest)
      .addError(PaymentRequired)
      .addError(Conflict)
      .addError(PayloadTooLarge)
      .addError(UnsupportedMediaType)
      .addError(UnprocessableEntity)
      .addError(ServiceUnavailable)
      .annotateContext(documented(
        "Create a payment transfer",
        "Charges the sender's card and records the transfer: 201 when approved, 402 with a card error when declined (the declined transfer is recorded and named in error.transfer), 202 with status unknown when the card network's answer was lost (the transfer is reconciled later). With an Idempotency-Key, a retry with the same parameters replays the first answer byte for byte with Idempotent-Replayed: true.",
        {
          headers: {
            201: ["Location", "Idempotent-Replayed"],
            202: ["Location", "Idempotent-Replayed"],
            402: ["Idempotent-Replayed"],
            409: ["Idempotent-Replayed"]
          }
        }
      ))
  )
  .add(
    HttpApiEndpoint.get("get", "/merchant/transfers/payment/:id")
      .setPath(Schema.Struct({ id: Schema.String }))
      .setHeaders(EntityTagHeaders)
      .addSuccess(TransferEnvelope)
      .addError(NotFound)
      .annotateContext(documented(
        "Get a transfer",
        "One of the client's transfers by id. Conditional: send the ETag back as If-None-Match for a 304. Another client's transfer, or a malformed id, is 404."
      ))
  )
  .add(
    HttpApiEndpoint.get("list", "/merchant/transfers/payment")
      .setUrlParams(Schema.Struct({
        reference: Schema.optional(Reference),
        limit: Schema.optional(Limit),
        starting_after: Schema.optional(TransferId)
      }))
      .addSuccess(TransferList)
      .addError(BadRequest)
      .addError(NotFound)
      .annotateContext(documented(
        "List transfers",
        "The client's transfers, newest first, a page at a time: pass the last id of a page as starting_after for the next; reference finds one transfer by its reference."
      ))
  )
  .add(
    HttpApiEndpoint.get("balance", "/merchant/balance").addSuccess(BalanceView).annotateContext(documented(
      "Get the balances",
      "The exact sum of the client's approved transfers net of their refunds (pending, unknown and succeeded ones), per recipient merchant and currency."
    ))
  )
  .addError(Unauthorized)
  .middleware(MerchantAuth)
  .annotateContext(OpenApi.annotations({
    description: "Payment transfers from a card to a merchant, with a merchant API key (Authorization: Bearer sk_...)."
  }))
{}
