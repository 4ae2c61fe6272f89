import { DateTime, Effect, Layer, Option } from "effect"
import {
  type EndpointId,
  type EventId,
  KeptAttempts,
  type StoredEvent,
  WebhookStore
} from "../../core/webhooks/Webhooks.ts"
import { atomically, MemoryDatabase, millis, newestFirst } from "./MemoryDatabase.ts"

// The webhook store in memory, over MemoryDatabase's tables: the events the other memory stores write, their
// deliveries, and the endpoints, as the SQL stores keep them.

const eventOf = (e: { id: string; type: string; createdAt: DateTime.Utc; body: string }): StoredEvent => ({
  id: e.id as EventId,
  type: e.type as StoredEvent["type"],
  createdAt: e.createdAt,
  body: e.body
})

export const layer = Layer.effect(
  WebhookStore,
  Effect.gen(function*() {
    const db = yield* MemoryDatabase
    const t = db.tables
    const run = <A>(f: () => A) => atomically(db, Effect.sync(f))
    const endpoint = (owner: string, id: string) => {
      const e = t.endpoints.get(id)
      return e !== undefined && e.owner === owner ? e : undefined
    }
    const shown = ({ retryAt: _r, secret: _s, ...e }: NonNullable<ReturnType<typeof t.endpoints.get>>) => e
    const due = (endpointId: string, now: DateTime.Utc) =>
      [...t.deliveries.values()].filter((d) =>
        d.endpointId === endpointId && d.deliveredAt === undefined && millis(d.nextAttemptAt) <= millis(now)
      ).sort((a, b) => millis(a.nextAttemptAt) - millis(b.nextAttemptAt) || a.id - b.id)

    return WebhookStore.of({
      createEndpoint: (e, secret) =>
        run(() => {
          t.endpoints.set(e.id, {
            ...e,
            secret,
            failingSince: undefined,
            lastError: undefined,
            disabledAt: undefined,
            disabledReason: undefined
          })
        }),
      listEndpoints: (owner) =>
        run(() =>
          [...t.endpoints.values()].filter((e) => e.owner === owner).sort(newestFirst((e) => e.createdAt)).map(shown)
        ),
      getEndpoint: (owner, id) => run(() => Option.map(Option.fromNullable(endpoint(owner, id)), shown)),
      deleteEndpoint: (owner, id) =>
        run(() => {
          if (endpoint(owner, id) === undefined) return false
          t.endpoints.delete(id)
          for (const [k, d] of t.deliveries) if (d.endpointId === id) t.deliveries.delete(k)
          return true
        }),
      setSecret: (owner, id, secret) =>
        run(() => {
          const e = endpoint(owner, id)
          if (e !== undefined) t.endpoints.set(id, { ...e, secret })
          return e !== undefined
        }),
      setDisabled: (owner, id, disabled) =>
        run(() => {
          const e = endpoint(owner, id)
          if (e === undefined) return false
          const { retryAt: _, ...rest } = e
          t.endpoints.set(
            id,
            disabled === undefined
              ? {
                ...rest,
                failingSince: undefined,
                lastError: undefined,
                disabledAt: undefined,
                disabledReason: undefined
              }
              : { ...e, disabledAt: disabled.at, disabledReason: disabled.reason.slice(0, 600) }
          )
          return true
        }),
      listEvents: (owner, query) =>
        run(() => {
          const all = [...t.events.values()].filter((e) => e.owner === owner).sort(newestFirst((e) => e.createdAt))
          const after = all.find((e) => e.id === query.startingAfter)
          const rows = all.filter((e) =>
            (query.type === undefined || e.type === query.type) &&
            (after === undefined || newestFirst<typeof after>((x) => x.createdAt)(after, e) < 0)
          ).slice(0, query.limit + 1)
          return { data: rows.slice(0, query.limit).map(eventOf), hasMore: rows.length > query.limit }
        }),
      getEvent: (owner, id) =>
        run(() =>
          Option.map(Option.fromNullable(t.events.get(id)).pipe(Option.filter((e) => e.owner === owner)), eventOf)
        ),
      eventsAbout: (owner, subject, limit) =>
        run(() =>
          [...t.events.values()].filter((e) => e.owner === owner && e.subject === subject)
            .sort(newestFirst((e) => e.createdAt)).slice(0, limit).map((e) => ({
              event: eventOf(e),
              deliveries: [...t.deliveries.values()].filter((d) => d.eventId === e.id).map((d) => ({
                endpointId: d.endpointId as EndpointId,
                url: t.endpoints.get(d.endpointId)?.url ?? "",
                attempts: d.attempts,
                history: d.history ?? [],
                deliveredAt: d.deliveredAt,
                nextAttemptAt: d.deliveredAt === undefined ? d.nextAttemptAt : undefined,
                lastError: d.lastError
              }))
            }))
        ),
      resend: (owner, event, endpointId, now) =>
        run(() => {
          if (t.events.get(event)?.owner !== owner || endpoint(owner, endpointId) === undefined) return false
          const id = ++t.serials.delivery
          t.deliveries.set(id, { id, eventId: event, endpointId, createdAt: now, nextAttemptAt: now, attempts: 0 })
          return true
        }),
      dueEndpoints: (now, limit) =>
        run(() =>
          [...t.endpoints.values()].filter((e) =>
            e.disabledAt === undefined && (e.retryAt === undefined || millis(e.retryAt) <= millis(now)) &&
            due(e.id, now).length > 0
          ).slice(0, limit).map((e) => e.id)
        ),
      target: (id) =>
        run(() =>
          Option.map(Option.fromNullable(t.endpoints.get(id)), (e) => ({
            url: e.url,
            secret: e.secret,
            failingSince: e.failingSince,
            retryAt: e.retryAt,
            disabled: e.disabledAt !== undefined
          }))
        ),
      claim: (endpointId, now, leaseUntil, limit) =>
        run(() =>
          due(endpointId, now).slice(0, limit).map((d) => {
            t.deliveries.set(d.id, { ...d, nextAttemptAt: leaseUntil })
            return {
              id: d.id,
              eventId: d.eventId as EventId,
              attempts: d.attempts,
              body: t.events.get(d.eventId)!.body
            }
          })
        ),
      delivered: (answers, now) =>
        run(() => {
          for (const { id, status } of answers) {
            const d = t.deliveries.get(id)
            if (d === undefined || d.deliveredAt !== undefined) continue
            const { lastError: _, ...rest } = d
            const attempt = { attempt: d.attempts + 1, at: now, status, failure: undefined }
            t.deliveries.set(id, {
              ...rest,
              deliveredAt: now,
              attempts: attempt.attempt,
              history: [...d.history ?? [], attempt].slice(-KeptAttempts)
            })
          }
        }),
      failed: (id, next, reason, { at, failure, status }) =>
        run(() => {
          const d = t.deliveries.get(id)
          if (d === undefined || d.deliveredAt !== undefined) return
          const attempt = { attempt: d.attempts + 1, at, status, failure }
          t.deliveries.set(id, {
            ...d,
            attempts: attempt.attempt,
            nextAttemptAt: next,
            lastError: reason.slice(0, 500),
            history: [...d.history ?? [], attempt].slice(-KeptAttempts)
          })
        }),
      endpointRecovered: (id) =>
        run(() => {
          const e = t.endpoints.get(id)
          if (e === undefined) return
          const { retryAt: _, ...rest } = e
          t.endpoints.set(id, { ...rest, failingSince: undefined, lastError: undefined })
        }),
      endpointFailing: (id, state, disabledReason) =>
        run(() => {
          const e = t.endpoints.get(id)
          if (e === undefined || e.disabledAt !== undefined) return
          t.endpoints.set(id, {
            ...e,
            failingSince: state.failingSince,
            retryAt: state.retryAt,
            lastError: state.reason.slice(0, 500),
            disabledAt: disabledReason === undefined ? undefined : state.retryAt,
            disabledReason: disabledReason?.slice(0, 600)
          })
        })
    })
  })
)
