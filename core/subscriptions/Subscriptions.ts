import { DateTime, Effect, Option, Random, Schema } from "effect"
import { Email } from "../shared/Email.ts"
import { Tokens } from "../shared/Tokens.ts"
import { FeedNotFound, SubscriptionNotFound } from "./Errors.ts"
import { DefaultFeed, FeedName } from "./Feed.ts"
import { OutboxWorker } from "./OutboxWorker.ts"
import { Event, SubscriberName, SubscriptionId } from "./Subscription.ts"
import { SubscriptionStore } from "./SubscriptionStore.ts"
import type { Token } from "./Token.ts"

export const HoneypotField = "website"

export class SubscribeRequest extends Schema.Class<SubscribeRequest>("SubscribeRequest")({
  name: SubscriberName,
  email: Email,
  feed: Schema.optionalWith(FeedName, { default: () => DefaultFeed }),
  // Hidden in the signup form; people leave it empty, form-filling bots do not.
  [HoneypotField]: Schema.optional(Schema.String)
}) {}

export class SubscriptionReceipt extends Schema.Class<SubscriptionReceipt>("SubscriptionReceipt")({
  id: SubscriptionId,
  name: SubscriberName,
  email: Email,
  feed: FeedName
}) {}

export class Subscriptions extends Effect.Service<Subscriptions>()("Subscriptions", {
  effect: Effect.gen(function*() {
    const store = yield* SubscriptionStore
    const tokens = yield* Tokens
    const outbox = yield* OutboxWorker

    // The receipt shows what was submitted, whether the address was new, pending or already active: the
    // answer must not tell a stranger which addresses are subscribed.
    const subscribe = (request: SubscribeRequest) =>
      Effect.gen(function*() {
        const feed = yield* store.findFeed(request.feed)
        if (Option.isNone(feed)) return yield* new FeedNotFound({ feed: request.feed })
        // Made of the decoded request and a stored id: valid already, not checked again.
        const receipt = (id: SubscriptionId) =>
          new SubscriptionReceipt({ id, name: request.name, email: request.email, feed: request.feed }, true)
        if (request[HoneypotField]) {
          return receipt(SubscriptionId.make(yield* Random.nextIntBetween(1, 2 ** 31)))
        }
        const { subscription, queued } = yield* store.subscribe({
          name: request.name,
          email: request.email,
          feed: request.feed,
          now: yield* DateTime.now
        })
        if (queued) yield* outbox.wake
        return receipt(subscription.id)
      })

    const byToken = (token: Token, purpose: "confirm" | "unsubscribe") =>
      Effect.flatMap(DateTime.now, (now) => store.findByToken(tokens.hash(token), purpose, now))

    const redeem = (token: Token, purpose: "confirm" | "unsubscribe", event: Event) =>
      Effect.flatMap(DateTime.now, (now) => store.redeemToken(tokens.hash(token), purpose, event, now))

    const feed = (name: FeedName) =>
      Effect.flatMap(
        store.findFeed(name),
        Option.match({
          onNone: () => Effect.fail(new FeedNotFound({ feed: name })),
          onSome: Effect.succeed
        })
      )

    return {
      feeds: store.listFeeds,
      feed,
      putFeed: (name: FeedName, title: string) =>
        Effect.flatMap(DateTime.now, (now) => store.putFeed(name, title, now)),
      deleteFeed: (name: FeedName) =>
        Effect.flatMap(DateTime.now, (now) => store.deleteFeed(name, now)).pipe(
          Effect.flatMap((deleted) => deleted ? Effect.void : Effect.fail(new FeedNotFound({ feed: name })))
        ),
      subscribe,
      pendingConfirmation: (token: Token) => byToken(token, "confirm"),
      pendingUnsubscribe: (token: Token) => byToken(token, "unsubscribe"),
      confirm: (token: Token) => redeem(token, "confirm", Event.Confirm()),
      unsubscribe: (token: Token) => redeem(token, "unsubscribe", Event.Unsubscribe()),
      get: (id: SubscriptionId) =>
        Effect.flatMap(
          store.get(id),
          Option.match({
            onNone: () => Effect.fail(new SubscriptionNotFound({ id })),
            onSome: Effect.succeed
          })
        )
    } as const
  })
}) {}
