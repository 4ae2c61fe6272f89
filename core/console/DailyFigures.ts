import type { DateTime } from "effect"
import type { CurrencyCode } from "../payments/Currency.ts"
import type { RefundStatus } from "../payments/Refund.ts"
import type { TransferStatus } from "../payments/Transfer.ts"
import type { DayTotal } from "../payments/TransferStorage.ts"
import { type Day, dayOf, startOfDay } from "../shared/Day.ts"
import type { DayCount } from "../subscriptions/SubscriptionStorage.ts"

// What the console's charts show, decided from the stores' per-day counts: which days, what "volume",
// "approved" and "confirmation rate" mean. The stores only group and count.

export const ChartDays = 30

export { type Day, dayOf, startOfDay }

// The last `count` UTC days, today the last: the range [from, before) the stores are asked for.
export interface DayRange {
  readonly days: ReadonlyArray<Day>
  readonly from: DateTime.Utc
  readonly before: DateTime.Utc
}
export const lastDays = (now: DateTime.Utc, count: number = ChartDays): DayRange => {
  const today = dayOf(now)
  const days = Array.from({ length: count }, (_, i) => today - count + 1 + i)
  return { days, from: startOfDay(days[0]!), before: startOfDay(today + 1) }
}

// A share, or undefined when there is nothing to share out (no decided transfer, no signup that day).
export const rate = (part: number, whole: number): number | undefined => whole === 0 ? undefined : part / whole

// Each currency's amounts, one a day (zero where nothing), currencies in code order.
export interface CurrencySeries {
  readonly currency: CurrencyCode
  readonly amounts: ReadonlyArray<bigint>
  readonly counts: ReadonlyArray<number>
}

const perCurrency = <S extends string>(
  days: ReadonlyArray<Day>,
  rows: ReadonlyArray<DayTotal<S>>,
  counted: (status: S) => boolean
): ReadonlyArray<CurrencySeries> => {
  const index = new Map(days.map((d, i) => [d, i]))
  const series = new Map<CurrencyCode, { amounts: Array<bigint>; counts: Array<number> }>()
  for (const row of rows) {
    const i = index.get(row.day)
    if (i === undefined || !counted(row.status)) continue
    let s = series.get(row.currency)
    if (s === undefined) {
      s = { amounts: days.map(() => 0n), counts: days.map(() => 0) }
      series.set(row.currency, s)
    }
    s.amounts[i]! += row.amount
    s.counts[i]! += row.count
  }
  return [...series].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([currency, s]) => ({ currency, ...s }))
}

export interface ApprovalDay {
  readonly approved: number
  readonly declined: number
  // approved / (approved + declined): transfers still pending or unknown are not decided yet.
  readonly rate: number | undefined
}

export interface MerchantFigures {
  readonly days: ReadonlyArray<Day>
  // Approved transfers' amounts (refunds not taken off).
  readonly volume: ReadonlyArray<CurrencySeries>
  readonly approval: ReadonlyArray<ApprovalDay>
  // Succeeded refunds' amounts.
  readonly refunds: ReadonlyArray<CurrencySeries>
}

export const merchantFigures = (
  days: ReadonlyArray<Day>,
  transfers: ReadonlyArray<DayTotal<TransferStatus>>,
  refunds: ReadonlyArray<DayTotal<RefundStatus>>
): MerchantFigures => {
  const index = new Map(days.map((d, i) => [d, i]))
  const approved = days.map(() => 0)
  const declined = days.map(() => 0)
  for (const row of transfers) {
    const i = index.get(row.day)
    if (i === undefined) continue
    if (row.status === "approved") approved[i]! += row.count
    if (row.status === "declined") declined[i]! += row.count
  }
  return {
    days,
    volume: perCurrency(days, transfers, (s) => s === "approved"),
    approval: days.map((_, i) => ({
      approved: approved[i]!,
      declined: declined[i]!,
      rate: rate(approved[i]!, approved[i]! + declined[i]!)
    })),
    refunds: perCurrency(days, refunds, (s) => s === "succeeded")
  }
}

export interface NewsletterDay {
  readonly signups: number
  readonly confirmations: number
  // confirmations / signups of the day: above 1 when earlier signups confirm that day.
  readonly rate: number | undefined
}

export interface NewsletterFigures {
  readonly days: ReadonlyArray<Day>
  readonly perDay: ReadonlyArray<NewsletterDay>
  readonly signups: number
  readonly confirmations: number
  readonly rate: number | undefined
}

// Signups are those counted that day (decideSubscribe says what is one); confirmations, the
// `subscription.confirmed` events of that day.
export const newsletterFigures = (
  days: ReadonlyArray<Day>,
  signups: ReadonlyArray<DayCount<"signup">>,
  events: ReadonlyArray<DayCount>
): NewsletterFigures => {
  const countOf = (rows: ReadonlyArray<DayCount>, kind: string) => {
    const byDay = new Map<Day, number>()
    for (const row of rows) if (row.kind === kind) byDay.set(row.day, (byDay.get(row.day) ?? 0) + row.count)
    return days.map((d) => byDay.get(d) ?? 0)
  }
  const made = countOf(signups, "signup")
  const confirmed = countOf(events, "subscription.confirmed")
  const total = (xs: ReadonlyArray<number>) => xs.reduce((a, b) => a + b, 0)
  return {
    days,
    perDay: days.map((_, i) => ({
      signups: made[i]!,
      confirmations: confirmed[i]!,
      rate: rate(confirmed[i]!, made[i]!)
    })),
    signups: total(made),
    confirmations: total(confirmed),
    rate: rate(total(confirmed), total(made))
  }
}
