import { assert, describe, it } from "@effect/vitest"
import { DateTime } from "effect"
import * as fc from "effect/FastCheck"
import {
  ChartDays,
  dayOf,
  lastDays,
  merchantFigures,
  newsletterFigures,
  rate,
  startOfDay
} from "../../../core/console/DailyFigures.ts"
import { CurrencyCode } from "../../../core/payments/Currency.ts"
import { RefundStatus } from "../../../core/payments/Refund.ts"
import { TransferStatus } from "../../../core/payments/Transfer.ts"
import type { DayTotal } from "../../../core/payments/TransferStorage.ts"

const DayMillis = 86_400_000
// Times from 1970 to 2200, in milliseconds.
const instant = fc.integer({ min: 0, max: 7_258_118_400_000 }).map((ms) => DateTime.unsafeMake(ms))
const ms = DateTime.toEpochMillis

// Rows as a store could answer them: days around the window of `now`, a few currencies, every status.
const windowOf = (now: DateTime.Utc) => lastDays(now)
const near = (now: DateTime.Utc) => fc.integer({ min: dayOf(now) - ChartDays - 3, max: dayOf(now) + 3 })
const currency = fc.constantFrom(...["USD", "EUR", "JPY"].map((c) => CurrencyCode.make(c)))
const totals = <S extends string>(now: DateTime.Utc, status: fc.Arbitrary<S>) =>
  fc.array(
    fc.record({
      day: near(now),
      currency,
      status,
      count: fc.integer({ min: 1, max: 1000 }),
      amount: fc.bigInt({ min: 1n, max: 2n ** 62n })
    }),
    { maxLength: 40 }
  ) as fc.Arbitrary<ReadonlyArray<DayTotal<S>>>
const transferStatus = fc.constantFrom(...TransferStatus.literals)
const refundStatus = fc.constantFrom(...RefundStatus.literals)

const merchantCase = instant.chain((now) =>
  fc.tuple(fc.constant(now), totals(now, transferStatus), totals(now, refundStatus))
)
const counts = (now: DateTime.Utc, kinds: fc.Arbitrary<string>) =>
  fc.array(fc.record({ day: near(now), kind: kinds, count: fc.integer({ min: 1, max: 1000 }) }), { maxLength: 40 })
const newsletterCase = instant.chain((now) =>
  fc.tuple(
    fc.constant(now),
    counts(now, fc.constant("signup")) as fc.Arbitrary<ReadonlyArray<{ day: number; kind: "signup"; count: number }>>,
    counts(now, fc.constantFrom("subscription.confirmed", "subscription.unsubscribed"))
  )
)
const inWindow = (now: DateTime.Utc) => {
  const { days } = windowOf(now)
  return (day: number) => day >= days[0]! && day <= days[days.length - 1]!
}
const sum = (xs: ReadonlyArray<bigint>) => xs.reduce((a, b) => a + b, 0n)

describe("lastDays", () => {
  it.prop(
    "is 30 consecutive UTC days ending today, [from, before) holding exactly their instants",
    [instant],
    ([now]) => {
      const { before, days, from } = lastDays(now)
      assert.lengthOf(days, ChartDays)
      days.forEach((d, i) => i > 0 && assert.strictEqual(d, days[i - 1]! + 1))
      assert.strictEqual(days[ChartDays - 1], dayOf(now))
      assert.strictEqual(ms(from) % DayMillis, 0)
      assert.strictEqual(ms(before), ms(startOfDay(dayOf(now) + 1)))
      assert.strictEqual(ms(before) - ms(from), ChartDays * DayMillis)
      assert.isTrue(ms(from) <= ms(now) && ms(now) < ms(before))
      assert.strictEqual(dayOf(from), days[0])
      assert.strictEqual(dayOf(DateTime.unsafeMake(ms(before) - 1)), days[ChartDays - 1])
    }
  )
  it.prop("a day starts at midnight UTC", [instant], ([t]) => {
    assert.strictEqual(DateTime.formatIso(startOfDay(dayOf(t))), `${DateTime.formatIso(t).slice(0, 10)}T00:00:00.000Z`)
  })
})

describe("rate", () => {
  it.prop("is part / whole, and undefined when the whole is 0", [fc.nat(), fc.nat()], ([part, whole]) => {
    const r = rate(part, whole)
    if (whole === 0) assert.isUndefined(r)
    else assert.strictEqual(r, part / whole)
  })
})

describe("merchantFigures", () => {
  it.prop("every series has a value for each of the 30 days, zero where no row", [merchantCase], ([[now, t, r]]) => {
    const f = merchantFigures(windowOf(now).days, t, r)
    assert.lengthOf(f.approval, ChartDays)
    for (const s of [...f.volume, ...f.refunds]) {
      assert.lengthOf(s.amounts, ChartDays)
      assert.lengthOf(s.counts, ChartDays)
    }
  })

  it.prop(
    "volume is the sum of the approved rows of the window, per currency and day",
    [merchantCase],
    ([[now, t, r]]) => {
      const { days } = windowOf(now)
      const f = merchantFigures(days, t, r)
      const within = inWindow(now)
      for (const c of ["USD", "EUR", "JPY"]) {
        const rows = t.filter((x) => x.currency === c && x.status === "approved" && within(x.day))
        const series = f.volume.find((s) => s.currency === c)
        if (rows.length === 0) assert.isUndefined(series)
        else {
          assert.strictEqual(sum(series!.amounts), sum(rows.map((x) => x.amount)))
          days.forEach((d, i) =>
            assert.strictEqual(series!.amounts[i], sum(rows.filter((x) => x.day === d).map((x) => x.amount)))
          )
        }
      }
      assert.deepStrictEqual(f.volume.map((s) => s.currency), [...f.volume.map((s) => s.currency)].sort())
    }
  )

  it.prop("refunds are the succeeded refunds of the window", [merchantCase], ([[now, t, r]]) => {
    const f = merchantFigures(windowOf(now).days, t, r)
    const within = inWindow(now)
    const succeeded = r.filter((x) => x.status === "succeeded" && within(x.day))
    assert.strictEqual(sum(f.refunds.flatMap((s) => s.amounts)), sum(succeeded.map((x) => x.amount)))
    assert.strictEqual(
      f.refunds.flatMap((s) => s.counts).reduce((a, b) => a + b, 0),
      succeeded.reduce((a, x) => a + x.count, 0)
    )
  })

  it.prop(
    "the approval rate is approved / (approved + declined), undefined without either",
    [merchantCase],
    ([[now, t, r]]) => {
      const { days } = windowOf(now)
      const f = merchantFigures(days, t, r)
      days.forEach((d, i) => {
        const of = (s: string) => t.filter((x) => x.day === d && x.status === s).reduce((a, x) => a + x.count, 0)
        const day = f.approval[i]!
        assert.strictEqual(day.approved, of("approved"))
        assert.strictEqual(day.declined, of("declined"))
        if (day.approved + day.declined === 0) assert.isUndefined(day.rate)
        else {
          assert.strictEqual(day.rate, day.approved / (day.approved + day.declined))
          assert.isTrue(day.rate! >= 0 && day.rate! <= 1)
        }
      })
    }
  )
})

describe("newsletterFigures", () => {
  it.prop(
    "counts the window's signups and confirmations per day; the rate is their quotient",
    [newsletterCase],
    ([[now, signups, events]]) => {
      const { days } = windowOf(now)
      const f = newsletterFigures(days, signups, events)
      assert.lengthOf(f.perDay, ChartDays)
      const within = inWindow(now)
      const total = (rows: ReadonlyArray<{ day: number; kind: string; count: number }>, kind: string) =>
        rows.filter((x) => x.kind === kind && within(x.day)).reduce((a, x) => a + x.count, 0)
      assert.strictEqual(f.signups, total(signups, "signup"))
      assert.strictEqual(f.confirmations, total(events, "subscription.confirmed"))
      assert.strictEqual(f.rate, f.signups === 0 ? undefined : f.confirmations / f.signups)
      days.forEach((d, i) => {
        const day = f.perDay[i]!
        assert.strictEqual(day.signups, signups.filter((x) => x.day === d).reduce((a, x) => a + x.count, 0))
        assert.strictEqual(
          day.confirmations,
          events.filter((x) => x.day === d && x.kind === "subscription.confirmed").reduce((a, x) => a + x.count, 0)
        )
        assert.strictEqual(day.rate, day.signups === 0 ? undefined : day.confirmations / day.signups)
      })
    }
  )
})
