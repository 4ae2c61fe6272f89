import { escapeHtml as escape } from "../../core/subscriptions/ConfirmationMail.ts"
import type { WebhookEndpoint } from "../../core/webhooks/Webhooks.ts"
import { consolePage, csrfField, type SignedIn, time } from "./ConsolePage.ts"

// The merchant's webhook endpoints: the list with each endpoint's state, a form to add one, and the page that
// shows a new secret. That page is the only place a secret is ever shown: it is the answer to the post that
// made it, sent with `Cache-Control: no-store` like every console page, and no page reads it back.
export interface AddForm {
  readonly url?: string | undefined
  readonly enabledEvents?: ReadonlyArray<string> | undefined
  readonly error?: string | undefined
  readonly status?: number | undefined
}

const href = (e: Pick<WebhookEndpoint, "id">) => `/console/webhooks/${encodeURIComponent(e.id)}`

const state = (e: WebhookEndpoint) =>
  e.disabledAt !== undefined
    ? `disabled ${time(e.disabledAt)}${e.disabledReason === undefined ? "" : `: ${escape(e.disabledReason)}`}`
    : e.failingSince !== undefined
    ? `failing since ${time(e.failingSince)}${e.lastError === undefined ? "" : `: ${escape(e.lastError)}`}`
    : "enabled"

const button = (signedIn: SignedIn, e: WebhookEndpoint, action: string, label: string) =>
  `<form class="inline" method="post" action="${href(e)}/${action}">${
    csrfField(signedIn.csrfToken)
  }<button type="submit" aria-label="${label} ${e.id}">${label}</button></form>`

const actions = (signedIn: SignedIn, e: WebhookEndpoint) =>
  [
    button(signedIn, e, "rotate", "Rotate secret"),
    e.disabledAt === undefined ? button(signedIn, e, "disable", "Disable") : button(signedIn, e, "enable", "Enable"),
    button(signedIn, e, "delete", "Delete")
  ].join("")

const addForm = (signedIn: SignedIn, types: ReadonlyArray<string>, form: AddForm) => {
  const checked = form.enabledEvents ?? []
  const described = `url-hint${form.error === undefined ? "" : " add-error"}`
  return `<h2>Add an endpoint</h2>
<form method="post" action="/console/webhooks">
${csrfField(signedIn.csrfToken)}
${form.error === undefined ? "" : `<p id="add-error" class="error" role="alert">${escape(form.error)}</p>`}
<label for="url">URL</label>
<input id="url" name="url" type="url" size="60" maxlength="2048" required value="${escape(form.url ?? "")}"
 aria-describedby="${described}"${form.error === undefined ? "" : " aria-invalid=\"true\""}>
<p id="url-hint">An https URL to a public address.</p>
<fieldset><legend>Event types</legend>
${
    ["*", ...types].map((t, i) =>
      `<div><input type="checkbox" id="type-${i}" name="${t}"${
        checked.includes(t) ? " checked" : ""
      }> <label class="option" for="type-${i}">${t === "*" ? "All (*)" : t}</label></div>`
    ).join("\n")
  }
</fieldset>
<p><button type="submit">Add endpoint</button></p>
</form>`
}

export const endpointsPage = (
  signedIn: SignedIn,
  endpoints: ReadonlyArray<WebhookEndpoint>,
  types: ReadonlyArray<string>,
  form: AddForm = {}
) =>
  consolePage(
    "Webhook endpoints",
    `${
      endpoints.length === 0
        ? "<p>No webhook endpoints.</p>"
        : `<table><caption>Webhook endpoints</caption>
<thead><tr><th scope="col">ID</th><th scope="col">URL</th><th scope="col">Event types</th><th scope="col">State</th><th scope="col">Created</th><th scope="col">Actions</th></tr></thead>
<tbody>
${
          endpoints.map((e) =>
            `<tr><td><code>${e.id}</code></td><td>${escape(e.url)}</td><td>${
              e.enabledEvents.map(escape).join(", ")
            }</td><td>${state(e)}</td><td>${time(e.createdAt)}</td><td>${actions(signedIn, e)}</td></tr>`
          ).join("\n")
        }
</tbody></table>`
    }
${addForm(signedIn, types, form)}`,
    { signedIn, status: form.status ?? 200 }
  )

// The answer to adding an endpoint or rotating its secret: the secret, once.
export const secretPage = (
  signedIn: SignedIn,
  endpoint: Pick<WebhookEndpoint, "id" | "url">,
  secret: string,
  made: "added" | "rotated"
) =>
  consolePage(
    made === "added" ? "Endpoint added" : "Secret rotated",
    `<p>Endpoint <code>${endpoint.id}</code> (${escape(endpoint.url)}) signs its deliveries with this secret${
      made === "rotated" ? " from now on; the old one no longer signs" : ""
    }.</p>
<p><strong>Copy it now: it is shown only on this page, never again.</strong></p>
<p><code id="secret">${escape(secret)}</code></p>
<p><a href="/console/webhooks">All webhook endpoints</a></p>`,
    { signedIn, status: made === "added" ? 201 : 200 }
  )
