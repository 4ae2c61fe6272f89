import { escapeHtml as escape } from "../../core/subscriptions/ConfirmationMail.ts"
import { consolePage, csrfField } from "./ConsolePage.ts"

// One message whatever was wrong with the key: unknown, revoked, or the admin key on a service without one.
export const SignInRefusedMessage = "This key does not open a console. Check it and try again."
export const FormExpiredMessage = "This form has expired. Reload the page and try again."

export const signInPage = (csrfToken: string, error?: string, status = 200) =>
  consolePage(
    "Sign in to the console",
    `<p>Sign in with a merchant's secret key (<code>sk_...</code>) to see its transfers, or with the admin key
to manage the newsletter.</p>
<form method="post" action="/console/sign-in">
${csrfField(csrfToken)}
${error === undefined ? "" : `<p id="sign-in-error" class="error" role="alert">${escape(error)}</p>`}
<label for="api_key">API key</label>
<input id="api_key" name="api_key" type="password" autocomplete="off" spellcheck="false" required${
      error === undefined ? "" : " aria-invalid=\"true\" aria-describedby=\"sign-in-error\""
    }>
<p><button type="submit">Sign in</button></p>
</form>`,
    { status }
  )
