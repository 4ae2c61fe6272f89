import { Context, DateTime, type Effect, type Option, Schema } from "effect"

// The events a webhook endpoint can ask for. A merchant's key owns its client's transfer.* and refund.* events;
// the admin key owns subscription.* events. No owner sees another's.
export const EventType = Schema.Literal(
  "transfer.unknown",
  "transfer.approved",
  "transfer.declined",
  "refund.created",
  "refund.updated",
  "subscription.confirmed",
  "subscription.unsubscribed"
)
export type EventType = typeof EventType.Type
export const eventTypes = EventType.literals

export const AdminOwner = "admin"
export type Owner = string

export const ownerTypes = (owner: Owner): ReadonlyArray<EventType> =>
  eventTypes.filter((t) => t.startsWith("subscription.") === (owner === AdminOwner))

export const EventId = Schema.String.pipe(Schema.pattern(/^evt_[0-9A-Za-z]{24}$/), Schema.brand("EventId"))
export type EventId = typeof EventId.Type
export const EndpointId = Schema.String.pipe(Schema.pattern(/^we_[0-9A-Za-z]{24}$/), Schema.brand("EndpointId"))
export type EndpointId = typeof EndpointId.Type

export const SecretPrefix = "whsec_"

export interface WebhookEndpoint {
  readonly id: EndpointId
  readonly owner: Owner
  readonly url: string
  readonly enabledEvents: ReadonlyArray<string>
  readonly createdAt: DateTime.Utc
  readonly failingSince: DateTime.Utc | undefined
  readonly lastError: string | undefined
  readonly disabledAt: DateTime.Utc | undefined
  readonly disabledReason: string | undefined
}

// An event as stored: `body` is the exact JSON every delivery of it sends (and signs).
export interface StoredEvent {
  readonly id: EventId
  readonly type: EventType
  readonly createdAt: DateTime.Utc
  readonly body: string
}

// What a receiver answered a request with: its HTTP status, or why there was no answer to read (a time-out, a
// refused or reset connection, a refused address, an answer that could not be read). Never the answer's body.
export type Answer = number | string

// Delivered: a 2xx answer.
export const isDelivered = (answer: Answer): answer is number =>
  typeof answer === "number" && answer >= 200 && answer < 300

// Why a delivery's attempt was not sent: its endpoint failed earlier in the same pass (core/webhooks/WebhookWorker.ts).
export const EndpointFailing = "endpoint failing"

// Why an attempt failed, as its delivery's and its endpoint's last error keep it.
export const failureOf = (answer: Answer): string => typeof answer === "number" ? `HTTP ${answer}` : answer

// An attempt that failed, as its delivery records it: when, and what the receiver answered (`status`) or why
// there was no answer (`failure`, its first MaxFailure characters).
export interface FailedAttempt {
  readonly at: DateTime.Utc
  readonly status: number | undefined
  readonly failure: string | undefined
}

export const MaxFailure = 200
export const failedAttempt = (at: DateTime.Utc, answer: Answer): FailedAttempt =>
  typeof answer === "number"
    ? { at, status: answer, failure: undefined }
    : { at, status: undefined, failure: answer.slice(0, MaxFailure) }

// One attempt of a delivery as it is kept: its number (1 for the first), when its outcome came, and the
// receiver's HTTP status (a 2xx: delivered) or why there was none (`failure`). A delivery keeps its latest
// KeptAttempts attempts, however often it is tried: the retries alone do not bound them
// (docs/decisions/0059-each-attempt-of-a-delivery-kept.md).
export const KeptAttempts = 20
export interface AttemptState {
  readonly attempt: number
  readonly at: DateTime.Utc
  readonly status: number | undefined
  readonly failure: string | undefined
}

// One delivery of an event as its owner reads it: to which endpoint, how many attempts so far, its kept attempts
// (oldest first: the latest KeptAttempts, none of those made before migration 0017), and when it was delivered
// or, until then, when it is tried next and why the last attempt failed.
export interface DeliveryState {
  readonly endpointId: EndpointId
  readonly url: string
  readonly attempts: number
  readonly history: ReadonlyArray<AttemptState>
  readonly deliveredAt: DateTime.Utc | undefined
  readonly nextAttemptAt: DateTime.Utc | undefined
  readonly lastError: string | undefined
}
export interface EventDeliveries {
  readonly event: StoredEvent
  readonly deliveries: ReadonlyArray<DeliveryState>
}

// A delivery claimed for sending, with what sending it needs.
export interface Delivery {
  readonly id: number
  readonly eventId: EventId
  readonly attempts: number
  readonly body: string
}

export interface EndpointTarget {
  readonly url: string
  readonly secret: string
  readonly failingSince: DateTime.Utc | undefined
  // Deliveries are not attempted before this (the endpoint's backoff), nor at all once it is disabled.
  readonly retryAt: DateTime.Utc | undefined
  readonly disabled: boolean
}

export class UrlRefused extends Schema.TaggedError<UrlRefused>()("UrlRefused", { reason: Schema.String }) {}
// An endpoint asked for a type its owner does not receive (`type`), or for none (`type` undefined).
export class EventTypesRefused extends Schema.TaggedError<EventTypesRefused>()("EventTypesRefused", {
  type: Schema.optional(Schema.String),
  allowed: Schema.Array(Schema.String)
}) {}
export class EndpointNotFound extends Schema.TaggedError<EndpointNotFound>()("EndpointNotFound", {}) {}
export class EventNotFound extends Schema.TaggedError<EventNotFound>()("EventNotFound", {}) {}

// Storage for endpoints, events and their deliveries. Events themselves are written by the transfer and
// subscription stores, in the transactions that cause them, with one delivery per enabled endpoint.
export interface WebhookStoreShape {
  readonly createEndpoint: (
    endpoint: Pick<WebhookEndpoint, "id" | "owner" | "url" | "enabledEvents" | "createdAt">,
    secret: string
  ) => Effect.Effect<void>
  readonly listEndpoints: (owner: Owner) => Effect.Effect<ReadonlyArray<WebhookEndpoint>>
  readonly getEndpoint: (owner: Owner, id: EndpointId) => Effect.Effect<Option.Option<WebhookEndpoint>>
  readonly deleteEndpoint: (owner: Owner, id: EndpointId) => Effect.Effect<boolean>
  readonly setSecret: (owner: Owner, id: EndpointId, secret: string) => Effect.Effect<boolean>
  // Disables an endpoint of the owner at `disabled.at` with that reason (its first 600 characters), or, with
  // undefined, enables it again with no failure on record; false when the owner has no such endpoint.
  readonly setDisabled: (
    owner: Owner,
    id: EndpointId,
    disabled: { readonly at: DateTime.Utc; readonly reason: string } | undefined
  ) => Effect.Effect<boolean>
  readonly listEvents: (
    owner: Owner,
    query: { readonly type?: EventType; readonly limit: number; readonly startingAfter?: EventId }
  ) => Effect.Effect<{ readonly data: ReadonlyArray<StoredEvent>; readonly hasMore: boolean }>
  readonly getEvent: (owner: Owner, id: EventId) => Effect.Effect<Option.Option<StoredEvent>>
  // The owner's latest `limit` events about `subject` (NewEvent's), newest first, each with its deliveries.
  readonly eventsAbout: (owner: Owner, subject: string, limit: number) => Effect.Effect<ReadonlyArray<EventDeliveries>>
  // A new delivery of an event to an endpoint of the same owner; false when either is missing.
  readonly resend: (owner: Owner, event: EventId, endpoint: EndpointId, now: DateTime.Utc) => Effect.Effect<boolean>
  // Endpoints with deliveries due and no backoff in force.
  readonly dueEndpoints: (now: DateTime.Utc, limit: number) => Effect.Effect<ReadonlyArray<EndpointId>>
  readonly target: (id: EndpointId) => Effect.Effect<Option.Option<EndpointTarget>>
  // Leases up to `limit` due deliveries of one endpoint (FOR UPDATE SKIP LOCKED on PostgreSQL).
  readonly claim: (
    endpoint: EndpointId,
    now: DateTime.Utc,
    leaseUntil: DateTime.Utc,
    limit: number
  ) => Effect.Effect<ReadonlyArray<Delivery>>
  // Marks deliveries delivered at `now` (those not delivered yet), each with its attempt: its number the
  // delivery's count of attempts with this one, its time `now`, its status the one given. In one transaction.
  readonly delivered: (
    answers: ReadonlyArray<{ readonly id: number; readonly status: number }>,
    now: DateTime.Utc
  ) => Effect.Effect<void>
  // Records a failed attempt of a delivery not delivered yet, in one transaction: its count and last error
  // (`reason`'s first 500 characters) and when it is due again, and the attempt (numbered as `delivered` does).
  readonly failed: (
    id: number,
    nextAttemptAt: DateTime.Utc,
    reason: string,
    attempt: FailedAttempt
  ) => Effect.Effect<void>
  readonly endpointRecovered: (id: EndpointId) => Effect.Effect<void>
  // Records a live endpoint's failure (the reason's first 500 characters); with `disabledReason`, also disables
  // it at `retryAt` with that reason (its first 600 characters).
  readonly endpointFailing: (
    id: EndpointId,
    state: { readonly failingSince: DateTime.Utc; readonly retryAt: DateTime.Utc; readonly reason: string },
    disabledReason: string | undefined
  ) => Effect.Effect<void>
}
export class WebhookStore extends Context.Tag("WebhookStore")<WebhookStore, WebhookStoreShape>() {}

export interface SignedRequest {
  readonly url: string
  readonly secret: string
  readonly id: EventId
  readonly timestamp: number
  readonly body: string
}

// Sends webhooks over HTTP, signed as Standard Webhooks says. `send` starts every request at once and answers
// when each is done: each one's Answer, in order (isDelivered says which succeeded). `check` refuses URLs (and,
// at delivery, resolved addresses) the configuration does not allow.
export interface WebhookSenderShape {
  readonly check: (url: string) => Effect.Effect<void, UrlRefused>
  readonly send: (requests: ReadonlyArray<SignedRequest>) => Effect.Effect<ReadonlyArray<Answer>>
}
export class WebhookSender extends Context.Tag("WebhookSender")<WebhookSender, WebhookSenderShape>() {}

// The event a transfer's state tells of, if any (a pending reservation tells of none).
export const transferEventType = (status: string): EventType | undefined => {
  const type = `transfer.${status}`
  return (eventTypes as ReadonlyArray<string>).includes(type) ? (type as EventType) : undefined
}

// Why an endpoint its owner turned off is disabled.
export const DisabledByOwner = "Disabled by its owner"

// Why an endpoint that kept failing was disabled, as its owner reads it.
export const disabledReason = (failingSince: DateTime.Utc, reason: string) =>
  `Disabled after failing since ${DateTime.formatIso(failingSince)}: ${reason}`
