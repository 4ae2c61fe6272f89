import { DateTime, Duration, Effect, Option, Queue, Random, Schedule } from "effect"
import { retryDelay, RetryPolicy } from "./Backoff.ts"
import { confirmationMail } from "./ConfirmationMail.ts"
import { Mailer } from "./Mailer.ts"
import { SiteSettings } from "./SiteSettings.ts"
import { type OutboxEntry, SubscriptionStore } from "./SubscriptionStore.ts"
import { ConfirmTokenTtl } from "./Token.ts"
import { Tokens } from "./Tokens.ts"

// A claimed row is leased: if this process dies while sending, the row is due again once the lease ends,
// and another worker (or this one after restart) sends it. Every claimed row starts sending at once
// (the batch is as large as the concurrency), so the lease only has to outlast one send, which the SMTP
// adapter bounds at 25 s.
export const Lease = Duration.seconds(60)
const BatchSize = 4
const PollInterval = Duration.seconds(1)

export class OutboxWorker extends Effect.Service<OutboxWorker>()("OutboxWorker", {
  effect: Effect.gen(function*() {
    const store = yield* SubscriptionStore
    const mailer = yield* Mailer
    const tokens = yield* Tokens
    const site = yield* SiteSettings
    const wakeUps = yield* Queue.sliding<void>(1)

    const failed = (entry: OutboxEntry, reason: string, permanent: boolean) =>
      Effect.gen(function*() {
        const attempts = entry.attempts + 1
        const giveUp = permanent || attempts >= RetryPolicy.maxAttempts
        const delay = retryDelay(attempts, yield* Random.next)
        const next = giveUp ? undefined : DateTime.addDuration(yield* DateTime.now, delay)
        yield* store.markFailed(entry.id, next, reason)
        yield* Effect.logWarning("confirmation mail not delivered", { outbox: entry.id, attempts, reason, giveUp })
      })

    const deliver = (entry: OutboxEntry) =>
      Effect.gen(function*() {
        const now = yield* DateTime.now
        const confirmToken = yield* tokens.issue
        const unsubscribeToken = yield* tokens.issue
        const issued = {
          confirm: { hash: tokens.hash(confirmToken), expiresAt: DateTime.addDuration(now, ConfirmTokenTtl) },
          unsubscribe: { hash: tokens.hash(unsubscribeToken) }
        }
        const subscription = yield* store.prepareConfirmation(entry, issued, now)
        if (Option.isNone(subscription)) return yield* store.markSent(entry.id, now)
        const feed = yield* store.findFeed(subscription.value.feed)
        const mail = confirmationMail({
          baseUrl: site.baseUrl,
          subscription: subscription.value,
          feedTitle: Option.match(feed, { onNone: () => subscription.value.feed, onSome: (f) => f.title }),
          confirmToken,
          unsubscribeToken
        })
        yield* mailer.send(mail).pipe(
          Effect.matchEffect({
            onSuccess: () => Effect.flatMap(DateTime.now, (sentAt) => store.markSent(entry.id, sentAt)),
            onFailure: (e) => failed(entry, e.reason, e.permanent)
          })
        )
      })

    // One pass over what is due; answers how many rows it took.
    const deliverDue = Effect.gen(function*() {
      const now = yield* DateTime.now
      const due = yield* store.claimDue(now, DateTime.addDuration(now, Lease), BatchSize)
      yield* Effect.forEach(due, deliver, { concurrency: BatchSize, discard: true })
      return due.length
    })

    const waitForWork = Effect.raceFirst(Queue.take(wakeUps), Effect.sleep(PollInterval))

    const run = deliverDue.pipe(
      Effect.flatMap((taken) => (taken === BatchSize ? Effect.void : waitForWork)),
      Effect.catchAllCause((cause) => Effect.logError("outbox pass failed", cause)),
      Effect.repeat(Schedule.forever),
      Effect.asVoid
    )

    return { deliverDue, run, wake: Queue.offer(wakeUps, undefined).pipe(Effect.asVoid) } as const
  })
}) {}
