import type { DateTime } from "effect"
import { escapeHtml as escape } from "../../core/subscriptions/ConfirmationMail.ts"
import { confirmedAt } from "../../core/subscriptions/SubscriberDirectory.ts"
import type { Subscription } from "../../core/subscriptions/Subscription.ts"
import type {
  FailingMail,
  OutboxSummary,
  SubscriberHistory,
  SubscriberMail
} from "../../core/subscriptions/SubscriptionStorage.ts"
import { consolePage, type SignedIn, time } from "./ConsolePage.ts"
import { feedHref, subscriberHref } from "./FeedPages.ts"

// A subscriber's page, with the history the stores keep of it (its row, its mails and links, and its events: each
// confirmation and unsubscribe), and the outbox. What they do not keep is said on the page rather than made up: the
// time of a signup again after leaving (a subscription keeps its first signup and its latest change), and each
// attempt of a mail (an outbox row keeps the count and the last error).

const maybe = (t: DateTime.Utc | undefined, none: string) => t === undefined ? none : time(t)

// Where a mail is: sent, to be tried (again), or given up.
const mailState = (m: SubscriberMail) =>
  m.sentAt !== undefined
    ? `sent ${time(m.sentAt)}`
    : m.nextAttemptAt === undefined
    ? "given up"
    : `${m.attempts === 0 ? "due" : "to be tried again"} ${time(m.nextAttemptAt)}`

const mailsTable = (mails: ReadonlyArray<SubscriberMail>) =>
  mails.length === 0
    ? "<p>No confirmation mails.</p>"
    : `<table><caption>Confirmation mails, newest first</caption>
<thead><tr><th scope="col">Queued</th><th scope="col">State</th><th scope="col">Failed attempts</th><th scope="col">Last error</th></tr></thead>
<tbody>
${
      mails.map((m) =>
        `<tr><td>${time(m.queuedAt)}</td><td>${mailState(m)}</td><td class="amount">${m.attempts}</td><td>${
          escape(m.lastError ?? "")
        }</td></tr>`
      ).join("\n")
    }
</tbody></table>`

const linksTable = (history: SubscriberHistory) =>
  history.links.length === 0
    ? "<p>No confirmation links issued yet (a link is made when its mail is sent).</p>"
    : `<table><caption>Confirmation links, newest first</caption>
<thead><tr><th scope="col">Issued</th><th scope="col">Expires</th><th scope="col">Used or voided</th></tr></thead>
<tbody>
${
      history.links.map((l) =>
        `<tr><td>${time(l.createdAt)}</td><td>${maybe(l.expiresAt, "never")}</td><td>${
          maybe(l.usedAt, "not yet")
        }</td></tr>`
      ).join("\n")
    }
</tbody></table>`

// `events`: its events (confirmed, unsubscribed) with their webhook deliveries, as a table.
export const subscriberPage = (signedIn: SignedIn, s: Subscription, history: SubscriberHistory, events: string) => {
  const confirmed = confirmedAt(s, history)
  return consolePage(
    `Subscriber ${s.name}`,
    `<dl>
<dt>ID</dt><dd><code>${s.id}</code></dd>
<dt>Name</dt><dd>${escape(s.name)}</dd>
<dt>E-mail</dt><dd>${escape(s.email)}</dd>
<dt>Feed</dt><dd><a href="${feedHref(s.feed)}">${escape(s.feed)}</a></dd>
<dt>Status</dt><dd>${s.status}</dd>
<dt>Signed up</dt><dd>${time(s.createdAt)}</dd>
${confirmed === undefined ? "" : `<dt>Confirmed</dt><dd>${time(confirmed)}</dd>`}
${s.status === "unsubscribed" ? `<dt>Unsubscribed</dt><dd>${time(s.updatedAt)}</dd>` : ""}
<dt>Last change</dt><dd>${time(s.updatedAt)}</dd>
</dl>
<h2>History</h2>
${mailsTable(history.mails)}
${linksTable(history)}
<h2>Changes of status</h2>
${events}
<p>Kept: the first signup, the latest change, each confirmation and unsubscribe as an event with its time (those
made before events named their subscription are not listed here), each confirmation mail with its sent time,
failed attempts and last error, and each confirmation link with the time it was used. Not kept: the time of a
signup again after leaving, and each failed attempt's own time and error. A link's "used" time is its click, or
the time it was voided because the address left or its feed was deleted.</p>
<p><a href="${feedHref(s.feed)}">The feed's subscribers</a></p>`,
    { signedIn }
  )
}

export const outboxPage = (
  signedIn: SignedIn,
  v: { readonly today: DateTime.Utc; readonly summary: OutboxSummary; readonly failing: ReadonlyArray<FailingMail> }
) =>
  consolePage(
    "Outbox",
    `<dl>
<dt>Queued</dt><dd>${v.summary.queued}</dd>
<dt>Sent today</dt><dd>${v.summary.sentSince} (since ${time(v.today)})</dd>
<dt>Failing</dt><dd>${v.summary.failing}</dd>
</dl>
<p>Queued: mails not sent yet that a worker will try. Failing: mails not sent after at least one failed attempt,
still tried again or given up.</p>
${
      v.failing.length === 0
        ? "<p>No failing mails.</p>"
        : `<table><caption>Failing mails, most attempts first${
          v.failing.length < v.summary.failing ? ` (the first ${v.failing.length})` : ""
        }</caption>
<thead><tr><th scope="col">Subscriber</th><th scope="col">Feed</th><th scope="col">Queued</th><th scope="col">Failed attempts</th><th scope="col">State</th><th scope="col">Last error</th></tr></thead>
<tbody>
${
          v.failing.map((m) =>
            `<tr><td><a href="${subscriberHref({ id: m.subscriptionId })}">${escape(m.email)}</a></td><td>${
              escape(m.feed)
            }</td><td>${time(m.queuedAt)}</td><td class="amount">${m.attempts}</td><td>${mailState(m)}</td><td>${
              escape(m.lastError ?? "")
            }</td></tr>`
          ).join("\n")
        }
</tbody></table>`
    }`,
    { signedIn }
  )
