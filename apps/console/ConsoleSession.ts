import { Cookies, HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import type { Session } from "../../core/console/Session.ts"
import { Sessions } from "../../core/console/Sessions.ts"
import { SiteSettings } from "../../core/shared/SiteSettings.ts"
import { consolePage, seeOther, type SignedIn } from "./ConsolePage.ts"

// What every console page does with the session: read it from its cookie, show who signed in with the menu of
// their role, and send anyone else to sign in (no session) or to "Not found" (another role's page). Shared by the
// merchant's handlers (ConsoleHandlers.ts), the list owner's (NewsletterHandlers.ts) and the charts'
// (ChartHandlers.ts).

// The session's cookie holds its id; the sign-in form's cookie, its CSRF token until a session has one.
export const SessionCookie = "paysub_console"
export const FormCookie = "paysub_console_form"
export const isToken = (s: string | undefined): s is string => s !== undefined && /^[\w-]{32,64}$/.test(s)

export type CookieHeaders = { readonly cookie?: string | undefined }

export const notFound = (signedIn: SignedIn) =>
  consolePage("Not found", "<p>There is nothing here, or it is not yours to see.</p>", { status: 404, signedIn })

// Each role's menu.
export const ownerLinks: SignedIn["links"] = [
  ["/console/newsletter", "Feeds"],
  ["/console/newsletter/outbox", "Outbox"],
  ["/console/newsletter/charts", "Charts"]
]
export const merchantLinks: SignedIn["links"] = [
  ["/console/transfers", "Transfers"],
  ["/console/webhooks", "Webhooks"],
  ["/console/events", "Events"],
  ["/console/charts", "Charts"]
]

export const signedIn = (session: Session): SignedIn =>
  session.role === "admin"
    ? { who: "List owner", csrfToken: session.csrfToken, links: ownerLinks }
    : { who: `Merchant ${session.clientId}`, csrfToken: session.csrfToken, links: merchantLinks }

export const consoleSession = Effect.gen(function*() {
  const sessions = yield* Sessions
  const secure = (yield* SiteSettings).baseUrl.startsWith("https:")
  const cookie = { httpOnly: true, sameSite: "strict", secure, path: "/console" } as const
  const cookiesOf = (headers: CookieHeaders) => headers.cookie === undefined ? {} : Cookies.parseHeader(headers.cookie)
  const withCookie = (response: HttpServerResponse.HttpServerResponse, name: string, value: string) =>
    HttpServerResponse.unsafeSetCookie(response, name, value, cookie)
  const ended = (response: HttpServerResponse.HttpServerResponse) =>
    HttpServerResponse.expireCookie(response, SessionCookie, cookie).pipe(Effect.orDie)

  const sessionOf = (headers: CookieHeaders) => {
    const id = cookiesOf(headers)[SessionCookie]
    return isToken(id)
      ? Effect.map(sessions.current(id), Option.map((s) => ({ id, session: s })))
      : Effect.succeedNone
  }
  // A page for a signed-in role: without a session, the sign-in page; another role's page is not found.
  const page = <R>(
    headers: CookieHeaders,
    role: Session["role"],
    render: (session: Session, shown: SignedIn) => Effect.Effect<HttpServerResponse.HttpServerResponse, never, R>
  ) =>
    Effect.flatMap(sessionOf(headers), (found) => {
      if (Option.isNone(found)) return ended(seeOther("/console"))
      const { session } = found.value
      return session.role === role ? render(session, signedIn(session)) : Effect.succeed(notFound(signedIn(session)))
    })

  return { cookiesOf, withCookie, ended, sessionOf, signedIn, page } as const
})
