import { HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, HttpApiSchema, HttpApiSecurity } from "@effect/platform"
import { Context, Schema } from "effect"
import { EventType, type Owner } from "../../core/Webhooks.ts"
import { BadRequest, NotFound, Unauthorized, UnsupportedMediaType } from "./ApiError.ts"

// The owner a key speaks for: a merchant key its client (transfer.* events), the admin key "admin"
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
export const CreateEndpointPayload = Schema.Struct({
  url: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(2048)).annotations({
    message: () => "url is an absolute https URL of at most 2048 characters."
  }),
  enabled_events: Schema.NonEmptyArray(EnabledEvent).pipe(Schema.maxItems(10))
})

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
export const EndpointView = Schema.Struct(EndpointFields)
// Only the answers that make a secret show it.
export const EndpointWithSecret = Schema.Struct({ ...EndpointFields, secret: Schema.String })
export const EndpointList = Schema.Struct({
  object: Schema.Literal("list"),
  data: Schema.Array(EndpointView),
  has_more: Schema.Boolean
})

export const EventView = Schema.Struct({
  id: Schema.String,
  type: Schema.String,
  created: Schema.String,
  data: Schema.Struct({
    object: Schema.Unknown.annotations({
      jsonSchema: { type: "object", description: "The transfer or the subscription, as the API shows it." }
    })
  })
})
export const EventList = Schema.Struct({
  object: Schema.Literal("list"),
  data: Schema.Array(EventView),
  has_more: Schema.Boolean
})
export const ResendPayload = Schema.Struct({ webhook_endpoint: Schema.String })
export const Resent = Schema.Struct({ event: Schema.String, webhook_endpoint: Schema.String })

const Limit = Schema.NumberFromString.pipe(
  Schema.int(),
  Schema.between(1, 100),
  Schema.annotations({ message: () => "limit is an integer from 1 to 100." })
)
const IdPath = Schema.Struct({ id: Schema.String })

export class WebhooksApi extends HttpApiGroup.make("webhooks")
  .add(
    HttpApiEndpoint.post("create", "/webhook_endpoints")
      .setPayload(CreateEndpointPayload)
      .addSuccess(EndpointWithSecret, { status: 201 })
      .addError(BadRequest)
      .addError(UnsupportedMediaType)
  )
  .add(HttpApiEndpoint.get("list", "/webhook_endpoints").addSuccess(EndpointList))
  .add(HttpApiEndpoint.get("get", "/webhook_endpoints/:id").setPath(IdPath).addSuccess(EndpointView).addError(NotFound))
  .add(
    HttpApiEndpoint.del("delete", "/webhook_endpoints/:id")
      .setPath(IdPath)
      .addSuccess(HttpApiSchema.NoContent)
      .addError(NotFound)
  )
  .add(
    HttpApiEndpoint.post("rotate", "/webhook_endpoints/:id/rotate_secret")
      .setPath(IdPath)
      .addSuccess(EndpointWithSecret)
      .addError(NotFound)
  )
  .add(
    HttpApiEndpoint.get("events", "/events")
      .setUrlParams(Schema.Struct({
        type: Schema.optional(EventType),
        limit: Schema.optional(Limit),
        starting_after: Schema.optional(Schema.String)
      }))
      .addSuccess(EventList)
      .addError(BadRequest)
  )
  .add(HttpApiEndpoint.get("event", "/events/:id").setPath(IdPath).addSuccess(EventView).addError(NotFound))
  .add(
    HttpApiEndpoint.post("resend", "/events/:id/resend")
      .setPath(IdPath)
      .setPayload(ResendPayload)
      .addSuccess(Resent, { status: 202 })
      .addError(BadRequest)
      .addError(NotFound)
      .addError(UnsupportedMediaType)
  )
  .addError(Unauthorized)
  .middleware(WebhookAuth)
{}
