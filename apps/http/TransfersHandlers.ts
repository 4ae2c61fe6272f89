import { HttpServerResponse } from "@effect/platform"
import { DateTime, Effect, FiberRef, Option, Redacted, Schema } from "effect"
import { CardFingerprints } from "../../core/CardFingerprints.ts"
import { cardErrorMessages } from "../../core/CardNetwork.ts"
import { formatAmount } from "../../core/Money.ts"
import { SiteSettings } from "../../core/SiteSettings.ts"
import { type ClientId, type PaymentTransferRequest, type Transfer, TransferId } from "../../core/Transfer.ts"
import { Transfers } from "../../core/Transfers.ts"
import { type StoredResponse, TransferStore } from "../../core/TransferStore.ts"
import { Api } from "./Api.ts"
import { apiError } from "./ApiError.ts"
import { group } from "./ApiHandlers.ts"
import { cacheableJson, type RequestHeaders } from "./Caching.ts"
import { CurrentRequestId, errorBody } from "./Edge.ts"
import { CurrentClient } from "./MerchantAuth.ts"
import { CreateTransferPayload } from "./TransfersApi.ts"

export const renderTransfer = (t: Transfer) => ({
  id: t.id,
  reference: t.reference,
  amount: formatAmount(t.amount, t.currency),
  currency: t.currency,
  status: t.status,
  sender: t.sender,
  recipient: t.recipient,
  ...(t.failure
    ? { failure_code: t.failure.code, ...(t.failure.decline_code ? { decline_code: t.failure.decline_code } : {}) }
    : {}),
  created: DateTime.formatIso(t.createdAt)
})

// Same parameters, same hash, whatever the key order or white space of the JSON: the comparison Stripe makes.
const canonical = (value: unknown): string =>
  Array.isArray(value)
    ? `[${value.map(canonical).join(",")}]`
    : value !== null && typeof value === "object"
    ? `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonical((value as any)[k])}`).join(",")}}`
    : JSON.stringify(value)

const isTransferId = Schema.is(TransferId)
const encodePayload = Schema.encodeSync(CreateTransferPayload)

// The answers to creating and reading a transfer, shared by the HttpApi handlers below and the hot path
// (apps/http/HotPath.ts), so that both give the same bytes.
export class TransferResponses extends Effect.Service<TransferResponses>()("TransferResponses", {
  effect: Effect.gen(function*() {
    const transfers = yield* Transfers
    const store = yield* TransferStore
    const { baseUrl } = yield* SiteSettings
    const location = (id: string) => `${baseUrl}/merchant/transfers/payment/${id}`

    const respond = (stored: StoredResponse, replayed: boolean) => {
      const headers: Record<string, string> = replayed ? { "idempotent-replayed": "true" } : {}
      if (stored.status === 201) headers.location = location(JSON.parse(stored.body).payment_transfer.id)
      return HttpServerResponse.text(stored.body, { status: stored.status, contentType: "application/json", headers })
    }

    const outcome = (requestId: string) => (t: Transfer): StoredResponse => {
      if (t.failure === undefined) return { status: 201, body: JSON.stringify({ payment_transfer: renderTransfer(t) }) }
      const e = apiError(t.failure.code, cardErrorMessages[t.failure.code], {
        ...(t.failure.decline_code ? { decline_code: t.failure.decline_code } : {})
      })
      return { status: 402, body: JSON.stringify(errorBody(baseUrl, e, requestId)) }
    }

    const submit = (client: ClientId, request: PaymentTransferRequest, requestId: string, key?: string) =>
      transfers.submit(client, request, key === undefined ? undefined : { key, response: outcome(requestId) }).pipe(
        Effect.map((t) => respond(outcome(requestId)(t), false)),
        Effect.catchTags({
          CardDeclined: (e) => Effect.succeed(respond(outcome(requestId)(e.transfer), false)),
          DuplicateReference: (e) => {
            const conflict = apiError("duplicate_reference", `A transfer with this reference exists: ${e.existing}.`, {
              param: "payment_transfer.reference"
            })
            const stored = { status: 409, body: JSON.stringify(errorBody(baseUrl, conflict, requestId)) }
            return Effect.as(
              key === undefined ? Effect.void : store.completeIdempotent(client, key, stored),
              respond(stored, false)
            )
          },
          InvalidTransfer: (e) => Effect.fail(apiError("parameter_invalid", e.message, { param: e.param })),
          CardNetworkUnavailable: () =>
            Effect.fail(apiError("card_network_unavailable", "The card network is unavailable; no transfer was made."))
        }),
        // Requests that did not get to a lasting answer free their key, so that a retry can run.
        Effect.onError(() => key === undefined ? Effect.void : store.releaseIdempotent(client, key))
      )

    const get = (client: ClientId, rawId: string, headers: RequestHeaders) => {
      const missing = () => Effect.fail(apiError("resource_missing", `No transfer has id ${rawId}.`, { param: "id" }))
      if (!isTransferId(rawId)) return missing()
      return Effect.flatMap(transfers.get(client, rawId), (found) => {
        if (Option.isNone(found)) return missing()
        const body = JSON.stringify({ payment_transfer: renderTransfer(found.value) })
        return Effect.succeed(cacheableJson(headers, body, found.value.createdAt, { public: false }))
      })
    }

    return { submit, respond, get } as const
  })
}) {}

export const TransfersLive = group(Api, "transfers", (handlers) =>
  Effect.gen(function*() {
    const transfers = yield* Transfers
    const store = yield* TransferStore
    const fingerprints = yield* CardFingerprints
    const { get, respond, submit } = yield* TransferResponses

    return handlers
      .handle("create", ({ headers, payload }) =>
        Effect.gen(function*() {
          const client = yield* CurrentClient
          const requestId = yield* FiberRef.get(CurrentRequestId)
          const key = headers["idempotency-key"]
          if (key === undefined) return yield* submit(client.id, payload.payment_transfer, requestId)
          const hash = fingerprints.of(Redacted.make(canonical(encodePayload(payload))))
          const start = yield* store.beginIdempotent(client.id, key, hash, yield* DateTime.now)
          switch (start._tag) {
            case "Replay":
              return respond(start.response, true)
            case "Mismatch":
              return yield* Effect.fail(
                apiError("idempotency_key_reused", "This Idempotency-Key was used with a different request body.")
              )
            case "InProgress":
              return yield* Effect.fail(
                apiError("idempotency_key_in_use", "A request with this Idempotency-Key is still being processed.")
              )
            case "Started":
              return yield* submit(client.id, payload.payment_transfer, requestId, key)
          }
        }))
      .handle("get", ({ headers, path }) => Effect.flatMap(CurrentClient, (client) => get(client.id, path.id, headers)))
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
          return { object: "list" as const, data: page.data.map(renderTransfer), has_more: page.hasMore }
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
