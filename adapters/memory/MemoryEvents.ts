import type { EventTx } from "../../core/webhooks/Events.ts"
import type { EndpointId } from "../../core/webhooks/Webhooks.ts"
import type { Statements } from "./MemoryDatabase.ts"

// Events and their deliveries, written in the transaction of the change they tell of.
export const memoryEventStatements: Statements<EventTx> = {
  liveEndpoints: (t, owner) =>
    [...t.endpoints.values()].filter((e) => e.owner === owner && e.disabledAt === undefined)
      .map((e) => ({ id: e.id as EndpointId, enabledEvents: e.enabledEvents })),
  insertEvent: (t, event, endpoints) => {
    if (t.events.has(event.id)) throw new Error(`event ${event.id} exists`)
    t.events.set(event.id, event)
    for (const endpointId of endpoints) {
      const id = ++t.serials.delivery
      t.deliveries.set(id, {
        id,
        eventId: event.id,
        endpointId,
        createdAt: event.createdAt,
        nextAttemptAt: event.createdAt,
        attempts: 0
      })
    }
  }
}
