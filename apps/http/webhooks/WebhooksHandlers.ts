import { HttpServerResponse } from "@effect/platform"
import { DateTime, Effect, Layer, Option, type Redacted, Schema } from "effect"
import { Clients } from "../../../core/payments/Clients.ts"
import { WebhookEndpoints } from "../../../core/webhooks/WebhookEndpoints.ts"
import {
  AdminOwner,
  EndpointId,
  EventId,
  type StoredEvent,
  type WebhookEndpoint
} from "../../../core/webhooks/Webhooks.ts"
import { Api } from "../Api.ts"
import { AdminAuth } from "../pipeline/AdminAuth.ts"
import { adminAuthLayer } from "../pipeline/AdminAuthLive.ts"
import { apiError } from "../pipeline/ApiError.ts"
import { group } from "../pipeline/ApiHandlers.ts"
import { bearerClient } from "../pipeline/MerchantAuthLive.ts"
import { jsonAnswer } from "../pipeline/TextBody.ts"
import { CurrentOwner, WebhookAuth } from "./WebhooksApi.ts"

const iso = (t: DateTime.Utc | undefined) => (t === undefined ? {} : DateTime.formatIso(t))
const endpointView = (
  e: Pick<WebhookEndpoint, "id" | "url" | "enabledEvents" | "createdAt"> & Partial<WebhookEndpoint>
) => ({
  id: e.id,
  url: e.url,
  enabled_events: e.enabledEvents,
  status: e.disabledAt === undefined ? "enabled" as const : "disabled" as const,
  ...(e.failingSince === undefined ? {} : { failing_since: iso(e.failingSince) as string }),
  ...(e.lastError === undefined ? {} : { last_error: e.lastError }),
  ...(e.disabledReason === undefined ? {} : { disabled_reason: e.disabledReason }),
  created: DateTime.formatIso(e.createdAt)
})
// The stored body is the event as every delivery sent it.
const eventView = (e: StoredEvent) => JSON.parse(e.body)

const isEndpointId = Schema.is(EndpointId)
const isEventId = Schema.is(EventId)
const endpointMissing = () => apiError("resource_missing", "No webhook endpoint has this id.", { param: "id" })
const eventMissing = () => apiError("resource_missing", "No event has this id.", { param: "id" })

// A merchant key speaks for its client, the admin key for the subscriptions: either is accepted here.
export const webhookAuthLayer = (adminKey: Option.Option<Redacted.Redacted<string>>) =>
  Layer.effect(
    WebhookAuth,
    Effect.gen(function*() {
      const merchant = bearerClient(yield* Clients)
      const admin = yield* Effect.provide(AdminAuth, adminAuthLayer(adminKey))
      return WebhookAuth.of({
        bearer: (key) =>
          Option.isSome(adminKey)
            ? Effect.orElse(Effect.as(admin.bearer(key), AdminOwner), () => Effect.map(merchant(key), (c) => c.id))
            : Effect.map(merchant(key), (c) => c.id)
      })
    })
  )

export const WebhooksLive = group(Api, "webhooks", (handlers) =>
  Effect.gen(function*() {
    const webhooks = yield* WebhookEndpoints
    const owned = <A, E, R>(use: (owner: string) => Effect.Effect<A, E, R>) => Effect.flatMap(CurrentOwner, use)
    const withEndpoint = <A, E, R>(id: string, use: (id: EndpointId) => Effect.Effect<A, E, R>) =>
      isEndpointId(id) ? use(id) : Effect.fail(endpointMissing())
    const withEvent = <A, E, R>(id: string, use: (id: EventId) => Effect.Effect<A, E, R>) =>
      isEventId(id) ? use(id) : Effect.fail(eventMissing())

    return handlers
      .handle("create", ({ payload }) =>
        owned((owner) =>
          webhooks.create(owner, payload.url, payload.enabled_events).pipe(
            Effect.map(({ endpoint, secret }) =>
              jsonAnswer({ ...endpointView(endpoint), secret }, { status: 201 })
            ),
            Effect.catchTag("EventTypesRefused", (e) =>
              Effect.fail(
                apiError(
                  "parameter_invalid",
                  `This key cannot receive ${e.type} events; it receives ${e.allowed.join(", ")}.`,
                  { param: "enabled_events" }
                )
              )),
            Effect.catchTag("UrlRefused", (e) => Effect.fail(apiError("url_refused", e.reason, { param: "url" })))
          )
        ))
      .handle("list", () =>
        owned((owner) =>
          Effect.map(
            webhooks.list(owner),
            (all) => ({ object: "list" as const, data: all.map(endpointView), has_more: false })
          )
        ))
      .handle("get", ({ path }) =>
        owned((owner) =>
          withEndpoint(path.id, (id) =>
            webhooks.get(owner, id).pipe(
              Effect.map(endpointView),
              Effect.catchTag("EndpointNotFound", () => Effect.fail(endpointMissing()))
            ))
        ))
      .handle("delete", ({ path }) =>
        owned((owner) =>
          withEndpoint(path.id, (id) =>
            webhooks.remove(owner, id).pipe(
              Effect.as(HttpServerResponse.empty({ status: 204 })),
              Effect.catchTag("EndpointNotFound", () => Effect.fail(endpointMissing()))
            ))
        ))
      .handle("rotate", ({ path }) =>
        owned((owner) =>
          withEndpoint(path.id, (id) =>
            webhooks.rotate(owner, id).pipe(
              Effect.map(({ endpoint, secret }) => ({ ...endpointView(endpoint), secret })),
              Effect.catchTag("EndpointNotFound", () => Effect.fail(endpointMissing()))
            ))
        ))
      .handle("events", ({ urlParams }) =>
        owned((owner) =>
          Effect.gen(function*() {
            const after = urlParams.starting_after
            if (after !== undefined && !isEventId(after)) {
              return yield* Effect.fail(apiError("parameter_invalid", "starting_after is an event id (evt_...).", {
                param: "starting_after"
              }))
            }
            const page = yield* webhooks.events(owner, {
              limit: urlParams.limit ?? 10,
              ...(urlParams.type === undefined ? {} : { type: urlParams.type }),
              ...(after === undefined ? {} : { startingAfter: after })
            })
            return { object: "list" as const, data: page.data.map(eventView), has_more: page.hasMore }
          })
        ))
      .handle("event", ({ path }) =>
        owned((owner) =>
          withEvent(path.id, (id) =>
            webhooks.event(owner, id).pipe(
              Effect.map(eventView),
              Effect.catchTag("EventNotFound", () => Effect.fail(eventMissing()))
            ))
        ))
      .handle("resend", ({ path, payload }) =>
        owned((owner) =>
          withEvent(path.id, (event) =>
            Effect.gen(function*() {
              if (!isEndpointId(payload.webhook_endpoint)) {
                return yield* Effect.fail(apiError("resource_missing", "No webhook endpoint has this id.", {
                  param: "webhook_endpoint"
                }))
              }
              yield* webhooks.resend(owner, event, payload.webhook_endpoint).pipe(
                Effect.catchTags({
                  EventNotFound: () => Effect.fail(eventMissing()),
                  EndpointNotFound: () =>
                    Effect.fail(
                      apiError("resource_missing", "No webhook endpoint has this id.", { param: "webhook_endpoint" })
                    )
                })
              )
              return jsonAnswer({ event, webhook_endpoint: payload.webhook_endpoint }, {
                status: 202
              })
            }))
        ))
  }))
