import { Effect, Option, Schema } from "effect"
import { type Refund, RefundId } from "../../../core/payments/Refund.ts"
import { type RefundAnswer, Refunds } from "../../../core/payments/Refunds.ts"
import { TransferId } from "../../../core/payments/Transfer.ts"
import { Transfers } from "../../../core/payments/Transfers.ts"
import { SiteSettings } from "../../../core/shared/SiteSettings.ts"
import { Api } from "../Api.ts"
import { apiError } from "../pipeline/ApiError.ts"
import { group } from "../pipeline/ApiHandlers.ts"
import { cacheableJson } from "../pipeline/Caching.ts"
import { currentRequestId } from "../pipeline/Edge.ts"
import { CurrentClient } from "../pipeline/MerchantAuth.ts"
import { countRefund } from "../pipeline/Observability.ts"
import { textAnswer } from "../pipeline/TextBody.ts"
import { refundView } from "./RefundsApi.ts"

const isTransferId = Schema.is(TransferId)
const isRefundId = Schema.is(RefundId)
// RefundView encodes to itself: its JSON is the view's.
const envelope = (r: Refund) => JSON.stringify({ refund: refundView(r) })

// A refund's answer, first or replayed, is rendered from the refund as it is now, so a replay of a final
// refund is the same bytes. Made, it is 201 (succeeded or failed); not known yet, 202, reconciled later.
const answers = (baseUrl: string) => ({ refund, replayed }: RefundAnswer) => {
  if (!replayed) countRefund(refund.status, refund.failureReason)
  return textAnswer(envelope(refund), {
    status: refund.status === "pending" || refund.status === "unknown" ? 202 : 201,
    contentType: "application/json",
    headers: {
      ...(replayed ? { "idempotent-replayed": "true" } : {}),
      location: `${baseUrl}/merchant/refunds/${refund.id}`
    }
  })
}

const noTransfer = () => Effect.fail(apiError("resource_missing", "No transfer has this id.", { param: "id" }))

const refundErrors = {
  InvalidRefund: (e: { readonly message: string; readonly param: string }) =>
    Effect.fail(apiError("parameter_invalid", e.message, { param: e.param })),
  AmountTooLarge: (e: { readonly message: string }) =>
    Effect.fail(apiError("amount_too_large", e.message, { param: "amount" })),
  TransferAlreadyRefunded: (e: { readonly transfer: string }) =>
    Effect.fail(apiError("transfer_already_refunded", `The transfer ${e.transfer} has been refunded in full.`)),
  TransferNotRefundable: (e: { readonly transfer: string; readonly status: string }) =>
    Effect.fail(
      apiError(
        "transfer_not_refundable",
        `The transfer ${e.transfer} is ${e.status}; only an approved transfer can be refunded.`
      )
    ),
  TransferNotFound: noTransfer,
  CardNetworkUnavailable: () =>
    Effect.fail(apiError("card_network_unavailable", "The card network is unavailable; no refund was made.")),
  IdempotencyKeyReused: () =>
    Effect.fail(apiError("idempotency_key_reused", "This Idempotency-Key was used with a different request body.")),
  IdempotencyKeyInUse: () =>
    Effect.fail(apiError("idempotency_key_in_use", "A request with this Idempotency-Key is still being processed."))
}

export const RefundsLive = group(Api, "refunds", (handlers) =>
  Effect.gen(function*() {
    const refunds = yield* Refunds
    const transfers = yield* Transfers
    const render = answers((yield* SiteSettings).baseUrl)

    return handlers
      .handle("create", ({ headers, path, payload }) =>
        Effect.gen(function*() {
          if (!isTransferId(path.id)) return yield* noTransfer()
          const client = yield* CurrentClient
          const requestId = yield* currentRequestId
          const made = refunds.refund(client.id, path.id, payload, requestId, headers["idempotency-key"])
          return yield* Effect.catchTags(Effect.map(made, render), refundErrors)
        }))
      .handle("list", ({ path, urlParams }) =>
        Effect.gen(function*() {
          const client = yield* CurrentClient
          if (!isTransferId(path.id) || Option.isNone(yield* transfers.get(client.id, path.id))) {
            return yield* noTransfer()
          }
          const after = urlParams.starting_after
          if (after !== undefined) {
            const found = yield* refunds.get(client.id, after)
            if (Option.isNone(found) || found.value.transferId !== path.id) {
              return yield* Effect.fail(
                apiError("resource_missing", "starting_after names no refund of this transfer.", {
                  param: "starting_after"
                })
              )
            }
          }
          const page = yield* refunds.list(client.id, path.id, {
            limit: urlParams.limit ?? 10,
            ...(after === undefined ? {} : { startingAfter: after })
          })
          return { object: "list" as const, data: page.data.map(refundView), has_more: page.hasMore }
        }))
      .handle("get", ({ headers, path }) =>
        Effect.flatMap(CurrentClient, (client) => {
          const missing = () => Effect.fail(apiError("resource_missing", "No refund has this id.", { param: "id" }))
          if (!isRefundId(path.id)) return missing()
          return Effect.flatMap(refunds.get(client.id, path.id), (found) => {
            if (Option.isNone(found)) return missing()
            return Effect.succeed(cacheableJson(headers, envelope(found.value), undefined, { public: false }))
          })
        }))
  }))
