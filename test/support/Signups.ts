// Signups as a test plays them through the subscription store: person i signs up at the clock's time; the
// outbox worker's part (due mails claimed, their tokens stored) and the subscriber's click on the confirm link.
import { DateTime, Duration, Effect } from "effect"
import { Email } from "../../core/shared/Email.ts"
import { DefaultFeed } from "../../core/subscriptions/Feed.ts"
import { Event, SubscriberName } from "../../core/subscriptions/Subscription.ts"
import { type OutboxEntry, SubscriptionStore } from "../../core/subscriptions/SubscriptionStore.ts"
import { ConfirmTokenTtl, TokenHash } from "../../core/subscriptions/Token.ts"

export const person = (i: number) => ({
  name: SubscriberName.make(`Person ${i}`),
  email: Email.make(`person${i}@example.com`),
  feed: DefaultFeed
})

export const signUp = (i: number) =>
  Effect.flatMap(
    SubscriptionStore,
    (store) => Effect.flatMap(DateTime.now, (now) => store.subscribe({ ...person(i), now }))
  )

const confirmHash = (entry: OutboxEntry) => TokenHash.make(`c${entry.id}`)

// The worker's part: up to `limit` due mails claimed and their tokens stored (the mails themselves not sent).
export const claimAndIssueTokens = (limit: number) =>
  Effect.gen(function*() {
    const store = yield* SubscriptionStore
    const now = yield* DateTime.now
    const due = yield* store.claimDue(now, DateTime.addDuration(now, Duration.seconds(30)), limit)
    yield* store.prepareConfirmations(
      due.map((entry) => ({
        entry,
        tokens: {
          confirm: { hash: confirmHash(entry), expiresAt: DateTime.addDuration(now, ConfirmTokenTtl) },
          unsubscribe: { hash: TokenHash.make(`u${entry.id}`) }
        }
      })),
      now
    )
    return due
  })

// The subscriber's click on the confirm link of `entry`'s mail.
export const confirm = (entry: OutboxEntry) =>
  Effect.flatMap(
    SubscriptionStore,
    (store) =>
      Effect.flatMap(DateTime.now, (now) => store.redeemToken(confirmHash(entry), "confirm", Event.Confirm(), now))
  )
