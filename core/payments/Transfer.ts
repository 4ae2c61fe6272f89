import { DateTime, Duration, Redacted, Schema } from "effect"
import { Email, EmailJsonSchema } from "../shared/Email.ts"
import { AuthenticationValue, brandOf, CardBrand, holdsCardData, SenderAccountUri } from "./Card.ts"
import { type Authorization, CardErrorCode } from "./CardNetwork.ts"
import { CurrencyCode } from "./Currency.ts"

export const TransferId = Schema.String.pipe(Schema.pattern(/^tr_[0-9A-Za-z]{24}$/), Schema.brand("TransferId"))
export type TransferId = typeof TransferId.Type

export const ClientId = Schema.String.pipe(Schema.pattern(/^cl_[0-9A-Za-z]{24}$/), Schema.brand("ClientId"))
export type ClientId = typeof ClientId.Type

const noCardData = (what: string) =>
  Schema.filter<Schema.Schema<string>>((s) => !holdsCardData(s), { message: () => `${what} cannot hold card data.` })

const text = (what: string, max: number) =>
  Schema.String.annotations({ message: () => `${what} must be a string.` }).pipe(
    Schema.maxLength(max, { message: () => `${what} has at most ${max} characters.` }),
    Schema.pattern(/^[^\p{Cc}]*$/u, { message: () => `${what} cannot contain control characters.` }),
    noCardData(what)
  )

export const Reference = Schema.String.annotations({ message: () => "reference must be a string." }).pipe(
  Schema.pattern(/^[\x21-\x7E]{1,64}$/, {
    message: () => "reference is 1-64 printable ASCII characters without spaces."
  }),
  noCardData("reference"),
  Schema.brand("Reference")
)
export type Reference = typeof Reference.Type

export const MerchantId = Schema.String.annotations({ message: () => "merchant_id must be a string." }).pipe(
  Schema.pattern(/^[A-Za-z0-9_.:-]{1,64}$/, {
    message: () => "merchant_id is 1-64 letters, digits, '_', '.', ':' or '-'."
  }),
  noCardData("merchant_id"),
  Schema.brand("MerchantId")
)
export type MerchantId = typeof MerchantId.Type

const PartyEmail = Schema.String.annotations({ message: () => "email must be a string.", jsonSchema: EmailJsonSchema })
  .pipe(
    Schema.compose(Email)
  )
const FirstName = text("first_name", 100).pipe(
  Schema.filter((s) => s.trim().length > 0, {
    message: () => "first_name cannot be empty.",
    jsonSchema: { minLength: 1, description: "Not blank; no control characters, and no card data." }
  })
)

export const Sender = Schema.Struct({
  first_name: FirstName,
  middle_name: Schema.optional(text("middle_name", 100)),
  email: PartyEmail
})
export const Recipient = Schema.Struct({
  first_name: FirstName,
  middle_name: Schema.optional(text("middle_name", 100)),
  email: PartyEmail,
  merchant_id: MerchantId
})

// Interface 2.1. The amount stays a string here: its valid digits depend on the currency, which
// core/payments/Money.ts checks once both are known. A JSON number is refused, never rounded.
export const PaymentTransferRequest = Schema.Struct({
  reference: Reference,
  amount: Schema.String.annotations({
    message: () => "amount must be a decimal string such as \"12.34\", not a number.",
    jsonSchema: {
      type: "string",
      pattern: "^(?:0|[1-9][0-9]{0,14})(?:\\.[0-9]{1,3})?$",
      description:
        "A decimal string greater than zero, with at most as many fraction digits as the currency's ISO 4217 exponent (USD 2, JPY 0, BHD 3) and below 10^15 minor units."
    }
  }),
  currency: CurrencyCode,
  sender_account_uri: SenderAccountUri,
  sender: Sender,
  recipient: Recipient,
  authentication_value: Schema.optional(AuthenticationValue)
})
export type PaymentTransferRequest = typeof PaymentTransferRequest.Type

// `pending` while the card network is being asked: the reference is taken before the card is charged, so
// concurrent requests with one reference cannot charge the card twice. `unknown` when the network was asked
// and its answer did not come back (or the process died while asking): the reconciler asks again until the
// transfer is approved or declined (docs/unknown-outcomes.md).
export const TransferStatus = Schema.Literal("pending", "unknown", "approved", "declined")
export type TransferStatus = typeof TransferStatus.Type

export class Transfer extends Schema.Class<Transfer>("Transfer")({
  id: TransferId,
  clientId: ClientId,
  reference: Reference,
  amount: Schema.BigIntFromSelf,
  // What its refunds took back, net of the failed ones (core/payments/Refund.ts): pending, unknown and succeeded.
  amountRefunded: Schema.optionalWith(Schema.BigIntFromSelf, { default: () => 0n }),
  currency: CurrencyCode,
  status: TransferStatus,
  sender: Schema.Struct({
    first_name: Schema.String,
    middle_name: Schema.optional(Schema.String),
    email: Schema.String,
    card: Schema.Struct({
      brand: CardBrand,
      last4: Schema.String,
      exp_month: Schema.Int,
      exp_year: Schema.Int,
      fingerprint: Schema.String
    })
  }),
  recipient: Schema.Struct({
    first_name: Schema.String,
    middle_name: Schema.optional(Schema.String),
    email: Schema.String,
    merchant_id: Schema.String
  }),
  failure: Schema.optional(Schema.Struct({ code: CardErrorCode, decline_code: Schema.optional(Schema.String) })),
  authorizationCode: Schema.optional(Schema.String),
  createdAt: Schema.DateTimeUtcFromSelf,
  // The keyed hash of the request that made it (core/payments/Idempotency.ts's requestHash): a retry of that request
  // is recognised by it, with or without its Idempotency-Key.
  requestHash: Schema.optional(Schema.String),
  // Set when the reconciler, not the request, settled it: the request never got its final answer.
  reconciledAt: Schema.optional(Schema.DateTimeUtcFromSelf)
}) {}

// Its request never got a final answer: the outcome is `unknown`, or was settled by the reconciler, or the
// transfer is still `pending` past the lease in which its request would have settled it (the request died).
// A retry of that request (the same hash) gets this transfer's state, not a conflict with its reservation.
// A `pending` one within the lease belongs to a request still running: a retry meets its reference, as before.
export const awaitsAnswer = (t: Transfer, now: DateTime.Utc, pendingLease: Duration.Duration): boolean =>
  t.status === "unknown" || t.reconciledAt !== undefined ||
  (t.status === "pending" &&
    DateTime.toEpochMillis(t.createdAt) + Duration.toMillis(pendingLease) <= DateTime.toEpochMillis(now))

// An `unknown` or reconciled transfer is also the answer of the keys that were waiting for its request (same
// request hash, no answer yet): their request died before it could keep one. The request path never needs it.
export const answersWaitingKeys = (t: Transfer): t is Transfer & { readonly requestHash: string } =>
  t.requestHash !== undefined && (t.status === "unknown" || t.reconciledAt !== undefined)

// The rows the reconciler takes (claimUnsettled), as every store builds its condition: those in `anyAge`, whose
// outcome was lost, at any age, and those in `afterLease`, still waiting for an answer, once created at or
// before the pending lease (their request died). `all` is both: the states an outcome may replace, in the
// order the migrations' partial indexes name them.
export interface UnsettledRule<S extends string> {
  readonly all: ReadonlyArray<S>
  readonly anyAge: ReadonlyArray<S>
  readonly afterLease: ReadonlyArray<S>
}

export const unsettledRule = <S extends string>(
  rule: { readonly anyAge: ReadonlyArray<S>; readonly afterLease: ReadonlyArray<S> }
): UnsettledRule<S> => ({ ...rule, all: [...rule.afterLease, ...rule.anyAge] })

// A final transfer is never changed again (by a late request or a second reconciler).
export const UnsettledTransfers = unsettledRule<TransferStatus>({ anyAge: ["unknown"], afterLease: ["pending"] })
export const unsettledStatuses = UnsettledTransfers.all

// The transfers that count in their client's balance, net of their amount refunded (balanceShare in Ledger.ts).
export const BalanceStatuses: ReadonlyArray<TransferStatus> = ["approved"]

export class InvalidTransfer extends Schema.TaggedError<InvalidTransfer>()("InvalidTransfer", {
  param: Schema.String,
  message: Schema.String
}) {}

export class DuplicateReference extends Schema.TaggedError<DuplicateReference>()("DuplicateReference", {
  existing: TransferId
}) {}

// A transfer as it is reserved, before the card network is asked: made of the decoded request, the stored id and
// values derived from them, valid already and not checked again (test/core/payments/PendingTransfer.test.ts).
export const pendingTransfer = (
  client: ClientId,
  id: TransferId,
  request: PaymentTransferRequest,
  amount: bigint,
  fingerprint: string,
  now: DateTime.Utc,
  requestHash?: string
) => {
  const pan = Redacted.value(request.sender_account_uri.pan)
  return new Transfer(
    {
      id,
      clientId: client,
      reference: request.reference,
      amount,
      amountRefunded: 0n,
      currency: request.currency,
      status: "pending",
      sender: {
        ...request.sender,
        card: {
          brand: brandOf(pan),
          last4: pan.slice(-4),
          exp_month: request.sender_account_uri.expiry.month,
          exp_year: request.sender_account_uri.expiry.year,
          fingerprint
        }
      },
      recipient: request.recipient,
      createdAt: now,
      ...(requestHash === undefined ? {} : { requestHash })
    },
    true
  )
}

// The pending transfer with the network's answer: checked once, as `pending`, not again.
export const settled = (pending: Transfer, authorization: Authorization) =>
  new Transfer({
    ...pending,
    status: authorization._tag === "Approved" ? "approved" : "declined",
    ...(authorization._tag === "Declined"
      ? {
        failure: {
          code: authorization.code,
          ...(authorization.declineCode ? { decline_code: authorization.declineCode } : {})
        }
      }
      : { authorizationCode: authorization.authorizationCode })
  }, true)

// The reserved transfer once the network's answer was lost.
export const outcomeUnknown = (pending: Transfer) => new Transfer({ ...pending, status: "unknown" }, true)

// An unsettled transfer with what the network said when asked again. NotFound: the network never got the
// request, so nothing was charged; the transfer is declined as a processing error.
export const reconciled = (
  t: Transfer,
  answer: Authorization | { readonly _tag: "NotFound" },
  now: DateTime.Utc
) =>
  new Transfer({
    ...settled(t, answer._tag === "NotFound" ? { _tag: "Declined", code: "processing_error" } : answer),
    reconciledAt: now
  }, true)
