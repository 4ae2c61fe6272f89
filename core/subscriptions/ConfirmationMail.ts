import { Duration } from "effect"
import type { Mail } from "./Mailer.ts"
import type { Subscription } from "./Subscription.ts"
import { ConfirmTokenTtl, type Token } from "./Token.ts"

export const confirmUrl = (baseUrl: string, token: Token) => `${baseUrl}/subscribe/confirm?token=${token}`
export const unsubscribeUrl = (baseUrl: string, token: Token) => `${baseUrl}/unsubscribe?token=${token}`

export const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" })[c]!)

export const confirmationMail = (input: {
  readonly baseUrl: string
  readonly subscription: Subscription
  readonly feedTitle: string
  readonly confirmToken: Token
  readonly unsubscribeToken: Token
}): Mail => {
  const { subscription: s, feedTitle } = input
  const confirm = confirmUrl(input.baseUrl, input.confirmToken)
  const unsubscribe = unsubscribeUrl(input.baseUrl, input.unsubscribeToken)
  const hours = Duration.toHours(ConfirmTokenTtl)
  const text = [
    `Hello ${s.name},`,
    "",
    `please confirm that you want to receive "${feedTitle}" at ${s.email} by opening this link:`,
    "",
    confirm,
    "",
    `The link is valid for ${hours} hours. If you did not ask for this, ignore this mail: nothing will be sent.`,
    "",
    `Unsubscribe: ${unsubscribe}`,
    ""
  ].join("\n")
  const html = [
    "<!doctype html>",
    `<html><body>`,
    `<p>Hello ${escapeHtml(s.name)},</p>`,
    `<p>please confirm that you want to receive &ldquo;${escapeHtml(feedTitle)}&rdquo; at ${escapeHtml(s.email)}:</p>`,
    `<p><a href="${escapeHtml(confirm)}">Confirm my subscription</a></p>`,
    `<p>The link is valid for ${hours} hours. If you did not ask for this, ignore this mail: nothing will be sent.</p>`,
    `<p><a href="${escapeHtml(unsubscribe)}">Unsubscribe</a></p>`,
    "</body></html>"
  ].join("\n")
  return {
    to: { name: s.name, address: s.email },
    subject: `Confirm your subscription to ${feedTitle}`,
    text,
    html,
    // RFC 8058: mail clients offer a one-click unsubscribe that POSTs to this URL.
    headers: { "List-Unsubscribe": `<${unsubscribe}>`, "List-Unsubscribe-Post": "List-Unsubscribe=One-Click" }
  }
}
