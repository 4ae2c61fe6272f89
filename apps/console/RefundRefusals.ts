import type { RefundError } from "../../core/payments/Refunds.ts"

// Why a refund was not made, for the person who asked, and the status of the page that says so.
export const refundRefusal = (e: RefundError): string => {
  switch (e._tag) {
    case "InvalidRefund":
    case "AmountTooLarge":
      return e.message
    case "TransferAlreadyRefunded":
      return "This transfer has been refunded in full."
    case "TransferNotRefundable":
      return "Only an approved transfer can be refunded."
    case "CardNetworkUnavailable":
      return "The card network is unavailable; no refund was made. Try again."
    case "IdempotencyKeyReused":
      return "This form was used for another refund already. Try again with the form below."
    default:
      return "No refund was made. Try again."
  }
}
export const refusalStatus = (e: RefundError) =>
  e._tag === "CardNetworkUnavailable" ? 503 : e._tag === "IdempotencyKeyReused" ? 409 : 400
