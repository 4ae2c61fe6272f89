import { Effect, Option, Schema } from "effect"
import { cardErrorMessages } from "../../../core/payments/CardNetwork.ts"
import type { IdempotencyKey, RequestHash } from "../../../core/payments/Idempotency.ts"
import { formatAmount } from "../../../core/payments/Money.ts"
import { type Transfer, TransferId } from "../../../core/payments/Transfer.ts"
import { type Submitted, Transfers } from "../../../core/payments/Transfers.ts"
import { SiteSettings } from "../../../core/shared/SiteSettings.ts"
import { Api } from "../Api.ts"
import { apiError } from "../pipeline/ApiError.ts"
import { group } from "../pipeline/ApiHandlers.ts"
import { cacheableJson } from "../pipeline/Caching.ts"
import { currentRequestId, errorBody } from "../pipeline/Edge.ts"
import { withBeforeDecode } from "../pipeline/Endpoint.ts"
import { makeKnownBodies } from "../pipeline/KnownBodies.ts"
import { CurrentClient } from "../pipeline/MerchantAuth.ts"
import { countTransfer } from "../pipeline/Observability.ts"
import type { IncomingRequest } from "../pipeline/Pipeline.ts"
import { textAnswer } from "../pipeline/TextBody.ts"
import { transferView } from "./TransfersApi.ts"

const isTransferId = Schema.is(TransferId)
// TransferView encodes to itself: its JSON is the view's.
const envelope = (t: Transfer) => JSON.stringify({ payment_transfer: transferView(t) })

// A transfer's answer, first or replayed, is rendered from the same facts (the transfer, or the transfer holding
// the reference, and the first request's id), so a replay is the same bytes.
const answers = (baseUrl: string) => {
  const location = (id: string) => `${baseUrl}/merchant/transfers/payment/${id}`
  const json = (status: number, body: string, headers: Record<string, string>) =>
    textAnswer(body, { status, contentType: "application/json", headers })
  return ({ answer, replayed, requestId }: Submitted) => {
    const headers: Record<string, string> = replayed ? { "idempotent-replayed": "true" } : {}
    const error = (e: Parameters<typeof errorBody>[1]) => JSON.stringify(errorBody(baseUrl, e, requestId))
    if (answer._tag === "ReferenceTaken") {
      if (!replayed) countTransfer("reference_taken")
      const conflict = apiError("duplicate_reference", `A transfer with this reference exists: ${answer.existing}.`, {
        param: "payment_transfer.reference"
      })
      return json(409, error(conflict), headers)
    }
    const t = answer.transfer
    if (!replayed) countTransfer(t.status, t.failure?.code, t.failure?.decline_code)
    // Not settled yet: accepted, with the transfer to look at later (its key replays this until it is final).
    if (t.status === "pending" || t.status === "unknown") {
      return json(202, envelope(t), { ...headers, location: location(t.id) })
    }
    if (t.failure === undefined) return json(201, envelope(t), { ...headers, location: location(t.id) })
    const declined = apiError(t.failure.code, cardErrorMessages[t.failure.code], {
      ...(t.failure.decline_code ? { decline_code: t.failure.decline_code } : {}),
      transfer: t.id
    })
    return json(402, error(declined), headers)
  }
}

const submitErrors = {
  InvalidTransfer: (e: { readonly message: string; readonly param: string }) =>
    Effect.fail(apiError("parameter_invalid", e.message, { param: e.param })),
  CardNetworkUnavailable: () =>
    Effect.fail(apiError("card_network_unavailable", "The card network is unavailable; no transfer was made.")),
  IdempotencyKeyReused: () =>
    Effect.fail(apiError("idempotency_key_reused", "This Idempotency-Key was used with a different request body.")),
  IdempotencyKeyInUse: () =>
    Effect.fail(apiError("idempotency_key_in_use", "A request with this Idempotency-Key is still being processed."))
}

// How many Idempotency-Keys' bodies this process knows by their bytes (a few hundred bytes each).
const KnownBodiesCapacity = 4096

export const TransfersLive = group(Api, "transfers", (handlers) =>
  Effect.gen(function*() {
    const transfers = yield* Transfers
    const render = answers((yield* SiteSettings).baseUrl)
    const bodies = makeKnownBodies<RequestHash>(KnownBodiesCapacity)
    // A retry with the very bytes of a body decoded before under its key is answered from the key's kept answer
    // before anything is decoded; any other request, or a key with no answer to replay, takes the whole path.
    const replayKnown = (request: IncomingRequest, body: string) => {
      const key = request.headers["idempotency-key"]
      if (key === undefined) return Effect.succeed(undefined)
      return Effect.flatMap(CurrentClient, (client) =>
        Effect.flatMap(bodies.recall(client.id, key, body), (hash) =>
          hash === undefined ? Effect.succeed(undefined) : Effect.flatMap(currentRequestId, (requestId) =>
            // A key is known only once it was decoded: the header is a valid key.
            Effect.map(
              transfers.replayKept(client.id, key as IdempotencyKey, hash, requestId),
              (kept) =>
                Option.isSome(kept) ? render(kept.value) : undefined
            ))))
    }

    return handlers
      .handle(
        "create",
        withBeforeDecode(replayKnown)(({ headers, payload }) =>
          Effect.gen(function*() {
            const client = yield* CurrentClient
            const requestId = yield* currentRequestId
            const key = headers["idempotency-key"]
            const submitted = transfers.submit(client.id, payload.payment_transfer, requestId, key)
            const learned = key === undefined
              ? submitted
              : Effect.tap(submitted, (s) =>
                bodies.learn(client.id, key, s.requestHash))
            return yield* Effect.catchTags(Effect.map(learned, render), submitErrors)
          })
        )
      )
      .handle("get", ({ headers, path }) =>
        Effect.flatMap(CurrentClient, (client) => {
          const missing = () =>
            Effect.fail(apiError("resource_missing", "No transfer has this id.", { param: "id" }))
          if (!isTransferId(path.id)) return missing()
          return Effect.flatMap(transfers.get(client.id, path.id), (found) =>
            Option.isNone(found)
              ? missing()
              : Effect.succeed(cacheableJson(headers, envelope(found.value), undefined, { public: false })))
        }))
      .handle("list", ({ urlParams }) =>
        Effect.gen(function*() {
          const client = yield* CurrentClient
          if (
            urlParams.starting_after !== undefined &&
            Option.isNone(yield* transfers.get(client.id, urlParams.starting_after))
          ) {
            return yield* Effect.fail(
              apiError("resource_missing", "starting_after names no transfer of yours.", { param: "starting_after" })
            )
          }
          const page = yield* transfers.list(client.id, {
            limit: urlParams.limit ?? 10,
            ...(urlParams.reference === undefined ? {} : { reference: urlParams.reference }),
            ...(urlParams.starting_after === undefined ? {} : { startingAfter: urlParams.starting_after })
          })
          return { object: "list" as const, data: page.data.map(transferView), has_more: page.hasMore }
        }))
      .handle("balance", () =>
        Effect.gen(function*() {
          const client = yield* CurrentClient
          const balances = yield* transfers.balance(client.id)
          return {
            balances: balances.map((b) => ({
              merchant_id: b.merchantId,
              currency: b.currency,
              amount: formatAmount(b.amount, b.currency)
            }))
          }
        }))
  }))
