import type { CurrencySeries, MerchantFigures, NewsletterFigures } from "../../core/console/DailyFigures.ts"
import { formatAmount } from "../../core/payments/Money.ts"
import { type Chart, figure } from "./Charts.ts"
import { consolePage, type SignedIn } from "./ConsolePage.ts"

// The merchant's and the list owner's charts of the last 30 days (UTC), each with its table.

const Blue = "#1f5fa8"
const Green = "#2e7d32"
const Orange = "#b35900"

const percent = (rate: number | undefined) => rate === undefined ? "none" : `${Math.round(rate * 100)}%`
const whole = (n: number) => String(Math.round(n))

const amounts = (id: string, what: string, s: CurrencySeries, color: string, days: MerchantFigures["days"]): Chart => {
  const total = s.amounts.reduce((a, b) => a + b, 0n)
  const count = s.counts.reduce((a, b) => a + b, 0)
  return {
    id: `${id}-${s.currency.toLowerCase()}`,
    title: `${what}, ${s.currency}`,
    summary: `${what} in ${s.currency} per day over the last ${days.length} days: ${
      formatAmount(total, s.currency)
    } ${s.currency} in ${count} in all.`,
    days,
    series: [{
      name: `${what} (${s.currency})`,
      values: s.amounts.map(Number),
      shown: s.amounts.map((a) => formatAmount(a, s.currency)),
      color
    }],
    // The scale's labels in the currency's units, rounded to whole units.
    axis: (v) => formatAmount(BigInt(Math.round(v)), s.currency),
    columns: [
      { name: `Amount (${s.currency})`, cells: s.amounts.map((a) => formatAmount(a, s.currency)) },
      { name: "Count", cells: s.counts.map(String) }
    ]
  }
}

const none = (what: string) => `<p>No ${what} in the last 30 days.</p>`

export const merchantChartsPage = (shown: SignedIn, f: MerchantFigures) => {
  const approved = f.approval.reduce((a, d) => a + d.approved, 0)
  const declined = f.approval.reduce((a, d) => a + d.declined, 0)
  const approval: Chart = {
    id: "approval",
    title: "Approval rate",
    summary:
      `Approved share of the transfers decided each day (approved or declined): ${approved} approved and ${declined} declined in all, ${
        percent(approved + declined === 0 ? undefined : approved / (approved + declined))
      }.`,
    days: f.days,
    series: [{
      name: "Approval rate",
      values: f.approval.map((d) => (d.rate ?? 0) * 100),
      shown: f.approval.map((d) => percent(d.rate)),
      color: Green
    }],
    max: 100,
    axis: (v) => `${whole(v)}%`,
    columns: [
      { name: "Approved", cells: f.approval.map((d) => String(d.approved)) },
      { name: "Declined", cells: f.approval.map((d) => String(d.declined)) },
      { name: "Approval rate", cells: f.approval.map((d) => percent(d.rate)) }
    ]
  }
  return consolePage(
    "Charts",
    `<p>The last 30 days, in UTC, today included. Volume is the amount of approved transfers, refunds not taken
off; the approval rate counts the transfers decided (approved or declined), not those still pending; refunds are
those that succeeded.</p>
${
      f.volume.length === 0
        ? `<h2>Volume</h2>${none("approved transfers")}`
        : f.volume.map((s) => figure(amounts("volume", "Volume", s, Blue, f.days))).join("\n")
    }
${figure(approval)}
${
      f.refunds.length === 0
        ? `<h2>Refunds</h2>${none("refunds")}`
        : f.refunds.map((s) => figure(amounts("refunds", "Refunds", s, Orange, f.days))).join("\n")
    }`,
    { signedIn: shown }
  )
}

export const newsletterChartsPage = (shown: SignedIn, f: NewsletterFigures) => {
  const activity: Chart = {
    id: "signups",
    title: "Signups and confirmations",
    summary:
      `Signups and confirmations per day, all feeds: ${f.signups} signups and ${f.confirmations} confirmations in all.`,
    days: f.days,
    series: [
      {
        name: "Signups",
        values: f.perDay.map((d) => d.signups),
        shown: f.perDay.map((d) => String(d.signups)),
        color: Blue
      },
      {
        name: "Confirmations",
        values: f.perDay.map((d) => d.confirmations),
        shown: f.perDay.map((d) => String(d.confirmations)),
        color: Green
      }
    ],
    axis: whole
  }
  const rates = f.perDay.map((d) => d.rate)
  const rate: Chart = {
    id: "confirmation-rate",
    title: "Confirmation rate",
    summary: `Confirmations of each day divided by its signups: ${percent(f.rate)} over the 30 days.`,
    days: f.days,
    series: [{
      name: "Confirmation rate",
      values: rates.map((r) => (r ?? 0) * 100),
      shown: rates.map(percent),
      color: Green
    }],
    max: Math.max(100, ...rates.map((r) => (r ?? 0) * 100)),
    axis: (v) => `${whole(v)}%`
  }
  return consolePage(
    "Newsletter charts",
    `<p>The last 30 days, in UTC, today included, all feeds. A signup is a new address on a feed (its first
signup); a confirmation is a confirmed subscription; the confirmation rate is a day's confirmations divided by its
signups ("none" on a day without signups), so a day on which earlier signups confirm can pass 100%. Signups never
confirmed are deleted after their confirmation window, and are then no longer counted.</p>
${figure(activity)}
${figure(rate)}`,
    { signedIn: shown }
  )
}
