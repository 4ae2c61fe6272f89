// Property tests of the subscription use cases (Subscriptions, the OutboxWorker's passes, the pending purge)
// over the in-memory storage adapter: random sequences of signups (and signups again, which resend), mail
// deliveries, confirmations and unsubscriptions through the mailed links, purges and the passing of time, with
// bursts of concurrent signups interleaved by fast-check's scheduler at every storage operation.
import { assert, describe, it } from "@effect/vitest"
import { DateTime, Duration, Effect, Either, Layer, Logger, LogLevel, TestClock, TestContext } from "effect"
import * as fc from "effect/FastCheck"
import { Email } from "../../../core/shared/Email.ts"
import { SiteSettings } from "../../../core/shared/SiteSettings.ts"
import { Tokens } from "../../../core/shared/Tokens.ts"
import { DefaultFeed } from "../../../core/subscriptions/Feed.ts"
import { type Mail, Mailer, type MailOutcome } from "../../../core/subscriptions/Mailer.ts"
import { OutboxWorker } from "../../../core/subscriptions/OutboxWorker.ts"
import { SubscriberName } from "../../../core/subscriptions/Subscription.ts"
import { SubscribeRequest, Subscriptions } from "../../../core/subscriptions/Subscriptions.ts"
import { SubscriptionStore } from "../../../core/subscriptions/SubscriptionStore.ts"
import { ConfirmTokenTtl, Token, TokenHash } from "../../../core/subscriptions/Token.ts"
import { memoryWorld } from "./MemoryWorld.ts"

type Op =
  | { readonly _tag: "subscribe"; readonly who: number; readonly upper: boolean }
  | { readonly _tag: "burst"; readonly who: number; readonly n: number }
  | { readonly _tag: "deliver" }
  | { readonly _tag: "confirm"; readonly mail: number }
  | { readonly _tag: "unsubscribe"; readonly mail: number }
  | { readonly _tag: "purge" }
  | { readonly _tag: "wait"; readonly hours: number }

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ _tag: fc.constant("subscribe" as const), who: fc.integer({ min: 0, max: 3 }), upper: fc.boolean() }),
  fc.record({
    _tag: fc.constant("burst" as const),
    who: fc.integer({ min: 0, max: 3 }),
    n: fc.integer({ min: 2, max: 5 })
  }),
  fc.constant({ _tag: "deliver" as const }),
  fc.record({ _tag: fc.constant("confirm" as const), mail: fc.nat() }),
  fc.record({ _tag: fc.constant("unsubscribe" as const), mail: fc.nat() }),
  fc.constant({ _tag: "purge" as const }),
  fc.record({ _tag: fc.constant("wait" as const), hours: fc.integer({ min: 1, max: 60 }) })
)

const address = (who: number, upper = false) =>
  Email.make(upper ? `Person${who}@Example.com` : `person${who}@example.com`)
const PendingTtl = Duration.days(7)

// Tokens from a counter: 43 characters, as real ones; hashed by a prefix.
const countingTokens = Layer.effect(
  Tokens,
  Effect.sync(() => {
    let n = 0
    const issue = () => Token.make(String(++n).padStart(43, "t"))
    return {
      issue: Effect.sync(issue),
      issueMany: (count: number) => Effect.sync(() => Array.from({ length: count }, issue)),
      hash: (secret: string) => TokenHash.make(`h-${secret}`)
    }
  })
)

interface Sent {
  readonly mail: Mail
  readonly at: number
  readonly confirm: Token
  readonly unsubscribe: Token
}
const tokenIn = (text: string, path: string) =>
  Token.make(new RegExp(`${path}\\?token=([A-Za-z0-9_-]{43})`).exec(text)![1]!)

describe("Subscriptions over the in-memory store", () => {
  it(
    "keeps one row per address, mails every signup, and uses each confirmation link once, before it expires",
    () =>
      fc.assert(
        fc.asyncProperty(fc.scheduler(), fc.array(op, { minLength: 1, maxLength: 25 }), async (s, ops) => {
          const sent: Array<Sent> = []
          const recording = Layer.succeed(Mailer, {
            sendAll: (mails: ReadonlyArray<Mail>, report: (outcome: MailOutcome) => void) =>
              Effect.map(DateTime.now, (now) =>
                mails.forEach((mail, index) => {
                  sent.push({
                    mail,
                    at: DateTime.toEpochMillis(now),
                    confirm: tokenIn(mail.text, "/subscribe/confirm"),
                    unsubscribe: tokenIn(mail.text, "/unsubscribe")
                  })
                  report({ index })
                }))
          })
          const turn = Effect.promise(() => s.schedule(Promise.resolve()))
          const program = Effect.gen(function*() {
            const subscriptions = yield* Subscriptions
            const outbox = yield* OutboxWorker
            const store = yield* SubscriptionStore
            const subscribe = (who: number, upper = false) =>
              subscriptions.subscribe(
                new SubscribeRequest({
                  name: SubscriberName.make(`Person ${who}`),
                  email: address(who, upper),
                  feed: DefaultFeed
                })
              )
            const confirmed = new Set<string>()
            const now = Effect.map(DateTime.now, DateTime.toEpochMillis)
            for (const o of ops) {
              switch (o._tag) {
                case "subscribe":
                  yield* subscribe(o.who, o.upper)
                  break
                case "burst":
                  yield* Effect.all(Array.from({ length: o.n }, () => subscribe(o.who)), { concurrency: "unbounded" })
                  break
                case "deliver":
                  yield* outbox.deliverDue
                  break
                case "confirm": {
                  if (sent.length === 0) break
                  const mail = sent[o.mail % sent.length]!
                  const result = yield* Effect.either(subscriptions.confirm(mail.confirm))
                  if (Either.isRight(result)) {
                    // Single use, and only before it expires.
                    assert.isFalse(confirmed.has(mail.confirm), "a confirmation link worked twice")
                    assert.isBelow(yield* now, mail.at + Duration.toMillis(ConfirmTokenTtl), "an expired link worked")
                    assert.strictEqual(result.right.status, "active")
                    confirmed.add(mail.confirm)
                  }
                  break
                }
                case "unsubscribe": {
                  if (sent.length === 0) break
                  const mail = sent[o.mail % sent.length]!
                  const result = yield* Effect.either(subscriptions.unsubscribe(mail.unsubscribe))
                  if (Either.isRight(result)) assert.strictEqual(result.right.status, "unsubscribed")
                  break
                }
                case "purge":
                  yield* store.purgePending(DateTime.subtractDuration(yield* DateTime.now, PendingTtl), 100)
                  break
                case "wait":
                  yield* TestClock.adjust(Duration.hours(o.hours))
                  break
              }
            }
            // The outbox drains: every row due is sent, leases included.
            for (let pass = 0; pass < 5; pass++) {
              yield* TestClock.adjust(Duration.minutes(2))
              yield* outbox.deliverDue
            }
            const all = yield* store.listSubscriptions({ limit: 1000 })
            const keys = all.map((x) => `${x.email.toLowerCase()} ${x.feed}`)
            assert.strictEqual(new Set(keys).size, keys.length, "one row per address and feed")
            for (const x of all) {
              if (x.status !== "pending") continue
              assert.isTrue(
                sent.some((m) => m.mail.to.address.toLowerCase() === x.email.toLowerCase()),
                `pending ${x.email} never got its mail`
              )
            }
          }).pipe(
            Effect.provide(Subscriptions.Default.pipe(
              Layer.provideMerge(OutboxWorker.Default),
              Layer.provideMerge(memoryWorld(turn)),
              Layer.provide(
                Layer.mergeAll(recording, countingTokens, Layer.succeed(SiteSettings, { baseUrl: "http://test" }))
              )
            )),
            Effect.provide(TestContext.TestContext),
            Logger.withMinimumLogLevel(LogLevel.None)
          )
          await s.waitFor(Effect.runPromise(program))
        }),
        { numRuns: 150 }
      ),
    120_000
  )
})
