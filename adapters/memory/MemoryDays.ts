import type { DateTime } from "effect"
import type { CurrencyCode } from "../../core/payments/Currency.ts"
import type { DayTotal } from "../../core/payments/TransferStorage.ts"
import type { DayCount } from "../../core/subscriptions/SubscriptionStorage.ts"
import { millis } from "./MemoryDatabase.ts"

// The per-day groups the charts read (TransferStorage's transferDays and refundDays, SubscriptionStorage's
// eventDays), over rows in memory, as the databases' GROUP BY makes them.

const DayMillis = 86_400_000
const within = (t: DateTime.Utc, from: DateTime.Utc, before: DateTime.Utc) =>
  millis(t) >= millis(from) && millis(t) < millis(before)
const dayOf = (t: DateTime.Utc) => Math.floor(millis(t) / DayMillis)

export const dayTotals = <S extends string>(
  rows: Iterable<
    { readonly createdAt: DateTime.Utc; readonly currency: CurrencyCode; readonly status: S; readonly amount: bigint }
  >,
  from: DateTime.Utc,
  before: DateTime.Utc
): ReadonlyArray<DayTotal<S>> => {
  const groups = new Map<string, { -readonly [K in keyof DayTotal<S>]: DayTotal<S>[K] }>()
  for (const row of rows) {
    if (!within(row.createdAt, from, before)) continue
    const day = dayOf(row.createdAt)
    const key = `${day} ${row.currency} ${row.status}`
    const group = groups.get(key)
    if (group === undefined) {
      groups.set(key, { day, currency: row.currency, status: row.status, count: 1, amount: row.amount })
    } else {
      group.count += 1
      group.amount += row.amount
    }
  }
  return [...groups.values()]
}

export const dayCounts = <K extends string>(
  rows: Iterable<{ readonly createdAt: DateTime.Utc; readonly kind: K }>,
  from: DateTime.Utc,
  before: DateTime.Utc
): ReadonlyArray<DayCount<K>> => {
  const groups = new Map<string, { day: number; kind: K; count: number }>()
  for (const row of rows) {
    if (!within(row.createdAt, from, before)) continue
    const day = dayOf(row.createdAt)
    const key = `${day} ${row.kind}`
    const group = groups.get(key)
    if (group === undefined) groups.set(key, { day, kind: row.kind, count: 1 })
    else group.count += 1
  }
  return [...groups.values()]
}
