import { Cookies, HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import type { Session } from "../../core/console/Session.ts"
import { Sessions } from "../../core/console/Sessions.ts"
import { SiteSettings } from "../../core/shared/SiteSettings.ts"
import { consolePage, seeOther, type SignedIn } from "./ConsolePage.ts"

// Who is signed in, and the menu each role sees: what every group of console pages (ConsoleHandlers.ts,
// ChartHandlers.ts) shares.

// The session's cookie holds its id; the sign-in form's cookie, its CSRF token until a session has one.
export const SessionCookie = "paysub_console"
export const FormCookie = "paysub_console_form"
export const isToken = (s: string | undefined): s is string => s !== undefined && /^[\w-]{32,64}$/.test(s)

export const signedIn = (session: Session): SignedIn =>
  session.role === "admin"
    ? {
      who: "List owner",
      csrfToken: session.csrfToken,
      links: [["/console/newsletter", "Newsletter"], ["/console/newsletter/charts", "Charts"]]
    }
    : {
      who: `Merchant ${session.clientId}`,
      csrfToken: session.csrfToken,
      links: [
        ["/console/transfers", "Transfers"],
        ["/console/webhooks", "Webhooks"],
        ["/console/events", "Events"],
        ["/console/charts", "Charts"]
      ]
    }

export const notFound = (shown: SignedIn) =>
  consolePage("Not found", "<p>There is nothing here, or it is not yours to see.</p>", { status: 404, signedIn: shown })

type Headers = { readonly cookie?: string | undefined }

export const consoleAccess = Effect.gen(function*() {
  const sessions = yield* Sessions
  const secure = (yield* SiteSettings).baseUrl.startsWith("https:")
  const cookie = { httpOnly: true, sameSite: "strict", secure, path: "/console" } as const
  const cookiesOf = (headers: Headers) => headers.cookie === undefined ? {} : Cookies.parseHeader(headers.cookie)
  const withCookie = (response: HttpServerResponse.HttpServerResponse, name: string, value: string) =>
    HttpServerResponse.unsafeSetCookie(response, name, value, cookie)
  const ended = (response: HttpServerResponse.HttpServerResponse) =>
    HttpServerResponse.expireCookie(response, SessionCookie, cookie).pipe(Effect.orDie)
  const sessionOf = (headers: Headers) => {
    const id = cookiesOf(headers)[SessionCookie]
    return isToken(id)
      ? Effect.map(sessions.current(id), Option.map((s) => ({ id, session: s })))
      : Effect.succeedNone
  }
  // A page for a signed-in role: without a session, the sign-in page; another role's page is not found.
  const page = <R>(
    headers: Headers,
    role: Session["role"],
    render: (session: Session, shown: SignedIn) => Effect.Effect<HttpServerResponse.HttpServerResponse, never, R>
  ) =>
    Effect.flatMap(sessionOf(headers), (found) => {
      if (Option.isNone(found)) return ended(seeOther("/console"))
      const { session } = found.value
      return session.role === role ? render(session, signedIn(session)) : Effect.succeed(notFound(signedIn(session)))
    })
  return { cookie, cookiesOf, withCookie, ended, sessionOf, page } as const
})
