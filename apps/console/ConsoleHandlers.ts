import { DateTime, Effect, Either, Option, ParseResult, Redacted, Schema } from "effect"
import type { Session } from "../../core/console/Session.ts"
import { Sessions } from "../../core/console/Sessions.ts"
import { IdempotencyKey } from "../../core/payments/Idempotency.ts"
import { Refunds } from "../../core/payments/Refunds.ts"
import { Reference, TransferId, TransferStatus } from "../../core/payments/Transfer.ts"
import { Transfers } from "../../core/payments/Transfers.ts"
import { Tokens } from "../../core/shared/Tokens.ts"
import { WebhookEndpoints } from "../../core/webhooks/WebhookEndpoints.ts"
import { EndpointId, EventId, eventTypes } from "../../core/webhooks/Webhooks.ts"
import { group } from "../http/pipeline/ApiHandlers.ts"
import { currentRequestId } from "../http/pipeline/Edge.ts"
import { CreateEndpointPayload } from "../http/webhooks/WebhooksApi.ts"
import { ServedApi } from "./ConsoleApi.ts"
import { consolePage, seeOther, type SignedIn } from "./ConsolePage.ts"
import { consoleSession, FormCookie, isToken, notFound, SessionCookie, signedIn } from "./ConsoleSession.ts"
import { eventsPage, resentPage, transferEvents } from "./EventPages.ts"
import { refundRefusal, refusalStatus } from "./RefundRefusals.ts"
import { FormExpiredMessage, signInPage, SignInRefusedMessage } from "./SignInPage.ts"
import { transferPage, transfersPage } from "./TransferPages.ts"
import { transferPage as listPage } from "./TransferPaging.ts"
import { type AddForm, endpointsPage, secretPage } from "./WebhookPages.ts"

const isTransferId = Schema.is(TransferId)
const isStatus = Schema.is(TransferStatus)
const isReference = Schema.is(Reference)

const isIdempotencyKey = Schema.is(IdempotencyKey)
const isEndpointId = Schema.is(EndpointId)
const isEventId = Schema.is(EventId)
const EventsPerPage = 25
const EventsPerTransfer = 100
// The API's own check of an endpoint's URL, with its message.
const urlProblem = (url: string) =>
  Either.match(Schema.decodeUnknownEither(CreateEndpointPayload.fields.url)(url), {
    onLeft: (e) => ParseResult.TreeFormatter.formatErrorSync(e),
    onRight: () => undefined
  })
// The start of a day (YYYY-MM-DD, UTC) a date field sent; undefined for anything else.
const dayOf = (text: string | undefined): DateTime.Utc | undefined => {
  if (text === undefined || !/^\d{4}-\d{2}-\d{2}$/.test(text)) return undefined
  const day = DateTime.make(`${text}T00:00:00Z`)
  return Option.isSome(day) && DateTime.formatIso(day.value).startsWith(text) ? DateTime.toUtc(day.value) : undefined
}

const landing = (session: Session) => session.role === "admin" ? "/console/newsletter" : "/console/transfers"

export const ConsoleLive = group(ServedApi, "console", (handlers) =>
  Effect.gen(function*() {
    const sessions = yield* Sessions
    const transfers = yield* Transfers
    const refunds = yield* Refunds
    const tokens = yield* Tokens
    const webhooks = yield* WebhookEndpoints
    const { cookiesOf, ended, page, sessionOf, withCookie } = yield* consoleSession
    // The sign-in form, with the CSRF token its cookie holds (a new one when there is none).
    const signInForm = (headers: { readonly cookie?: string | undefined }, error?: string, status?: number) =>
      Effect.gen(function*() {
        const kept = cookiesOf(headers)[FormCookie]
        if (isToken(kept)) return signInPage(kept, error, status)
        const token = yield* tokens.issue
        return withCookie(signInPage(token, error, status), FormCookie, token)
      })

    // A transfer's page, with a refund form (a new idempotency key each time it is shown).
    const showTransfer = (
      session: Session,
      shown: SignedIn,
      id: string,
      form: { readonly error?: string; readonly amount?: string | undefined; readonly status?: number } = {}
    ) =>
      Effect.gen(function*() {
        const client = session.clientId!
        if (!isTransferId(id)) return notFound(shown)
        const found = yield* transfers.get(client, id)
        if (Option.isNone(found)) return notFound(shown)
        const { data, hasMore } = yield* refunds.list(client, id, { limit: 100 })
        const events = transferEvents(yield* webhooks.eventsAbout(client, id, EventsPerTransfer), EventsPerTransfer)
        const idempotencyKey = `console_${yield* tokens.issue}`
        return transferPage(shown, found.value, data, hasMore, events, { ...form, idempotencyKey })
      })

    // The merchant's endpoints, with the add form (again with what was typed and why it was refused).
    const showEndpoints = (session: Session, shown: SignedIn, form: AddForm = {}) =>
      Effect.map(
        webhooks.list(session.clientId!),
        (all) => endpointsPage(shown, all, webhooks.allowedTypes(session.clientId!), form)
      )

    // A page of the merchant's events (one indexed read of the page plus one), and its endpoints to resend to.
    const showEvents = (
      session: Session,
      shown: SignedIn,
      after: string | undefined,
      problem: { readonly error?: string; readonly status?: number } = {}
    ) =>
      Effect.gen(function*() {
        const startingAfter = isEventId(after) ? after : undefined
        const page = yield* webhooks.events(session.clientId!, {
          limit: EventsPerPage,
          ...(startingAfter === undefined ? {} : { startingAfter })
        })
        const endpoints = yield* webhooks.list(session.clientId!)
        return eventsPage(shown, {
          events: page.data,
          endpoints,
          paged: startingAfter !== undefined,
          nextAfter: page.hasMore ? page.data[page.data.length - 1]?.id : undefined,
          ...problem
        })
      })

    return handlers
      .handle("home", ({ headers }) =>
        Effect.flatMap(
          sessionOf(headers),
          (found) => Option.isSome(found) ? Effect.succeed(seeOther(landing(found.value.session))) : signInForm(headers)
        ))
      .handle("signIn", ({ headers, payload }) => {
        const expected = cookiesOf(headers)[FormCookie]
        if (!isToken(expected) || payload.csrf_token !== expected) {
          return signInForm({}, FormExpiredMessage, 403)
        }
        // A session the browser held before ends: one browser, one session.
        const previous = cookiesOf(headers)[SessionCookie]
        return sessions.signIn(Redacted.make(payload.api_key ?? "")).pipe(
          Effect.tap(() => isToken(previous) ? sessions.signOut(previous) : Effect.void),
          Effect.map(({ id, session }) => withCookie(seeOther(landing(session)), SessionCookie, Redacted.value(id))),
          Effect.catchTag("SignInRefused", () => signInForm(headers, SignInRefusedMessage, 401))
        )
      })
      .handle("signOut", ({ headers, payload }) =>
        Effect.flatMap(sessionOf(headers), (found) => {
          if (Option.isNone(found)) return ended(seeOther("/console"))
          const { id, session } = found.value
          if (!sessions.formTokenValid(session, payload.csrf_token)) {
            return Effect.succeed(
              consolePage("Not signed out", `<p class="error">${FormExpiredMessage}</p>`, {
                status: 403,
                signedIn: signedIn(session)
              })
            )
          }
          return Effect.zipRight(sessions.signOut(id), ended(seeOther("/console")))
        }))
      .handle("transfers", ({ headers, urlParams }) =>
        page(headers, "merchant", (session, shown) => {
          const from = dayOf(urlParams.from)
          const to = dayOf(urlParams.to)
          const filters = {
            status: isStatus(urlParams.status) ? urlParams.status : undefined,
            reference: urlParams.reference?.trim(),
            from: from === undefined ? undefined : urlParams.from,
            to: to === undefined ? undefined : urlParams.to
          }
          const reference = filters.reference === undefined || filters.reference === "" ? undefined : filters.reference
          // A reference no transfer can have finds none.
          if (reference !== undefined && !isReference(reference)) {
            return Effect.succeed(transfersPage(shown, { transfers: [], filters, paged: false, nextAfter: undefined }))
          }
          const after = isTransferId(urlParams.after) ? urlParams.after : undefined
          return Effect.map(
            listPage(transfers.list, session.clientId!, {
              ...(reference === undefined ? {} : { reference }),
              ...(filters.status === undefined ? {} : { status: filters.status }),
              ...(from === undefined ? {} : { from }),
              ...(to === undefined ? {} : { until: DateTime.add(to, { days: 1 }) }),
              ...(after === undefined ? {} : { after })
            }),
            (found) => transfersPage(shown, { ...found, filters, paged: after !== undefined })
          )
        }))
      .handle("transfer", ({ headers, path }) =>
        page(headers, "merchant", (session, shown) => showTransfer(session, shown, path.id)))
      .handle("refund", ({ headers, path, payload }) =>
        page(headers, "merchant", (session, shown) =>
          Effect.gen(function*() {
            if (!isTransferId(path.id)) {
              return notFound(shown)
            }
            if (!sessions.formTokenValid(session, payload.csrf_token)) {
              return yield* showTransfer(session, shown, path.id, { error: FormExpiredMessage, status: 403 })
            }
            const key = payload.idempotency_key
            if (key === undefined || !isIdempotencyKey(key)) {
              return yield* showTransfer(session, shown, path.id, { error: FormExpiredMessage, status: 400 })
            }
            const amount = payload.amount?.trim()
            const made = refunds.refund(
              session.clientId!,
              path.id,
              amount === undefined || amount === "" ? {} : { amount },
              yield* currentRequestId,
              key
            )
            return yield* made.pipe(
              Effect.as(seeOther(`/console/transfers/${path.id}`)),
              // A second click while the first is running: the page shows the refund once it is made.
              Effect.catchTag("IdempotencyKeyInUse", () =>
                Effect.succeed(seeOther(`/console/transfers/${path.id}`))),
              Effect.catchTag("TransferNotFound", () =>
                Effect.succeed(notFound(shown))),
              Effect.catchAll((e) =>
                showTransfer(session, shown, path.id, { error: refundRefusal(e), amount, status: refusalStatus(e) })
              )
            )
          })))
      .handle("webhooks", ({ headers }) =>
        page(headers, "merchant", showEndpoints))
      .handle("addWebhook", ({ headers, payload }) =>
        page(headers, "merchant", (session, shown) => {
          const url = payload.url?.trim() ?? ""
          // Every type a box was ticked for, the owner's or not: the use case refuses another owner's.
          const types = ["*", ...eventTypes].filter((t) =>
            payload[t] !== undefined
          )
          const form = { url, enabledEvents: types, status: 400 }
          if (!sessions.formTokenValid(session, payload.csrf_token)) {
            return showEndpoints(session, shown, { ...form, error: FormExpiredMessage, status: 403 })
          }
          const problem = urlProblem(url)
          if (problem !== undefined) return showEndpoints(session, shown, { ...form, error: problem })
          return webhooks.create(session.clientId!, url, types).pipe(
            Effect.map(({ endpoint, secret }) => secretPage(shown, endpoint, secret, "added")),
            Effect.catchTags({
              UrlRefused: (e) => showEndpoints(session, shown, { ...form, error: e.reason }),
              EventTypesRefused: (e) =>
                showEndpoints(session, shown, {
                  ...form,
                  error: e.type === undefined
                    ? "Choose at least one event type."
                    : `This key cannot receive ${e.type} events; it receives ${e.allowed.join(", ")}.`
                })
            })
          )
        }))
      .handle("webhookAction", ({ headers, path, payload }) =>
        page(headers, "merchant", (session, shown) => {
          if (!isEndpointId(path.id)) return Effect.succeed(notFound(shown))
          if (!sessions.formTokenValid(session, payload.csrf_token)) {
            return showEndpoints(session, shown, { error: FormExpiredMessage, status: 403 })
          }
          const owner = session.clientId!
          const done = path.action === "rotate"
            ? Effect.map(
              webhooks.rotate(owner, path.id),
              ({ endpoint, secret }) => secretPage(shown, endpoint, secret, "rotated")
            )
            : Effect.as(
              path.action === "delete"
                ? webhooks.remove(owner, path.id)
                : (path.action === "disable" ? webhooks.disable : webhooks.enable)(owner, path.id),
              seeOther("/console/webhooks")
            )
          return Effect.catchTag(done, "EndpointNotFound", () => Effect.succeed(notFound(shown)))
        }))
      .handle("events", ({ headers, urlParams }) =>
        page(headers, "merchant", (session, shown) =>
          showEvents(session, shown, urlParams.after)))
      .handle("resend", ({ headers, path, payload }) =>
        page(headers, "merchant", (session, shown) => {
          const endpoint = payload.webhook_endpoint
          if (!isEventId(path.id) || !isEndpointId(endpoint)) {
            return Effect.succeed(notFound(shown))
          }
          if (!sessions.formTokenValid(session, payload.csrf_token)) {
            return showEvents(session, shown, undefined, { error: FormExpiredMessage, status: 403 })
          }
          return webhooks.resend(session.clientId!, path.id, endpoint).pipe(
            Effect.as(resentPage(shown, path.id, endpoint)),
            Effect.catchTags({
              EventNotFound: () =>
                Effect.succeed(notFound(shown)),
              EndpointNotFound: () => Effect.succeed(notFound(shown))
            })
          )
        }))
  }))
