import { type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Option, Schema } from "effect"
import { FeedName } from "../../../core/subscriptions/Feed.ts"
import { SubscriberDirectory } from "../../../core/subscriptions/SubscriberDirectory.ts"
import type { Subscription } from "../../../core/subscriptions/Subscription.ts"
import { type SubscribeRequest, Subscriptions } from "../../../core/subscriptions/Subscriptions.ts"
import { Token } from "../../../core/subscriptions/Token.ts"
import { subscribersCsv } from "../../SubscribersCsv.ts"
import { Api } from "../Api.ts"
import { Pages, wantsHtml } from "../pages/Pages.ts"
import { signupPage, unknownFeed } from "../pages/SignupPage.ts"
import { apiError } from "../pipeline/ApiError.ts"
import { group } from "../pipeline/ApiHandlers.ts"
import { SubscribeResponse, SubscriptionEnvelope, subscriptionView } from "./SubscriptionsApi.ts"

export const pendingMessage = (email: string) =>
  `Your subscription is pending: a confirmation e-mail has been sent to ${email}. Follow the link in it to confirm.`

const view = subscriptionView

const invalidLink = (request: HttpServerRequest.HttpServerRequest) =>
  wantsHtml(request.headers.accept)
    ? Effect.succeed(Pages.invalidLink())
    : Effect.fail(apiError("token_invalid", "This link is unknown, already used or expired.", { param: "token" }))

const parseToken = Schema.decodeUnknownOption(Token)
const parseFeed = Schema.decodeUnknownOption(FeedName)
const DefaultListLimit = 10

// The token of a POST: from the query or the body, the same in both when both carry one.
const postedToken = (query: string | undefined, body: string | undefined) => {
  if (query !== undefined && body !== undefined && query !== body) {
    return Effect.fail(
      apiError("parameter_invalid", "token is in the query and in the body with different values: send it once.", {
        param: "token"
      })
    )
  }
  const token = query ?? body
  return token === undefined
    ? Effect.fail(apiError("parameter_missing", "Missing required parameter: token.", { param: "token" }))
    : Effect.succeed(token)
}

export const subscribeAnswer = (subscriptions: Subscriptions, payload: SubscribeRequest) =>
  subscriptions.subscribe(payload).pipe(
    Effect.map((receipt) =>
      new SubscribeResponse({ message: pendingMessage(receipt.email), subscription: receipt }, true)
    ),
    Effect.catchTag(
      "FeedNotFound",
      () => Effect.fail(apiError("resource_missing", "No feed has this name.", { param: "feed" }))
    )
  )

export const SubscriptionsLive = group(Api, "subscriptions", (handlers) =>
  Effect.gen(function*() {
    const subscriptions = yield* Subscriptions
    const directory = yield* SubscriberDirectory

    const withToken = <A, E, R>(
      request: HttpServerRequest.HttpServerRequest,
      raw: string,
      use: (token: Token) => Effect.Effect<A, E, R>
    ) => Option.match(parseToken(raw), { onNone: () => invalidLink(request), onSome: use })

    const redeem = (
      request: HttpServerRequest.HttpServerRequest,
      raw: string,
      action: (token: Token) => Effect.Effect<Subscription, { readonly _tag: "InvalidToken" }>,
      html: (s: Subscription) => ReturnType<typeof Pages.confirmed>,
      message: string
    ) =>
      withToken(request, raw, (token) =>
        action(token).pipe(
          Effect.map((s) => (wantsHtml(request.headers.accept)
            ? html(s)
            : new SubscriptionEnvelope({ message, subscription: view(s) }))
          ),
          Effect.catchTag("InvalidToken", () => invalidLink(request))
        ))

    return handlers
      .handle("subscribe", ({ payload }) => subscribeAnswer(subscriptions, payload))
      .handle("signupPage", ({ urlParams }) =>
        Option.match(parseFeed(urlParams.feed ?? "default"), {
          onNone: () => Effect.succeed(unknownFeed()),
          onSome: (name) =>
            subscriptions.feed(name).pipe(
              Effect.map((feed) => signupPage({ feed: feed.name, heading: `Subscribe to ${feed.title}` })),
              Effect.catchTag("FeedNotFound", () => Effect.succeed(unknownFeed()))
            )
        }))
      .handle("list", ({ headers, urlParams }) => {
        const { feed, limit, starting_after, status } = urlParams
        if (headers.accept?.includes("text/csv")) {
          if (feed === undefined) {
            return Effect.fail(
              apiError("parameter_missing", "Missing required parameter: feed (the CSV export is per feed).", {
                param: "feed"
              })
            )
          }
          return directory.exportFeed(feed, status ?? "active").pipe(
            Effect.map((rows) =>
              HttpServerResponse.stream(subscribersCsv(rows), {
                contentType: "text/csv; charset=utf-8",
                headers: {
                  "content-disposition": `attachment; filename="${feed}-subscribers.csv"`,
                  "cache-control": "no-store"
                }
              })
            ),
            Effect.catchTag("FeedNotFound", () =>
              Effect.fail(apiError("resource_missing", "No feed has this name.", { param: "feed" })))
          )
        }
        return Effect.map(
          directory.list({ feed, status, startingAfter: starting_after, limit: limit ?? DefaultListLimit }),
          (page) => ({ object: "list" as const, data: page.data.map(view), has_more: page.hasMore })
        )
      })
      .handle("confirmPage", ({ request, urlParams }) =>
        withToken(request, urlParams.token, (token) =>
          Effect.flatMap(
            subscriptions.pendingConfirmation(token),
            Option.match({
              onNone: () =>
                invalidLink(request),
              onSome: (s) => Effect.succeed(Pages.confirm(token, s.feed, s.email))
            })
          )))
      .handle("confirm", ({ payload, request, urlParams }) =>
        Effect.flatMap(postedToken(urlParams.token, payload.token), (token) =>
          redeem(request, token, subscriptions.confirm, (s) =>
            Pages.confirmed(s.feed), "Subscription confirmed.")))
      .handle("unsubscribePage", ({ request, urlParams }) =>
        withToken(request, urlParams.token, (token) =>
          Effect.flatMap(
            subscriptions.pendingUnsubscribe(token),
            Option.match({
              onNone: () =>
                invalidLink(request),
              onSome: (s) =>
                Effect.succeed(Pages.unsubscribe(token, s.feed))
            })
          )))
      .handle("unsubscribe", ({ payload, request, urlParams }) =>
        Effect.flatMap(postedToken(urlParams.token, payload.token), (token) =>
          redeem(request, token, subscriptions.unsubscribe, (s) =>
            Pages.unsubscribed(s.feed), "Unsubscribed.")))
      .handle("get", ({ path }) =>
        subscriptions.get(path.id).pipe(
          Effect.map((s) =>
            new SubscriptionEnvelope({ subscription: view(s) })
          ),
          Effect.catchTag("SubscriptionNotFound", () =>
            Effect.fail(apiError("resource_missing", "No subscription has this id.", { param: "id" })))
        ))
  }))
