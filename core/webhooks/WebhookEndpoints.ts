import { DateTime, Effect, Option } from "effect"
import { randomId } from "../shared/RandomId.ts"
import { Tokens } from "../shared/Tokens.ts"
import {
  DisabledByOwner,
  EndpointId,
  EndpointNotFound,
  type EventId,
  EventNotFound,
  type EventType,
  EventTypesRefused,
  type Owner,
  ownerTypes,
  SecretPrefix,
  WebhookSender,
  WebhookStore
} from "./Webhooks.ts"
import { WebhookWorker } from "./WebhookWorker.ts"

// A secret is shown once, when it is made. Signing needs it, so it is kept as it is (a hash would not do).
// The token is base64url of 32 random bytes; Standard Webhooks secrets are standard base64 after `whsec_`.
const toSecret = (token: string) => {
  const base64 = token.replace(/-/g, "+").replace(/_/g, "/")
  return `${SecretPrefix}${base64}${"=".repeat((4 - (base64.length % 4)) % 4)}`
}

export class WebhookEndpoints extends Effect.Service<WebhookEndpoints>()("WebhookEndpoints", {
  effect: Effect.gen(function*() {
    const store = yield* WebhookStore
    const sender = yield* WebhookSender
    const tokens = yield* Tokens
    const worker = yield* WebhookWorker
    const newSecret = Effect.map(tokens.issue, toSecret)

    // `*` stands for every type the owner may receive; any other entry must be one of them.
    const create = (owner: Owner, url: string, enabledEvents: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        const allowed = ownerTypes(owner) as ReadonlyArray<string>
        const foreign = enabledEvents.find((t) => t !== "*" && !allowed.includes(t))
        if (foreign !== undefined || enabledEvents.length === 0) {
          return yield* new EventTypesRefused({ ...(foreign === undefined ? {} : { type: foreign }), allowed })
        }
        yield* sender.check(url)
        const id = EndpointId.make(yield* randomId("we_"))
        const secret = yield* newSecret
        const endpoint = { id, owner, url, enabledEvents, createdAt: yield* DateTime.now }
        yield* store.createEndpoint(endpoint, secret)
        return { endpoint, secret }
      })

    const found = <A>(o: Option.Option<A>) =>
      Option.match(o, { onNone: () => Effect.fail(new EndpointNotFound()), onSome: Effect.succeed })

    return {
      create: (owner: Owner, url: string, enabledEvents: ReadonlyArray<string>) => create(owner, url, enabledEvents),
      allowedTypes: ownerTypes,
      list: store.listEndpoints,
      get: (owner: Owner, id: EndpointId) => Effect.flatMap(store.getEndpoint(owner, id), found),
      remove: (owner: Owner, id: EndpointId) =>
        Effect.flatMap(
          store.deleteEndpoint(owner, id),
          (ok) => (ok ? Effect.void : Effect.fail(new EndpointNotFound()))
        ),
      // The old secret stops signing at once.
      rotate: (owner: Owner, id: EndpointId) =>
        Effect.gen(function*() {
          const secret = yield* newSecret
          if (!(yield* store.setSecret(owner, id, secret))) return yield* new EndpointNotFound()
          return { endpoint: yield* found(yield* store.getEndpoint(owner, id)), secret }
        }),
      // An endpoint its owner disabled gets no deliveries of new events, and its pending ones wait; enabled
      // again, it starts with no failure on record and its pending deliveries go out.
      disable: (owner: Owner, id: EndpointId) =>
        Effect.gen(function*() {
          const disabled = { at: yield* DateTime.now, reason: DisabledByOwner }
          if (!(yield* store.setDisabled(owner, id, disabled))) return yield* new EndpointNotFound()
          return yield* found(yield* store.getEndpoint(owner, id))
        }),
      enable: (owner: Owner, id: EndpointId) =>
        Effect.gen(function*() {
          if (!(yield* store.setDisabled(owner, id, undefined))) return yield* new EndpointNotFound()
          yield* worker.wake
          return yield* found(yield* store.getEndpoint(owner, id))
        }),
      events: (
        owner: Owner,
        query: { readonly type?: EventType; readonly limit: number; readonly startingAfter?: EventId }
      ) => store.listEvents(owner, query),
      // The owner's latest events about a transfer (its own and its refunds'), each with its deliveries.
      eventsAbout: (owner: Owner, subject: string, limit: number) => store.eventsAbout(owner, subject, limit),
      event: (owner: Owner, id: EventId) =>
        Effect.flatMap(
          store.getEvent(owner, id),
          Option.match({
            onNone: () => Effect.fail(new EventNotFound()),
            onSome: Effect.succeed
          })
        ),
      resend: (owner: Owner, event: EventId, endpoint: EndpointId) =>
        Effect.gen(function*() {
          if (Option.isNone(yield* store.getEvent(owner, event))) return yield* new EventNotFound()
          const ok = yield* store.resend(owner, event, endpoint, yield* DateTime.now)
          if (!ok) return yield* new EndpointNotFound()
          yield* worker.wake
        })
    } as const
  })
}) {}
