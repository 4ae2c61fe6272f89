import { HttpServerResponse } from "@effect/platform"
import { escapeHtml } from "../../../core/subscriptions/ConfirmationMail.ts"

const escape = escapeHtml

export const page = (title: string, body: string, status = 200) =>
  HttpServerResponse.text(
    `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex"><title>${escape(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;line-height:1.5}
button{font-size:1rem;padding:.5rem 1.25rem}
label{display:block;font-weight:600;margin-top:1rem}
input{box-sizing:border-box;width:100%;font-size:1rem;padding:.5rem;margin-top:.25rem;border:1px solid #555;border-radius:4px}
input[aria-invalid=true]{border:2px solid #b00020}.error{color:#b00020;margin:.25rem 0 0}.error:empty{display:none}
form button{margin-top:1.25rem}.hp{position:absolute;left:-10000px;top:auto;width:1px;height:1px;overflow:hidden}</style></head>
<body><main><h1>${escape(title)}</h1>
${body}
</main></body></html>
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

// The weight an Accept header gives a media type: its most specific range wins (RFC 9110 12.5.1).
const weightOf = (ranges: ReadonlyArray<{ type: string; q: number }>, type: string) => {
  const [major] = type.split("/")
  const exact = ranges.find((r) => r.type === type) ?? ranges.find((r) => r.type === `${major}/*`) ??
    ranges.find((r) => r.type === "*/*")
  return exact?.q ?? 0
}

// Whether a form's answer should be a page: Accept names text/html and weighs it at least as much as JSON, as
// browsers' form submissions do (`text/html,...,*/*;q=0.8`). `*/*` alone (curl, fetch) keeps the JSON.
export const prefersHtml = (accept: string | undefined) => {
  if (accept === undefined || !accept.includes("text/html")) return false
  const ranges = accept.split(",").map((part) => {
    const [type, ...params] = part.split(";")
    const q = params.map((p) => p.trim()).find((p) => p.startsWith("q="))
    return { type: type!.trim().toLowerCase(), q: q === undefined ? 1 : Number(q.slice(2)) || 0 }
  })
  const html = weightOf(ranges, "text/html")
  return html > 0 && html >= weightOf(ranges, "application/json")
}
