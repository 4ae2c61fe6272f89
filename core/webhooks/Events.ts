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

export const newEvent = (id: EventId, type: EventType, owner: Owner, object: unknown, now: DateTime.Utc): NewEvent => ({
  id,
  type,
  owner,
  createdAt: now,
  body: JSON.stringify({ id, type, created: DateTime.formatIso(now), data: { object } })
})

// An endpoint gets the types it named, or every type with `*`.
export const wants = (endpoint: LiveEndpoint, type: EventType): boolean =>
  endpoint.enabledEvents.includes(type) || endpoint.enabledEvents.includes("*")

// The owner's live endpoints that want the event: those that get a delivery of it.
export const recipients = (tx: Pick<EventTx, "liveEndpoints">, event: NewEvent): Effect.Effect<Array<EndpointId>> =>
  Effect.map(
    tx.liveEndpoints(event.owner),
    (endpoints) => endpoints.filter((e) => wants(e, event.type)).map((e) => e.id)
  )

// Writes the event, with a delivery for each of its recipients.
export const emit = (tx: EventTx, event: NewEvent): Effect.Effect<void> =>
  Effect.flatMap(recipients(tx, event), (endpoints) => tx.insertEvent(event, endpoints))
