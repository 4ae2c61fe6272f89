import { HttpServerResponse } from "@effect/platform"
import { Effect, Either, Option, ParseResult, Schema } from "effect"
import { Sessions } from "../../core/console/Sessions.ts"
import { Email } from "../../core/shared/Email.ts"
import { FeedName } from "../../core/subscriptions/Feed.ts"
import { SubscriberDirectory } from "../../core/subscriptions/SubscriberDirectory.ts"
import { SubscriptionId, SubscriptionStatus } from "../../core/subscriptions/Subscription.ts"
import { Subscriptions } from "../../core/subscriptions/Subscriptions.ts"
import { subjectOf } from "../../core/subscriptions/SubscriptionStore.ts"
import { WebhookEndpoints } from "../../core/webhooks/WebhookEndpoints.ts"
import { AdminOwner } from "../../core/webhooks/Webhooks.ts"
import { group } from "../http/pipeline/ApiHandlers.ts"
import { FeedInput } from "../http/subscriptions/FeedsApi.ts"
import { subscribersCsv } from "../SubscribersCsv.ts"
import { ServedApi } from "./ConsoleApi.ts"
import { consoleHeaders, seeOther, type SignedIn } from "./ConsolePage.ts"
import { consoleSession, notFound } from "./ConsoleSession.ts"
import { transferEvents as eventsTable } from "./EventPages.ts"
import { type FeedForm, feedHref, feedPage, feedsPage } from "./FeedPages.ts"
import { FormExpiredMessage } from "./SignInPage.ts"
import { outboxPage, subscriberPage } from "./SubscriberPages.ts"

// The list owner's console: feeds through the use cases of the API's feeds endpoints (a refusal is the form again,
// with the API's own message), a feed's subscribers through SubscriberDirectory, its CSV export through the API's
// export code, and the outbox. A merchant's session gets "Not found" on every page.
const SubscribersPerPage = 25
const EventsPerSubscriber = 100
const FailingShown = 25
const isFeedName = Schema.is(FeedName)
const isStatus = Schema.is(SubscriptionStatus)
const isEmail = Schema.is(Email)
const idOf = (text: string | undefined) =>
  text !== undefined && /^[1-9]\d{0,14}$/.test(text) ? Option.some(SubscriptionId.make(Number(text))) : Option.none()
// The API's check of a field, with its message.
const problemOf = <A, I>(schema: Schema.Schema<A, I>, value: unknown) =>
  Either.match(Schema.decodeUnknownEither(schema)(value), {
    onLeft: (e) => Either.left(ParseResult.ArrayFormatter.formatErrorSync(e)[0]?.message ?? "This is not valid."),
    onRight: Either.right
  })

export const NewsletterConsoleLive = group(ServedApi, "newsletterConsole", (handlers) =>
  Effect.gen(function*() {
    const sessions = yield* Sessions
    const subscriptions = yield* Subscriptions
    const directory = yield* SubscriberDirectory
    const webhooks = yield* WebhookEndpoints
    const { page } = yield* consoleSession
    const owner = (
      headers: { readonly cookie?: string | undefined },
      render: (
        shown: SignedIn,
        formTokenValid: (token: string | undefined) => boolean
      ) => Effect.Effect<HttpServerResponse.HttpServerResponse>
    ) => page(headers, "admin", (session, shown) => render(shown, (token) => sessions.formTokenValid(session, token)))

    const showFeeds = (shown: SignedIn, form: FeedForm = {}) =>
      Effect.map(subscriptions.feeds, ({ feeds }) => feedsPage(shown, feeds, form))

    // A feed's page: its counts, one page of its subscribers (of a status), and what a search found.
    const showFeed = (
      shown: SignedIn,
      name: string,
      query: {
        readonly status?: string | undefined
        readonly email?: string | undefined
        readonly after?: string | undefined
      },
      rename?: FeedForm
    ) =>
      Effect.gen(function*() {
        if (!isFeedName(name)) return notFound(shown)
        const feed = yield* Effect.option(subscriptions.feed(name))
        if (Option.isNone(feed)) return notFound(shown)
        const status = isStatus(query.status) ? query.status : undefined
        const after = Option.getOrUndefined(idOf(query.after))
        const counts = yield* directory.counts(name)
        const { data, hasMore } = yield* directory.list({
          feed: name,
          status,
          startingAfter: after,
          limit: SubscribersPerPage
        })
        const email = query.email?.trim()
        const search = email === undefined || email === ""
          ? undefined
          : {
            email,
            found: isEmail(email) ? Option.getOrUndefined(yield* directory.find(email, name)) : undefined
          }
        return feedPage(shown, {
          feed: feed.value,
          counts,
          status,
          subscribers: data,
          paged: after !== undefined,
          nextAfter: hasMore ? data[data.length - 1]?.id : undefined,
          search,
          rename
        })
      })

    return handlers
      .handle("feeds", ({ headers }) => owner(headers, (shown) => showFeeds(shown)))
      .handle("createFeed", ({ headers, payload }) =>
        owner(headers, (shown, formTokenValid) =>
          Effect.gen(function*() {
            const typed = { name: payload.name?.trim() ?? "", title: payload.title ?? "", status: 400 }
            if (!formTokenValid(payload.csrf_token)) {
              return yield* showFeeds(shown, { ...typed, error: FormExpiredMessage, status: 403 })
            }
            const name = problemOf(FeedName, typed.name)
            const input = problemOf(FeedInput, { title: typed.title })
            const refused = Either.isLeft(name) ? name.left : Either.isLeft(input) ? input.left : undefined
            if (Either.isLeft(name) || Either.isLeft(input)) {
              return yield* showFeeds(shown, { ...typed, error: refused })
            }
            // The API's PUT renames a feed that exists; the console's Create does not.
            if (Option.isSome(yield* Effect.option(subscriptions.feed(name.right)))) {
              return yield* showFeeds(shown, { ...typed, error: `A feed named ${name.right} exists.` })
            }
            yield* subscriptions.putFeed(name.right, input.right.title)
            return seeOther(feedHref(name.right))
          })))
      .handle(
        "feed",
        ({ headers, path, urlParams }) => owner(headers, (shown) => showFeed(shown, path.name, urlParams))
      )
      .handle("renameFeed", ({ headers, path, payload }) =>
        owner(headers, (shown, formTokenValid) =>
          Effect.gen(function*() {
            const title = payload.title ?? ""
            if (!formTokenValid(payload.csrf_token)) {
              return yield* showFeed(shown, path.name, {}, { title, error: FormExpiredMessage, status: 403 })
            }
            if (!isFeedName(path.name)) {
              return notFound(shown)
            }
            // A feed deleted meanwhile is not made again by renaming it.
            if (Option.isNone(yield* Effect.option(subscriptions.feed(path.name)))) {
              return notFound(shown)
            }
            const input = problemOf(FeedInput, { title })
            if (Either.isLeft(input)) {
              return yield* showFeed(shown, path.name, {}, { title, error: input.left, status: 400 })
            }
            yield* subscriptions.putFeed(path.name, input.right.title)
            return seeOther(feedHref(path.name))
          })))
      .handle("deleteFeed", ({ headers, path, payload }) =>
        owner(headers, (shown, formTokenValid) => {
          if (!formTokenValid(payload.csrf_token)) {
            return showFeed(shown, path.name, {}, { error: FormExpiredMessage, status: 403 })
          }
          if (!isFeedName(path.name)) {
            return Effect.succeed(notFound(shown))
          }
          return subscriptions.deleteFeed(path.name).pipe(
            Effect.as(seeOther("/console/newsletter")),
            Effect.catchTag("FeedNotFound", () =>
              Effect.succeed(notFound(shown)))
          )
        }))
      // The API's export (SubscriberDirectory.exportFeed and SubscribersCsv), with the console's session.
      .handle("exportFeed", ({ headers, path, urlParams }) =>
        owner(headers, (shown) => {
          if (!isFeedName(path.name)) {
            return Effect.succeed(notFound(shown))
          }
          const status = isStatus(urlParams.status) ? urlParams.status : "active"
          return directory.exportFeed(path.name, status).pipe(
            Effect.map((rows) =>
              HttpServerResponse.stream(subscribersCsv(rows), {
                contentType: "text/csv; charset=utf-8",
                headers: {
                  ...consoleHeaders,
                  "content-disposition": `attachment; filename="${path.name}-${status}-subscribers.csv"`
                }
              })
            ),
            Effect.catchTag("FeedNotFound", () =>
              Effect.succeed(notFound(shown)))
          )
        }))
      .handle("subscriber", ({ headers, path }) =>
        owner(headers, (shown) =>
          Option.match(idOf(path.id), {
            onNone: () => Effect.succeed(notFound(shown)),
            onSome: (id) =>
              Effect.flatMap(directory.subscriber(id), (found) =>
                Option.match(found, {
                  onNone: () => Effect.succeed(notFound(shown)),
                  onSome: ({ history, subscription }) =>
                    Effect.map(
                      webhooks.eventsAbout(AdminOwner, subjectOf(id), EventsPerSubscriber),
                      (events) => subscriberPage(shown, subscription, history, eventsTable(events, EventsPerSubscriber))
                    )
                }))
          })))
      .handle(
        "outbox",
        ({ headers }) =>
          owner(headers, (shown) => Effect.map(directory.outbox(FailingShown), (v) => outboxPage(shown, v)))
      )
  }))
