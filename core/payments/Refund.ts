import { DateTime, Either, Schema } from "effect"
import { CurrencyCode } from "./Currency.ts"
import { IdempotencyKey, keyExpired } from "./Idempotency.ts"
import { formatAmount, parseAmount } from "./Money.ts"
import { ClientId, type Transfer, TransferId, unsettledRule } from "./Transfer.ts"

// Refunds: money given back from an approved transfer, in full or in parts (docs/refunds.md). The rules of
// what may be refunded live here, once; core/payments/RefundStore.ts applies them inside the transaction that
// holds the transfer's row, so that concurrent refunds, in one process or several, see one balance.

export const RefundId = Schema.String.pipe(Schema.pattern(/^re_[0-9A-Za-z]{24}$/), Schema.brand("RefundId"))
export type RefundId = typeof RefundId.Type

// Stripe's reasons.
export const RefundReason = Schema.Literal("duplicate", "fraudulent", "requested_by_customer").annotations({
  message: () => "reason is one of duplicate, fraudulent, requested_by_customer."
})
export type RefundReason = typeof RefundReason.Type

// `pending` while the card network is being asked; `unknown` when it was asked and its answer did not come
// back (the reconciler asks again); `succeeded` or `failed` once it answered. A failed refund gives its amount
// back to what is left to refund.
export const RefundStatus = Schema.Literal("pending", "unknown", "succeeded", "failed")
export type RefundStatus = typeof RefundStatus.Type

// Stripe's failure reasons. `unknown` is also a refund the network never received (nothing moved).
export const RefundFailureReason = Schema.Literal(
  "expired_or_canceled_card",
  "lost_or_stolen_card",
  "declined",
  "insufficient_funds",
  "unknown"
)
export type RefundFailureReason = typeof RefundFailureReason.Type

// The request's body (interface: POST /merchant/transfers/payment/{id}/refunds). The amount stays a string
// until the transfer's currency is known; absent, it is what is left to refund.
export const RefundRequest = Schema.Struct({
  amount: Schema.optional(Schema.String.annotations({
    message: () => "amount must be a decimal string such as \"12.34\", not a number.",
    jsonSchema: {
      type: "string",
      pattern: "^(?:0|[1-9][0-9]{0,14})(?:\\.[0-9]{1,3})?$",
      description:
        "A decimal string greater than zero, with at most as many fraction digits as the transfer's currency allows, and at most what is left to refund. Absent: all that is left."
    }
  })),
  reason: Schema.optional(RefundReason)
})
export type RefundRequest = typeof RefundRequest.Type

export class Refund extends Schema.Class<Refund>("Refund")({
  id: RefundId,
  transferId: TransferId,
  clientId: ClientId,
  amount: Schema.BigIntFromSelf,
  currency: CurrencyCode,
  status: RefundStatus,
  reason: Schema.optional(RefundReason),
  failureReason: Schema.optional(RefundFailureReason),
  createdAt: Schema.DateTimeUtcFromSelf,
  // The Idempotency-Key of the request that made it: the key's answer is this refund, whether its request
  // keeps it or the reconciler does (the request died), and a retry that takes the key over finds it.
  idempotencyKey: Schema.optional(IdempotencyKey),
  // Set when the reconciler, not the request, settled it.
  reconciledAt: Schema.optional(Schema.DateTimeUtcFromSelf)
}) {}

// The refunds the reconciler takes, as UnsettledTransfers says of transfers; a final refund is never changed again.
export const UnsettledRefunds = unsettledRule<RefundStatus>({ anyAge: ["unknown"], afterLease: ["pending"] })
export const unsettledRefundStatuses = UnsettledRefunds.all

// A refund counts against its transfer from the moment it is made until it fails: `amount_refunded` is the
// sum of the pending, unknown and succeeded ones (a refund whose outcome is not known may have moved money).
export const leftToRefund = (t: Transfer): bigint => t.amount - t.amountRefunded

// Why a refund cannot be made. Each is a 400 with its own code (docs/api.md).
export class InvalidRefund extends Schema.TaggedError<InvalidRefund>()("InvalidRefund", {
  param: Schema.String,
  message: Schema.String
}) {}
export class AmountTooLarge extends Schema.TaggedError<AmountTooLarge>()("AmountTooLarge", {
  message: Schema.String
}) {}
export class TransferAlreadyRefunded extends Schema.TaggedError<TransferAlreadyRefunded>()(
  "TransferAlreadyRefunded",
  { transfer: TransferId }
) {}
export class TransferNotRefundable extends Schema.TaggedError<TransferNotRefundable>()("TransferNotRefundable", {
  transfer: TransferId,
  status: Schema.String
}) {}
// No transfer of this client has the id.
export class TransferNotFound extends Schema.TaggedError<TransferNotFound>()("TransferNotFound", {}) {}

export type RefundRefused = InvalidRefund | AmountTooLarge | TransferAlreadyRefunded | TransferNotRefundable

// How much a request may refund of `t` as it is now: the amount asked for (in the transfer's currency and its
// exponent), or all that is left; or why none. Only an approved transfer is refundable.
export const decideRefund = (
  t: Transfer,
  amount: string | undefined
): Either.Either<bigint, RefundRefused> => {
  if (t.status !== "approved") return Either.left(new TransferNotRefundable({ transfer: t.id, status: t.status }))
  const left = leftToRefund(t)
  if (left <= 0n) return Either.left(new TransferAlreadyRefunded({ transfer: t.id }))
  if (amount === undefined) return Either.right(left)
  const parsed = parseAmount(amount, t.currency)
  if (Either.isLeft(parsed)) return Either.left(new InvalidRefund({ param: "amount", message: parsed.left }))
  if (parsed.right > left) {
    return Either.left(
      new AmountTooLarge({
        message: `The amount is more than is left to refund: ${formatAmount(left, t.currency)} ${t.currency}.`
      })
    )
  }
  return Either.right(parsed.right)
}

// A refund as it is made, before the card network is asked.
export const pendingRefund = (
  t: Transfer,
  id: RefundId,
  amount: bigint,
  reason: RefundReason | undefined,
  now: DateTime.Utc,
  idempotencyKey: IdempotencyKey | undefined
) =>
  new Refund({
    id,
    transferId: t.id,
    clientId: t.clientId,
    amount,
    currency: t.currency,
    status: "pending",
    ...(reason === undefined ? {} : { reason }),
    createdAt: now,
    ...(idempotencyKey === undefined ? {} : { idempotencyKey })
  }, true)

// What the card network answers to a refund, or to a question about one.
export type RefundOutcome =
  | { readonly _tag: "Succeeded" }
  | { readonly _tag: "Failed"; readonly reason: RefundFailureReason }

export const settledRefund = (r: Refund, outcome: RefundOutcome, reconciledAt?: DateTime.Utc) =>
  new Refund({
    ...r,
    status: outcome._tag === "Succeeded" ? "succeeded" : "failed",
    ...(outcome._tag === "Failed" ? { failureReason: outcome.reason } : {}),
    ...(reconciledAt === undefined ? {} : { reconciledAt })
  }, true)

export const refundOutcomeUnknown = (r: Refund) => new Refund({ ...r, status: "unknown" }, true)

// A refund is its key's answer: a request that takes the key over (its first request died, its lease ran
// out) gets the refund that request made, unless the key has expired meanwhile (then it is no key).
export const keyAnswersWith = (r: Refund, now: DateTime.Utc): boolean => !keyExpired(r.createdAt, now)

// The refund's event when its state changes from `from`: created with its first answer, updated after.
export const refundEventType = (from: RefundStatus) => from === "pending" ? "refund.created" : "refund.updated"
