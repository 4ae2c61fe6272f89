import { DateTime, Effect } from "effect"
import type { EndpointId, EventId, EventType, Owner } from "./Webhooks.ts"

// An event as a change makes it, in the transaction of that change: `body` is the exact JSON every delivery
// of it sends (and signs).
export interface NewEvent {
  readonly id: EventId
  readonly type: EventType
  readonly owner: Owner
  readonly createdAt: DateTime.Utc
  readonly body: string
  // What the event is about, for finding it again (a transfer's events, its refunds' included); none for events
  // no page lists by subject.
  readonly subject: string | undefined
}

// An endpoint of the owner that is not disabled, with the types it asked for.
export interface LiveEndpoint {
  readonly id: EndpointId
  readonly enabledEvents: ReadonlyArray<string>
}

// What the transfer and subscription stores' transactions offer for events: the owner's live endpoints read,
// and the event written with one delivery, due at once, for each endpoint core chose.
export interface EventTx {
  readonly liveEndpoints: (owner: Owner) => Effect.Effect<ReadonlyArray<LiveEndpoint>>
  readonly insertEvent: (event: NewEvent, endpoints: ReadonlyArray<EndpointId>) => Effect.Effect<void>
}

export const newEvent = (
  id: EventId,
  type: EventType,
  owner: Owner,
  object: unknown,
  now: DateTime.Utc,
  subject?: string
): NewEvent => ({
  id,
  type,
  owner,
  createdAt: now,
  body: JSON.stringify({ id, type, created: DateTime.formatIso(now), data: { object } }),
  subject
})

// Who gets an event: the owner's live endpoints that enabled any of `anyOf`, its own type or every type (`*`).
// Core decides it once, as data; a database that writes the event in one statement selects those endpoints with
// it (a set overlap), and core's own reading below filters with the same rule.
export interface Audience {
  readonly owner: Owner
  readonly anyOf: ReadonlyArray<string>
}
export const audienceOf = (event: NewEvent): Audience => ({ owner: event.owner, anyOf: [event.type, "*"] })

// The owner's live endpoints in the audience: those that get a delivery of the event.
const recipients = (tx: Pick<EventTx, "liveEndpoints">, audience: Audience): Effect.Effect<Array<EndpointId>> =>
  Effect.map(
    tx.liveEndpoints(audience.owner),
    (endpoints) =>
      endpoints.filter((e) => e.enabledEvents.some((type) => audience.anyOf.includes(type))).map((e) => e.id)
  )

// Writes the event, with a delivery for each of its recipients (its audience as audienceOf makes it, unless given).
export const emit = (tx: EventTx, event: NewEvent, audience = audienceOf(event)): Effect.Effect<void> =>
  Effect.flatMap(recipients(tx, audience), (endpoints) => tx.insertEvent(event, endpoints))
