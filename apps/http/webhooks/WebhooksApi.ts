import {
  HttpApiEndpoint,
  HttpApiGroup,
  HttpApiMiddleware,
  HttpApiSchema,
  HttpApiSecurity,
  OpenApi
} from "@effect/platform"
import { Context, Schema } from "effect"
import { EventType, type Owner } from "../../../core/webhooks/Webhooks.ts"
import { documented } from "../meta/OpenApiDocument.ts"
import { BadRequest, NotFound, Unauthorized, UnsupportedMediaType } from "../pipeline/ApiError.ts"
import { Limit } from "../pipeline/Paging.ts"

// The owner a key speaks for: a merchant key its client (transfer.* and refund.* events), the admin key "admin"
// (subscription.* events).
export class CurrentOwner extends Context.Tag("CurrentOwner")<CurrentOwner, Owner>() {}

export class WebhookAuth extends HttpApiMiddleware.Tag<WebhookAuth>()("WebhookAuth", {
  failure: Unauthorized,
  provides: CurrentOwner,
  security: { bearer: HttpApiSecurity.bearer }
}) {}

const EnabledEvent = Schema.Union(EventType, Schema.Literal("*")).annotations({
  message: () => `enabled_events holds event types (${EventType.literals.join(", ")}) or "*".`
})
const urlMessage = { message: () => "url is an absolute https URL of at most 2048 characters." }
export const CreateEndpointPayload = Schema.Struct({
  url: Schema.String.pipe(
    Schema.maxLength(2048, urlMessage),
    Schema.pattern(/^[Hh][Tt][Tt][Pp][Ss]?:\/\/[^/?#]/, urlMessage),
    Schema.annotations({
      ...urlMessage,
      description:
        "An absolute https URL without credentials, to a public address (http and private addresses only where the operator allows them: WEBHOOK_ALLOW_HTTP, WEBHOOK_ALLOW_PRIVATE); else 400 url_refused."
    })
  ),
  enabled_events: Schema.NonEmptyArray(EnabledEvent).pipe(
    Schema.maxItems(10),
    Schema.annotations({
      description:
        "Event types, or \"*\" for all of the key's: a merchant key's are transfer.* and refund.*, the admin key's subscription.*; asking for another owner's is 400 parameter_invalid."
    })
  )
}).annotations({ examples: [{ url: "https://hooks.example.com/paysub", enabled_events: ["transfer.approved"] }] })

const EndpointFields = {
  id: Schema.String,
  url: Schema.String,
  enabled_events: Schema.Array(Schema.String),
  status: Schema.Literal("enabled", "disabled"),
  failing_since: Schema.optional(Schema.String),
  last_error: Schema.optional(Schema.String),
  disabled_reason: Schema.optional(Schema.String),
  created: Schema.String
}
const endpointExample = {
  id: "we_4fJ8kQ2mN7xR1tY6vB3cL9pD",
  url: "https://hooks.example.com/paysub",
  enabled_events: ["transfer.approved"],
  status: "enabled" as const,
  created: "2026-01-05T10:00:00.000Z"
}
export const EndpointView = Schema.Struct(EndpointFields).annotations({ examples: [endpointExample] })
// Only the answers that make a secret show it.
export const EndpointWithSecret = Schema.Struct({ ...EndpointFields, secret: Schema.String }).annotations({
  examples: [{ ...endpointExample, secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw8HnD3kpqQ0c=" }]
})
export const EndpointList = Schema.Struct({
  object: Schema.Literal("list"),
  data: Schema.Array(EndpointView),
  has_more: Schema.Boolean
}).annotations({ examples: [{ object: "list", data: [endpointExample], has_more: false }] })

export const EventView = Schema.Struct({
  id: Schema.String,
  type: Schema.String,
  created: Schema.String,
  data: Schema.Struct({
    object: Schema.Unknown.annotations({
      jsonSchema: { type: "object", description: "The transfer or the subscription, as the API shows it." }
    })
  })
}).annotations({
  examples: [{
    id: "evt_2hG7jK9lM3nP5qR8sT1uV4wX",
    type: "transfer.approved",
    created: "2026-01-05T10:00:00.000Z",
    data: { object: { id: "tr_8mZkq3Vb9xYt2LwQ4nRs6PaC", status: "approved" } }
  }]
})
export const EventList = Schema.Struct({
  object: Schema.Literal("list"),
  data: Schema.Array(EventView),
  has_more: Schema.Boolean
}).annotations({ examples: [{ object: "list", data: [], has_more: false }] })
export const ResendPayload = Schema.Struct({ webhook_endpoint: Schema.String }).annotations({
  examples: [{ webhook_endpoint: endpointExample.id }]
})
export const Resent = Schema.Struct({ event: Schema.String, webhook_endpoint: Schema.String }).annotations({
  examples: [{ event: "evt_2hG7jK9lM3nP5qR8sT1uV4wX", webhook_endpoint: endpointExample.id }]
})

const IdPath = Schema.Struct({ id: Schema.String })

export class WebhooksApi extends HttpApiGroup.make("webhooks")
  .add(
    HttpApiEndpoint.post("create", "/webhook_endpoints")
      .setPayload(CreateEndpointPayload)
      .addSuccess(EndpointWithSecret, { status: 201 })
      .addError(BadRequest)
      .addError(UnsupportedMediaType)
      .annotateContext(documented(
        "Register a webhook endpoint",
        "Registers a URL that events are POSTed to, signed as Standard Webhooks. The answer shows the signing secret, this once."
      ))
  )
  .add(
    HttpApiEndpoint.get("list", "/webhook_endpoints").addSuccess(EndpointList).annotateContext(
      documented("List webhook endpoints", "The key's webhook endpoints, without their secrets.")
    )
  )
  .add(
    HttpApiEndpoint.get("get", "/webhook_endpoints/:id").setPath(IdPath).addSuccess(EndpointView).addError(NotFound)
      .annotateContext(documented(
        "Get a webhook endpoint",
        "One of the key's endpoints, with its status (disabled after failing for days, or by its owner in the console) and last error."
      ))
  )
  .add(
    HttpApiEndpoint.del("delete", "/webhook_endpoints/:id")
      .setPath(IdPath)
      .addSuccess(HttpApiSchema.NoContent)
      .addError(NotFound)
      .annotateContext(
        documented("Delete a webhook endpoint", "Stops deliveries to it; undelivered events are dropped.")
      )
  )
  .add(
    HttpApiEndpoint.post("rotate", "/webhook_endpoints/:id/rotate_secret")
      .setPath(IdPath)
      .addSuccess(EndpointWithSecret)
      .addError(NotFound)
      .annotateContext(documented(
        "Rotate a webhook endpoint's secret",
        "A new signing secret, shown this once; deliveries are signed with it from now on."
      ))
  )
  .add(
    HttpApiEndpoint.get("events", "/events")
      .setUrlParams(Schema.Struct({
        type: Schema.optional(EventType),
        limit: Schema.optional(Limit),
        starting_after: Schema.optional(
          Schema.String.pipe(Schema.pattern(/^evt_[0-9A-Za-z]{24}$/, {
            message: () => "starting_after is an event id (evt_...)."
          }))
        )
      }))
      .addSuccess(EventList)
      .addError(BadRequest)
      .annotateContext(documented(
        "List events",
        "The key's events, newest first, a page at a time; type filters by event type."
      ))
  )
  .add(
    HttpApiEndpoint.get("event", "/events/:id").setPath(IdPath).addSuccess(EventView).addError(NotFound)
      .annotateContext(documented("Get an event", "One of the key's events, as it was delivered."))
  )
  .add(
    HttpApiEndpoint.post("resend", "/events/:id/resend")
      .setPath(IdPath)
      .setPayload(ResendPayload)
      .addSuccess(Resent, { status: 202 })
      .addError(BadRequest)
      .addError(NotFound)
      .addError(UnsupportedMediaType)
      .annotateContext(documented(
        "Resend an event",
        "Queues the event for delivery to one of the key's endpoints again (202: it is sent in the background)."
      ))
  )
  .addError(Unauthorized)
  .middleware(WebhookAuth)
  .annotateContext(OpenApi.annotations({
    description:
      "Webhook endpoints and the events sent to them: a merchant key gets transfer.* and refund.* events, the admin key subscription.* events."
  }))
{}
