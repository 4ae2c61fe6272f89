import { Data, DateTime, Duration, Effect, Redacted, Schema } from "effect"
import { formatAccountUri, formatAuthenticationValue } from "./Card.ts"
import type { CardFingerprintsShape } from "./CardFingerprints.ts"
import type { RefundId, RefundRequest } from "./Refund.ts"
import type { PaymentTransferRequest, TransferId } from "./Transfer.ts"

// Idempotency-Key rules, in one place: how a request is recognised as the same one again (its hash), how long
// a first attempt blocks its key (the lease), and what a retry is answered with. Stores only keep the rows;
// they apply `decideStart` inside the transaction that reads the key, so concurrent retries see one decision.

export const IdempotencyKey = Schema.String.pipe(
  Schema.pattern(/^[\x21-\x7E]{1,255}$/, { message: () => "Idempotency-Key is 1-255 printable ASCII characters." }),
  Schema.brand("IdempotencyKey")
)
export type IdempotencyKey = typeof IdempotencyKey.Type

export const RequestHash = Schema.String.pipe(Schema.brand("RequestHash"))
export type RequestHash = typeof RequestHash.Type

// A first attempt that has run this long without an answer is taken to have died with its process; a retry
// may then take the key over (the reference keeps it from charging twice).
export const IdempotencyLease = Duration.minutes(1)

// Keys are kept this long from their first request, as Stripe keeps them; an older key is no key: a request
// with it runs as a new one, and KeyPruner deletes it.
export const IdempotencyKeyTtl = Duration.hours(24)

export const keyExpired = (startedAt: DateTime.Utc, now: DateTime.Utc): boolean =>
  DateTime.toEpochMillis(startedAt) + Duration.toMillis(IdempotencyKeyTtl) <= DateTime.toEpochMillis(now)

// JSON with object keys sorted, so that equal values give equal text whatever order they were written in.
export const canonicalJson = (value: unknown): string =>
  Array.isArray(value)
    ? `[${value.map(canonicalJson).join(",")}]`
    : value !== null && typeof value === "object"
    ? `{${
      Object.keys(value).sort().filter((k) => (value as any)[k] !== undefined)
        .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as any)[k])}`).join(",")
    }}`
    : JSON.stringify(value)

// The request as canonicalJson({ payment_transfer: <the request encoded by its Schema> }) writes it, written
// directly: keys in sorted order, optional ones left out when absent. Encoding through the Schema on every
// transfer ran each field's checks again (about half of the hash's cost). A property test holds the two equal
// (test/core/payments/Idempotency.test.ts); a field added to PaymentTransferRequest must be added here.
const str = JSON.stringify
const optional = (key: string, value: string | undefined) => (value === undefined ? "" : `,${str(key)}:${str(value)}`)
const canonicalRequest = (r: PaymentTransferRequest): string =>
  `{"payment_transfer":{"amount":${str(r.amount)}${
    optional("authentication_value", r.authentication_value && formatAuthenticationValue(r.authentication_value))
  },"currency":${str(r.currency)},"recipient":{"email":${str(r.recipient.email)},"first_name":${
    str(r.recipient.first_name)
  },"merchant_id":${str(r.recipient.merchant_id)}${optional("middle_name", r.recipient.middle_name)}},"reference":${
    str(r.reference)
  },"sender":{"email":${str(r.sender.email)},"first_name":${str(r.sender.first_name)}${
    optional("middle_name", r.sender.middle_name)
  }},"sender_account_uri":${str(formatAccountUri(r.sender_account_uri))}}}`

// Hashed from the decoded request, encoded back to its wire form, not from the body's bytes: the same
// parameters give the same hash whatever the key order, white space or exp/cvc order of the body (the
// comparison Stripe makes), and no handler needs the raw body. Wrapped as the body was, so keys started
// before this rule still match. The hash is keyed (CardFingerprints): the request holds card data.
export const requestHash = (fingerprints: CardFingerprintsShape, request: PaymentTransferRequest): RequestHash =>
  RequestHash.make(fingerprints.of(Redacted.make(canonicalRequest(request))))

// A refund request's hash: the transfer it refunds and its parameters, canonical, in a shape no transfer
// request has, so that a key sent with a transfer and then a refund is a mismatch. Keyed like the transfers'.
export const refundRequestHash = (
  fingerprints: CardFingerprintsShape,
  transfer: TransferId,
  request: RefundRequest
): RequestHash =>
  RequestHash.make(
    fingerprints.of(Redacted.make(canonicalJson({ refund: { ...request, transfer } })))
  )

// The lasting answer a key keeps, as domain facts: the transfer its first request made (approved, declined,
// or `unknown` until reconciled: a replay shows its state then), or the transfer that already held the
// reference, or the refund its first request made. Replays are rendered again from these.
export type KeptAnswer = Data.TaggedEnum<{
  TransferMade: { readonly transferId: TransferId }
  ReferenceTaken: { readonly existing: TransferId }
  RefundMade: { readonly refundId: RefundId }
}>
export const KeptAnswer = Data.taggedEnum<KeptAnswer>()

// A key as stored. `requestId` is the first request's: a replayed error names it, as the first answer did.
export interface KeyRecord {
  readonly requestHash: RequestHash
  readonly requestId: string
  readonly startedAt: DateTime.Utc
  readonly answer: KeptAnswer | undefined
}

// A request presenting a key.
export interface KeyClaim {
  readonly key: IdempotencyKey
  readonly requestHash: RequestHash
  readonly requestId: string
}

export type IdempotencyStart = Data.TaggedEnum<{
  // The request runs; the store (re)writes the key as started now, with this request's hash and id.
  Started: {}
  Replay: { readonly answer: KeptAnswer; readonly requestId: string }
  Mismatch: {}
  InProgress: {}
}>
export const IdempotencyStart = Data.taggedEnum<IdempotencyStart>()

const started = IdempotencyStart.Started()
const mismatch = IdempotencyStart.Mismatch()
const inProgress = IdempotencyStart.InProgress()

// What a request with `claim` does to the key's record (none yet: the key is new). Started on a record that
// exists means the store rewrites it whole: hash, request id, start time, no answer.
export const decideStart = (
  record: KeyRecord | undefined,
  claim: KeyClaim,
  now: DateTime.Utc
): IdempotencyStart => {
  if (record === undefined || keyExpired(record.startedAt, now)) return started
  if (record.requestHash !== claim.requestHash) return mismatch
  if (record.answer !== undefined) {
    return IdempotencyStart.Replay({ answer: record.answer, requestId: record.requestId })
  }
  const leaseEnds = DateTime.toEpochMillis(record.startedAt) + Duration.toMillis(IdempotencyLease)
  return leaseEnds <= DateTime.toEpochMillis(now) ? started : inProgress
}

export class IdempotencyKeyReused extends Schema.TaggedError<IdempotencyKeyReused>()("IdempotencyKeyReused", {}) {}
export class IdempotencyKeyInUse extends Schema.TaggedError<IdempotencyKeyInUse>()("IdempotencyKeyInUse", {}) {}

export type NotStarted = Exclude<IdempotencyStart, { readonly _tag: "Started" }>

// What a request whose key did not start is answered, for transfers and refunds alike: the kept answer as
// `replay` renders it, or why the request cannot run now.
export const answerFromKey = <A, E>(
  start: NotStarted,
  replay: (answer: KeptAnswer, requestId: string) => Effect.Effect<A, E>
): Effect.Effect<A, E | IdempotencyKeyReused | IdempotencyKeyInUse> => {
  switch (start._tag) {
    case "Replay":
      return replay(start.answer, start.requestId)
    case "Mismatch":
      return Effect.fail(new IdempotencyKeyReused())
    case "InProgress":
      return Effect.fail(new IdempotencyKeyInUse())
  }
}
