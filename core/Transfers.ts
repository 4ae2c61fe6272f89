import { DateTime, Effect, Either, Option, Random, Redacted } from "effect"
import { brandOf, isExpired, luhn } from "./Card.ts"
import { CardFingerprints } from "./CardFingerprints.ts"
import { type Authorization, CardNetwork } from "./CardNetwork.ts"
import { parseAmount } from "./Money.ts"
import {
  CardDeclined,
  type ClientId,
  DuplicateReference,
  InvalidTransfer,
  type PaymentTransferRequest,
  Transfer,
  TransferId
} from "./Transfer.ts"
import { type Completion, TransferStore } from "./TransferStore.ts"

const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
// Five characters per draw (62^5 < 2^30): 24 characters, about 143 random bits, in five draws.
const perDraw = 5
export const randomId = (prefix: string) =>
  Effect.map(
    Effect.all(Array.from({ length: 5 }, () => Random.nextIntBetween(0, alphabet.length ** perDraw))),
    (draws) => {
      let id = prefix
      for (let draw of draws) {
        for (let i = 0; i < perDraw; i++) {
          id += alphabet[draw % alphabet.length]
          draw = Math.floor(draw / alphabet.length)
        }
      }
      return id.slice(0, prefix.length + 24)
    }
  )

// A decline is an answer, not a fault: its error carries no stack trace, whose capture costs more than the
// rest of building it (10-30 µs deep in a fiber).
const declined = (transfer: Transfer) => {
  const limit = Error.stackTraceLimit
  Error.stackTraceLimit = 0
  try {
    return new CardDeclined({ transfer }, true)
  } finally {
    Error.stackTraceLimit = limit
  }
}

export class Transfers extends Effect.Service<Transfers>()("Transfers", {
  effect: Effect.gen(function*() {
    const store = yield* TransferStore
    const network = yield* CardNetwork
    const fingerprints = yield* CardFingerprints

    // Card checks in the documented order: format (already done by the decoder), Luhn, expiry; the network
    // comes last, only for cards that pass these.
    const checkLocally = (request: PaymentTransferRequest, now: DateTime.Utc): Authorization | undefined => {
      const account = request.sender_account_uri
      if (!luhn(Redacted.value(account.pan))) return { _tag: "Declined", code: "incorrect_number" }
      if (isExpired(account.expiry, now)) return { _tag: "Declined", code: "expired_card" }
      return undefined
    }

    const submit = (client: ClientId, request: PaymentTransferRequest, completion?: Completion) =>
      Effect.gen(function*() {
        const amount = parseAmount(request.amount, request.currency)
        if (Either.isLeft(amount)) {
          return yield* new InvalidTransfer({ param: "payment_transfer.amount", message: amount.left })
        }
        const existing = yield* store.byReference(client, request.reference)
        if (Option.isSome(existing)) return yield* new DuplicateReference({ existing: existing.value.id })
        const id = TransferId.make(yield* randomId("tr_"))
        const now = yield* DateTime.now
        const pan = Redacted.value(request.sender_account_uri.pan)
        const pending = new Transfer({
          id,
          clientId: client,
          reference: request.reference,
          amount: amount.right,
          currency: request.currency,
          status: "pending",
          sender: {
            ...request.sender,
            card: {
              brand: brandOf(pan),
              last4: pan.slice(-4),
              exp_month: request.sender_account_uri.expiry.month,
              exp_year: request.sender_account_uri.expiry.year,
              fingerprint: fingerprints.of(request.sender_account_uri.pan)
            }
          },
          recipient: request.recipient,
          createdAt: now
        })
        // The pending transfer with the network's answer: checked once, as `pending`, not again.
        const outcome = (authorization: Authorization) =>
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
        const local = checkLocally(request, now)
        const transfer = local !== undefined
          // Declined by our own checks: nothing to ask the network, one write.
          ? yield* store.record(outcome(local), completion)
          // The reference is taken before the card is charged, so a second request with it cannot charge again.
          : yield* store.reserve(pending).pipe(
            Effect.zipRight(
              network.authorize({
                transferId: id,
                pan: request.sender_account_uri.pan,
                expiry: request.sender_account_uri.expiry,
                cvc: request.sender_account_uri.cvc,
                authenticationValue: Option.fromNullable(request.authentication_value),
                amount: amount.right,
                currency: request.currency,
                merchantId: request.recipient.merchant_id
              }).pipe(Effect.tapError(() => store.cancel(pending)))
            ),
            Effect.flatMap((authorization) => store.settle(outcome(authorization), completion)),
            // A client that hangs up must not leave a charge without its record.
            Effect.uninterruptible
          )
        if (transfer.status === "declined") return yield* declined(transfer)
        return transfer
      })

    return {
      submit,
      get: store.get,
      list: store.list,
      balance: store.balance
    } as const
  })
}) {}
