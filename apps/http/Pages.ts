import { HttpServerResponse } from "@effect/platform"
import { escapeHtml } from "../../core/ConfirmationMail.ts"

const escape = escapeHtml

const page = (title: string, body: string, status = 200) =>
  HttpServerResponse.text(
    `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex"><title>${escape(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;line-height:1.5}
button{font-size:1rem;padding:.5rem 1.25rem}</style></head>
<body><h1>${escape(title)}</h1>
${body}
</body></html>
`,
    { status, contentType: "text/html; charset=utf-8", headers: { "cache-control": "no-store" } }
  )

// GET pages only show a button: mail scanners that prefetch links must not confirm or unsubscribe anyone.
const actionForm = (path: string, token: string, label: string) =>
  `<form method="post" action="${path}?token=${
    encodeURIComponent(token)
  }"><button type="submit">${label}</button></form>`

export const Pages = {
  confirm: (token: string, feed: string, email: string) =>
    page(
      "Confirm your subscription",
      `<p>Subscribe <strong>${escape(email)}</strong> to <strong>${escape(feed)}</strong>?</p>
${actionForm("/subscribe/confirm", token, "Confirm subscription")}`
    ),
  confirmed: (feed: string) =>
    page("Subscription confirmed", `<p>Thank you: you are now subscribed to <strong>${escape(feed)}</strong>.</p>`),
  unsubscribe: (token: string, feed: string) =>
    page(
      "Unsubscribe",
      `<p>Stop receiving <strong>${escape(feed)}</strong>?</p>
${actionForm("/unsubscribe", token, "Unsubscribe")}`
    ),
  unsubscribed: (feed: string) =>
    page("Unsubscribed", `<p>You will not receive <strong>${escape(feed)}</strong> any more.</p>`),
  invalidLink: () =>
    page(
      "This link is not valid",
      "<p>The link is unknown, was already used, or has expired. Subscribe again to get a new confirmation link.</p>",
      404
    ),
  errorCatalog: (rows: ReadonlyArray<{ code: string; status: number; type: string; summary: string; fix: string }>) =>
    page(
      "Error codes",
      `<p>Every error response has the body <code>{"error": {"type", "code", "message", "param"?, "doc_url", "request_id"}}</code>.</p>
<dl>
${
        rows
          .map(
            (r) =>
              `<dt id="${r.code}"><code>${r.code}</code> (HTTP ${r.status}, <code>${r.type}</code>)</dt><dd>${
                escape(r.summary)
              } ${escape(r.fix)}</dd>`
          )
          .join("\n")
      }
</dl>`
    ).pipe(HttpServerResponse.setHeader("cache-control", "public, max-age=3600"))
}

export const wantsHtml = (accept: string | undefined) => accept !== undefined && accept.includes("text/html")
