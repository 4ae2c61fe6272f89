// A separate process for the SQLite multi-process test: opens its own connection to the file given as first
// argument, says "ready", waits for a line on stdin, then subscribes reader0@example.com .. reader<n-1> one
// after another and prints how many of its requests queued a mail. Any storage fault fails the process.
import { DateTime, Effect } from "effect"
import { Email } from "../../core/shared/Email.ts"
import { DefaultFeed } from "../../core/subscriptions/Feed.ts"
import { SubscriberName } from "../../core/subscriptions/Subscription.ts"
import { SubscriptionStore } from "../../core/subscriptions/SubscriptionStore.ts"
import { sqliteStoreOn } from "./TempSqlite.ts"

const [filename, addresses, label] = process.argv.slice(2)

const waitForGo = Effect.async<void>((resume) => {
  process.stdin.once("data", () => resume(Effect.void))
})

const program = Effect.gen(function*() {
  const store = yield* SubscriptionStore
  process.stdout.write("ready\n")
  yield* waitForGo
  let queued = 0
  for (let i = 0; i < Number(addresses); i++) {
    const result = yield* store.subscribe({
      name: SubscriberName.make(`Reader ${label}`),
      email: Email.make(`reader${i}@example.com`),
      feed: DefaultFeed,
      now: DateTime.unsafeMake(Date.now())
    })
    if (result.queued) queued++
  }
  process.stdout.write(`queued ${queued}\n`)
})

Effect.runPromise(Effect.provide(program, sqliteStoreOn(filename!))).then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`${String(error)}\n`)
    process.exit(1)
  }
)
