// The list owner's chart against the pending purge: a signup never confirmed is deleted after its window, and its
// day keeps it. Over the in-memory storage, the TestClock's time, the purge as the app runs it.
import { assert, describe, it } from "@effect/vitest"
import { DateTime, Duration, Effect, Layer, TestClock } from "effect"
import { Charts } from "../../../core/console/Charts.ts"
import { ChartDays, dayOf } from "../../../core/console/DailyFigures.ts"
import { PendingPurge, PendingPurgeSettings } from "../../../core/subscriptions/PendingPurge.ts"
import { claimAndIssueTokens, confirm, signUp } from "../../support/Signups.ts"
import { memoryWorld } from "../usecases/MemoryWorld.ts"

const T0 = Date.UTC(2025, 0, 15, 12, 0, 0)
const Ttl = Duration.days(7)

const world = () =>
  Layer.mergeAll(Charts.Default, PendingPurge.Default).pipe(
    Layer.provide(Layer.succeed(PendingPurgeSettings, { ttl: Ttl, interval: Duration.hours(1) })),
    Layer.provideMerge(memoryWorld())
  )

// What the outbox worker and the subscriber's click do: the mail's tokens stored, the confirm link used.
const confirmAll = Effect.flatMap(claimAndIssueTokens(100), (due) => Effect.forEach(due, confirm, { discard: true }))

describe("the list owner's chart", () => {
  it.effect("keeps the signups of a day after the purge deleted those never confirmed", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(T0)
      const charts = yield* Charts
      const purge = yield* PendingPurge
      // Day 0: two signups, one confirmed. Day 2: three more, none confirmed.
      yield* signUp(1)
      yield* confirmAll
      yield* signUp(2)
      yield* TestClock.adjust(Duration.days(2))
      for (const i of [3, 4, 5]) yield* signUp(i)
      // Before the purge, the last day of the chart is today (day 2).
      const before = yield* charts.newsletter
      const today = dayOf(DateTime.unsafeMake(T0)) + 2
      const at = (figures: typeof before, day: number) => figures.perDay[figures.days.indexOf(day)]!
      assert.deepStrictEqual(at(before, today - 2), { signups: 2, confirmations: 1, rate: 0.5 })
      assert.deepStrictEqual(at(before, today), { signups: 3, confirmations: 0, rate: 0 })

      // Ten days on, the four signups never confirmed are gone.
      yield* TestClock.adjust(Duration.days(10))
      assert.strictEqual(yield* purge.purgeExpired, 4)
      const after = yield* charts.newsletter
      assert.strictEqual(after.days.length, ChartDays)
      assert.deepStrictEqual(at(after, today - 2), { signups: 2, confirmations: 1, rate: 0.5 })
      assert.deepStrictEqual(at(after, today), { signups: 3, confirmations: 0, rate: 0 })
      assert.strictEqual(after.signups, 5)
      assert.strictEqual(after.confirmations, 1)
    }).pipe(Effect.provide(world())))
})
