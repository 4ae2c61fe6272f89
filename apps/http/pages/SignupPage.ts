import type { HttpServerResponse } from "@effect/platform"
import { holdsCardData } from "../../../core/payments/Card.ts"
import { escapeHtml as escape } from "../../../core/subscriptions/ConfirmationMail.ts"
import { HoneypotField } from "../../../core/subscriptions/Subscriptions.ts"
import type { ApiError } from "../pipeline/ApiError.ts"
import { page } from "./Pages.ts"

// The signup page a person fills in. Without JavaScript the form posts to /subscribe and the answer is a page
// (the pending message, or the form again with the error next to its field); with JavaScript the script below
// posts the same fields by fetch, asks for JSON, and shows the message or the error in place.
export interface SignupForm {
  readonly feed: string
  readonly heading: string
  readonly values?: { readonly name?: string; readonly email?: string }
  readonly error?: ApiError["error"]
}

const Fields = ["name", "email"] as const

// Kept small and inline: the page needs no other request, and works the same when the script never runs.
const script = `<script>
(() => {
  const form = document.getElementById("signup")
  const result = document.getElementById("result")
  const formError = document.getElementById("form-error")
  const clear = () => {
    for (const slot of form.querySelectorAll(".error")) slot.textContent = ""
    for (const field of form.querySelectorAll("[aria-invalid]")) field.removeAttribute("aria-invalid")
  }
  const show = (error) => {
    const field = error.param === "name" || error.param === "email" ? form.elements[error.param] : undefined
    const slot = field ? document.getElementById(error.param + "-error") : formError
    slot.textContent = error.message
    if (field) {
      field.setAttribute("aria-invalid", "true")
      field.focus()
    }
  }
  form.addEventListener("submit", async (event) => {
    event.preventDefault()
    clear()
    const button = form.querySelector("button")
    button.disabled = true
    try {
      const response = await fetch(form.action, {
        method: "POST",
        headers: { accept: "application/json", "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams(new FormData(form))
      })
      const body = await response.json()
      if (!response.ok) return show(body.error)
      form.hidden = true
      result.textContent = body.message
      result.focus()
    } catch {
      show({ message: "The signup could not be sent. Check your connection and try again." })
    } finally {
      button.disabled = false
    }
  })
})()
</script>`

const field = (
  name: (typeof Fields)[number],
  label: string,
  attributes: string,
  value: string | undefined,
  error: string | undefined
) =>
  `<label for="${name}">${label}</label>
<input id="${name}" name="${name}" ${attributes} required aria-describedby="${name}-error"${
    error === undefined ? "" : " aria-invalid=\"true\""
  } value="${escape(value ?? "")}">
<p id="${name}-error" class="error">${escape(error ?? "")}</p>`

export const signupPage = (form: SignupForm, status = 200): HttpServerResponse.HttpServerResponse => {
  const param = form.error?.param
  const own = (name: string) => (param === name ? form.error?.message : undefined)
  const general = form.error !== undefined && !Fields.some((f) => f === param) ? form.error.message : ""
  return page(
    form.heading,
    `<p>Enter your name and e-mail address. We send you an e-mail with a link: your subscription starts once you
follow it.</p>
<form id="signup" method="post" action="/subscribe" novalidate>
<p id="form-error" class="error" role="alert">${escape(general)}</p>
<input type="hidden" name="feed" value="${escape(form.feed)}">
${field("name", "Name", "autocomplete=\"name\" maxlength=\"100\"", form.values?.name, own("name"))}
${
      field(
        "email",
        "E-mail address",
        "type=\"email\" autocomplete=\"email\" inputmode=\"email\" spellcheck=\"false\"",
        form.values?.email,
        own("email")
      )
    }
<div class="hp" aria-hidden="true"><label for="${HoneypotField}">Leave this field empty</label>
<input id="${HoneypotField}" name="${HoneypotField}" tabindex="-1" autocomplete="off"></div>
<button type="submit">Subscribe</button>
</form>
<p id="result" role="status" tabindex="-1"></p>
${script}`,
    status
  )
}

export const signupPending = (message: string) => page("Check your inbox", `<p role="status">${escape(message)}</p>`)

export const unknownFeed = () =>
  page("No such newsletter", "<p>There is no newsletter by this name. Check the link you followed.</p>", 404)

// What was typed goes back into the form, unless it is no name or address at all: card data is never shown
// again (docs/decisions/0008-card-data.md), nor anything longer than a field can hold.
const text = (value: unknown) =>
  typeof value === "string" && value.length <= 320 && !holdsCardData(value) ? value : undefined

// How POST /subscribe answers a browser's form: the message as a page, or the form again with the error next to
// its field (apps/http/pipeline/Endpoint.ts applies this when the request's Accept prefers text/html).
export const signupFormAnswers = {
  success: (value: unknown) => signupPending((value as { readonly message: string }).message),
  error: (error: ApiError, fields: Readonly<Record<string, unknown>>, status: number) =>
    signupPage({
      feed: text(fields.feed) ?? "default",
      heading: "Subscribe",
      values: { name: text(fields.name) ?? "", email: text(fields.email) ?? "" },
      error: error.error
    }, status)
}
