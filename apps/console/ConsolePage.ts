import { HttpServerResponse } from "@effect/platform"
import { DateTime } from "effect"
import { createHash } from "node:crypto"
import { escapeHtml as escape } from "../../core/subscriptions/ConfirmationMail.ts"

// The frame of every console page and the headers it is sent with. The page runs no script at all, so the
// Content-Security-Policy allows none; its one stylesheet is inline and allowed by its hash.
const css = `body{font-family:system-ui,sans-serif;max-width:64rem;margin:2rem auto;padding:0 1rem;line-height:1.5}
header{display:flex;gap:1rem;align-items:center;justify-content:space-between;border-bottom:1px solid #ccc}
nav a{margin-right:1rem}label{display:block;font-weight:600;margin-top:1rem}
input,select{font-size:1rem;padding:.4rem;border:1px solid #555;border-radius:4px}
button{font-size:1rem;padding:.4rem 1rem}table{border-collapse:collapse;width:100%;margin:1rem 0}
th,td{text-align:left;padding:.3rem .6rem;border-bottom:1px solid #ddd}td.amount{text-align:right}
.error{color:#b00020}dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem}dt{font-weight:600}
form.inline{display:inline;margin-left:1rem}label.option{display:inline;font-weight:400;margin:0}.filters{display:flex;gap:1rem;align-items:end;flex-wrap:wrap}.filters label{margin:0}`

const styleHash = createHash("sha256").update(css).digest("base64")

export const ContentSecurityPolicy = [
  "default-src 'none'",
  `style-src 'sha256-${styleHash}'`,
  "img-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'"
].join("; ")

export const consoleHeaders = {
  "content-security-policy": ContentSecurityPolicy,
  "referrer-policy": "same-origin",
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "cache-control": "no-store"
}

// A form's hidden CSRF field.
// A time as every console page shows it: UTC to the second, machine-readable in `datetime`.
export const time = (t: DateTime.Utc) => {
  const iso = DateTime.formatIso(t)
  return `<time datetime="${iso}">${iso.slice(0, 19).replace("T", " ")} UTC</time>`
}

export const csrfField = (token: string) => `<input type="hidden" name="csrf_token" value="${escape(token)}">`

export interface SignedIn {
  readonly who: string
  readonly csrfToken: string
  readonly links: ReadonlyArray<readonly [href: string, label: string]>
}

const header = (signedIn: SignedIn) =>
  `<header><nav aria-label="Console">${
    signedIn.links.map(([href, label]) => `<a href="${escape(href)}">${escape(label)}</a>`).join("")
  }</nav>
<div>${escape(signedIn.who)}
<form class="inline" method="post" action="/console/sign-out">${
    csrfField(signedIn.csrfToken)
  }<button type="submit">Sign out</button></form></div></header>`

export const consolePage = (
  title: string,
  body: string,
  options: { readonly status?: number; readonly signedIn?: SignedIn } = {}
) =>
  HttpServerResponse.text(
    `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex"><title>${escape(title)} · paysub console</title><style>${css}</style></head>
<body>${options.signedIn === undefined ? "" : header(options.signedIn)}
<main><h1>${escape(title)}</h1>
${body}
</main></body></html>
`,
    { status: options.status ?? 200, contentType: "text/html; charset=utf-8", headers: consoleHeaders }
  )

// After a form: the page to show next, fetched with GET (a reload does not post the form again).
export const seeOther = (location: string) =>
  HttpServerResponse.empty({ status: 303, headers: { ...consoleHeaders, location } })
