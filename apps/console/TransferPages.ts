import { holdsCardData } from "../../core/payments/Card.ts"
import { formatAmount } from "../../core/payments/Money.ts"
import type { Refund } from "../../core/payments/Refund.ts"
import { type Transfer, TransferStatus } from "../../core/payments/Transfer.ts"
import { escapeHtml as escape } from "../../core/subscriptions/ConfirmationMail.ts"
import { consolePage, csrfField, type SignedIn, time } from "./ConsolePage.ts"

// The merchant's transfers: a list to filter and page through, and a page per transfer with what the API shows
// of it (the card's brand, last four and expiry, never more) and its refunds.
export interface TransferFilters {
  readonly status?: TransferStatus | undefined
  readonly reference?: string | undefined
  // Days (YYYY-MM-DD, UTC), both included.
  readonly from?: string | undefined
  readonly to?: string | undefined
}

const amount = (minor: bigint, t: { readonly currency: Transfer["currency"] }) => formatAmount(minor, t.currency)
export const transferHref = (t: Transfer) => `/console/transfers/${encodeURIComponent(t.id)}`

export const listHref = (filters: TransferFilters, after?: string) => {
  const query = new URLSearchParams()
  if (filters.status !== undefined) query.set("status", filters.status)
  if (filters.reference !== undefined && filters.reference !== "") query.set("reference", filters.reference)
  if (filters.from !== undefined) query.set("from", filters.from)
  if (filters.to !== undefined) query.set("to", filters.to)
  if (after !== undefined) query.set("after", after)
  const text = query.toString()
  return text === "" ? "/console/transfers" : `/console/transfers?${text}`
}

const filterForm = (filters: TransferFilters) =>
  `<form class="filters" method="get" action="/console/transfers" role="search">
<div><label for="status">Status</label>
<select id="status" name="status"><option value="">Any</option>${
    TransferStatus.literals.map((s) => `<option value="${s}"${filters.status === s ? " selected" : ""}>${s}</option>`)
      .join("")
  }</select></div>
<div><label for="reference">Reference</label>
<input id="reference" name="reference" value="${escape(filters.reference ?? "")}" maxlength="255"></div>
<div><label for="from">From</label>
<input id="from" name="from" type="date" value="${escape(filters.from ?? "")}" aria-describedby="dates-utc"></div>
<div><label for="to">To</label>
<input id="to" name="to" type="date" value="${escape(filters.to ?? "")}" aria-describedby="dates-utc"></div>
<p id="dates-utc">Days in UTC, both included.</p>
<div><button type="submit">Search</button></div>
</form>`

export const transfersPage = (
  signedIn: SignedIn,
  page: {
    readonly transfers: ReadonlyArray<Transfer>
    readonly filters: TransferFilters
    readonly paged: boolean
    readonly nextAfter: string | undefined
  }
) =>
  consolePage(
    "Transfers",
    `${filterForm(page.filters)}
${
      page.transfers.length === 0
        ? "<p>No transfers here.</p>"
        : `<table><caption>Transfers, newest first</caption>
<thead><tr><th scope="col">Reference</th><th scope="col">Amount</th><th scope="col">Currency</th><th scope="col">Status</th><th scope="col">Time</th></tr></thead>
<tbody>
${
          page.transfers.map((t) =>
            `<tr><td><a href="${transferHref(t)}">${escape(t.reference)}</a></td><td class="amount">${
              amount(t.amount, t)
            }</td><td>${t.currency}</td><td>${t.status}</td><td>${time(t.createdAt)}</td></tr>`
          ).join("\n")
        }
</tbody></table>`
    }
<nav aria-label="Pages">${page.paged ? `<a href="${escape(listHref(page.filters))}">First page</a> ` : ""}${
      page.nextAfter === undefined
        ? ""
        : `<a href="${escape(listHref(page.filters, page.nextAfter))}" rel="next">Next page</a>`
    }</nav>`,
    { signedIn }
  )

const row = (label: string, value: string) => `<dt>${label}</dt><dd>${value}</dd>`
const name = (p: { readonly first_name: string; readonly middle_name?: string | undefined }) =>
  escape([p.first_name, p.middle_name].filter((n) => n !== undefined && n !== "").join(" "))

// The refund form of a transfer that has something left to refund. Its idempotency key is made with the page:
// a second click on Refund sends the same key, and the use case makes one refund of the two requests.
export interface RefundForm {
  readonly idempotencyKey: string
  readonly amount?: string | undefined
  readonly error?: string | undefined
  readonly status?: number | undefined
}

// What was typed goes back into the field, unless it could be card data (docs/decisions/0008-card-data.md).
const shownAgain = (typed: string | undefined) =>
  typed !== undefined && typed.length <= 32 && !holdsCardData(typed) ? typed : ""

const refundForm = (signedIn: SignedIn, t: Transfer, form: RefundForm) => {
  const left = amount(t.amount - t.amountRefunded, t)
  return `<h2>Refund</h2>
<form method="post" action="${transferHref(t)}/refunds">
${csrfField(signedIn.csrfToken)}
<input type="hidden" name="idempotency_key" value="${escape(form.idempotencyKey)}">
${form.error === undefined ? "" : `<p id="refund-error" class="error" role="alert">${escape(form.error)}</p>`}
<label for="amount">Amount</label>
<input id="amount" name="amount" inputmode="decimal" autocomplete="off" value="${escape(shownAgain(form.amount))}"
 aria-describedby="amount-hint${form.error === undefined ? "" : " refund-error"}"${
    form.error === undefined ? "" : " aria-invalid=\"true\""
  }>
<p id="amount-hint">In ${t.currency}; left to refund: ${left}. Empty: all of it.</p>
<p><button type="submit">Refund</button></p>
</form>`
}

export const transferPage = (
  signedIn: SignedIn,
  t: Transfer,
  refunds: ReadonlyArray<Refund>,
  more: boolean,
  events: string,
  form?: RefundForm
) => {
  const card = t.sender.card
  const refundable = t.status === "approved" && t.amountRefunded < t.amount
  return consolePage(
    `Transfer ${t.reference}`,
    `<dl>
${row("ID", `<code>${t.id}</code>`)}
${row("Reference", escape(t.reference))}
${row("Amount", `${amount(t.amount, t)} ${t.currency}`)}
${row("Refunded", `${amount(t.amountRefunded, t)} ${t.currency}`)}
${row("Status", t.status)}
${
      t.failure === undefined
        ? ""
        : row("Failure", escape([t.failure.code, t.failure.decline_code].filter(Boolean).join(", ")))
    }
${row("Card", `${escape(card.brand)} ending ${escape(card.last4)}, expires ${card.exp_month}/${card.exp_year}`)}
${row("Sender", `${name(t.sender)} &lt;${escape(t.sender.email)}&gt;`)}
${row("Recipient", `${name(t.recipient)} &lt;${escape(t.recipient.email)}&gt;`)}
${row("Merchant ID", escape(t.recipient.merchant_id))}
${row("Created", time(t.createdAt))}
</dl>
${refundable && form !== undefined ? refundForm(signedIn, t, form) : ""}
<h2>Refunds</h2>
${
      refunds.length === 0
        ? "<p>No refunds.</p>"
        : `<table><caption>Refunds, newest first</caption>
<thead><tr><th scope="col">ID</th><th scope="col">Amount</th><th scope="col">Status</th><th scope="col">Reason</th><th scope="col">Time</th></tr></thead>
<tbody>
${
          refunds.map((r) =>
            `<tr><td><code>${r.id}</code></td><td class="amount">${
              amount(r.amount, r)
            } ${r.currency}</td><td>${r.status}${
              r.failureReason === undefined ? "" : ` (${r.failureReason})`
            }</td><td>${r.reason ?? ""}</td><td>${time(r.createdAt)}</td></tr>`
          ).join("\n")
        }
</tbody></table>${more ? "<p>Only the latest 100 refunds are shown.</p>" : ""}`
    }
<h2>Events</h2>
${events}
<p><a href="/console/transfers">All transfers</a></p>`,
    { signedIn, status: form?.status ?? 200 }
  )
}
