import { escapeHtml as escape } from "../../core/subscriptions/ConfirmationMail.ts"
import {
  type AttemptState,
  type DeliveryState,
  EndpointFailing,
  type EventDeliveries,
  type StoredEvent,
  type WebhookEndpoint
} from "../../core/webhooks/Webhooks.ts"
import { consolePage, csrfField, type SignedIn, time } from "./ConsolePage.ts"

// The merchant's events, newest first, each with a form that sends it again to one of the merchant's endpoints.

// The object an event tells of, as its body holds it: a transfer's page for a transfer event.
const subject = (e: StoredEvent) => {
  const object = (JSON.parse(e.body) as { data?: { object?: { id?: unknown } } }).data?.object
  const id = typeof object?.id === "string" ? object.id : undefined
  if (id === undefined) return ""
  return e.type.startsWith("transfer.")
    ? `<a href="/console/transfers/${encodeURIComponent(id)}">${escape(id)}</a>`
    : `<code>${escape(id)}</code>`
}

const resendForm = (signedIn: SignedIn, e: StoredEvent, endpoints: ReadonlyArray<WebhookEndpoint>) =>
  endpoints.length === 0
    ? ""
    : `<form class="inline" method="post" action="/console/events/${encodeURIComponent(e.id)}/resend">${
      csrfField(signedIn.csrfToken)
    }<label class="option" for="to-${e.id}">To</label> <select id="to-${e.id}" name="webhook_endpoint">${
      endpoints.map((w) => `<option value="${w.id}">${escape(w.url)}</option>`).join("")
    }</select> <button type="submit" aria-label="Resend ${e.id}">Resend</button></form>`

export const eventsPage = (
  signedIn: SignedIn,
  page: {
    readonly events: ReadonlyArray<StoredEvent>
    readonly endpoints: ReadonlyArray<WebhookEndpoint>
    readonly paged: boolean
    readonly nextAfter: string | undefined
    readonly error?: string | undefined
    readonly status?: number | undefined
  }
) =>
  consolePage(
    "Events",
    `${page.error === undefined ? "" : `<p class="error" role="alert">${escape(page.error)}</p>`}
${
      page.events.length === 0
        ? "<p>No events.</p>"
        : `<table><caption>Events, newest first</caption>
<thead><tr><th scope="col">ID</th><th scope="col">Type</th><th scope="col">Object</th><th scope="col">Time</th><th scope="col">Send again</th></tr></thead>
<tbody>
${
          page.events.map((e) =>
            `<tr><td><code>${e.id}</code></td><td>${e.type}</td><td>${subject(e)}</td><td>${
              time(e.createdAt)
            }</td><td>${resendForm(signedIn, e, page.endpoints)}</td></tr>`
          ).join("\n")
        }
</tbody></table>`
    }
<nav aria-label="Pages">${page.paged ? `<a href="/console/events">First page</a> ` : ""}${
      page.nextAfter === undefined
        ? ""
        : `<a href="/console/events?after=${encodeURIComponent(page.nextAfter)}" rel="next">Next page</a>`
    }</nav>`,
    { signedIn, status: page.status ?? 200 }
  )

export const resentPage = (signedIn: SignedIn, event: string, endpoint: string) =>
  consolePage(
    "Event resent",
    `<p>Event <code>${escape(event)}</code> will be sent again to <code>${escape(endpoint)}</code> with its own
delivery and retries.</p>
<p><a href="/console/events">All events</a></p>`,
    { signedIn }
  )

// A transfer's events (its refunds' included) on its page, each with its deliveries: the endpoint, the attempts
// made, when it was delivered or, until then, when it is tried next and why the last attempt failed, and each
// attempt kept, oldest first: its time and the receiver's status code, or what the network did.
const deliveryState = (d: DeliveryState) =>
  d.deliveredAt !== undefined
    ? `delivered ${time(d.deliveredAt)}`
    : `${d.lastError === undefined ? "pending" : `failed: ${escape(d.lastError)}`}${
      d.nextAttemptAt === undefined ? "" : `; next attempt ${time(d.nextAttemptAt)}`
    }`

// Why there was no answer, in words, for the failures the sender names by a code (adapters/webhook/PostClient.ts
// passes on the network's error codes); any other as it is kept.
const failureWords: Record<string, string> = {
  ECONNREFUSED: "connection refused",
  ECONNRESET: "connection reset",
  EPIPE: "connection reset",
  ETIMEDOUT: "time-out connecting",
  ENOTFOUND: "host not found",
  EAI_AGAIN: "host name lookup failed",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
  EPRIVATEADDRESS: "refused: the host resolves to a private address",
  [EndpointFailing]: "not sent: the endpoint was failing"
}
const outcome = (a: AttemptState) =>
  a.status !== undefined
    ? `HTTP ${a.status}`
    : a.failure === undefined
    ? ""
    : /^no answer within /.test(a.failure)
    ? `time-out (${escape(a.failure)})`
    : escape(failureWords[a.failure] ?? a.failure)

const history = (d: DeliveryState) =>
  d.history.length === 0
    ? ""
    : `<ol class="attempts" start="${d.history[0]!.attempt}">${
      d.history.map((a) => `<li>${time(a.at)} ${outcome(a)}</li>`).join("")
    }</ol>`

export const transferEvents = (events: ReadonlyArray<EventDeliveries>, limit: number) =>
  events.length === 0
    ? "<p>No events.</p>"
    : `<table><caption>Events and their webhook deliveries, newest first; each delivery's attempts oldest first</caption>
<thead><tr><th scope="col">Event</th><th scope="col">Type</th><th scope="col">Time</th><th scope="col">Endpoint</th><th scope="col">Attempts</th><th scope="col">State</th><th scope="col">Each attempt</th></tr></thead>
<tbody>
${
      events.flatMap(({ deliveries, event: e }) => {
        const head = `<td><code>${e.id}</code></td><td>${e.type}</td><td>${time(e.createdAt)}</td>`
        return deliveries.length === 0
          ? [`<tr>${head}<td colspan="4">No endpoint asked for it.</td></tr>`]
          : deliveries.map((d) =>
            `<tr>${head}<td>${escape(d.url)}</td><td>${d.attempts}</td><td>${deliveryState(d)}</td><td>${
              history(d)
            }</td></tr>`
          )
      }).join("\n")
    }
</tbody></table>${events.length >= limit ? `<p>Only the latest ${limit} events are shown.</p>` : ""}`
