import { HttpServerResponse } from "@effect/platform"
import { DateTime, Effect } from "effect"
import { SiteSettings } from "../../../core/shared/SiteSettings.ts"
import type { Feed } from "../../../core/subscriptions/Feed.ts"
import { Subscriptions } from "../../../core/subscriptions/Subscriptions.ts"
import { Api } from "../Api.ts"
import { apiError } from "../pipeline/ApiError.ts"
import { group } from "../pipeline/ApiHandlers.ts"
import { cacheableJson } from "../pipeline/Caching.ts"
import { jsonAnswer } from "../pipeline/TextBody.ts"

export const renderFeed = (f: Feed) => ({
  name: f.name,
  title: f.title,
  created: DateTime.formatIso(f.createdAt),
  updated: DateTime.formatIso(f.updatedAt)
})

const feedNotFound = () => apiError("resource_missing", "No feed has this name.", { param: "name" })

export const FeedsLive = group(Api, "feeds", (handlers) =>
  Effect.gen(function*() {
    const subscriptions = yield* Subscriptions
    const { baseUrl } = yield* SiteSettings
    const publicCache = (now: DateTime.Utc) => ({ public: true, maxAgeSeconds: 60, now }) as const
    return handlers
      .handle("list", ({ headers }) =>
        Effect.gen(function*() {
          const { feeds, lastModified } = yield* subscriptions.feeds
          const body = JSON.stringify({ feeds: feeds.map(renderFeed) })
          return cacheableJson(headers, body, lastModified, publicCache(yield* DateTime.now))
        }))
      .handle("get", ({ headers, path }) =>
        Effect.gen(function*() {
          const feed = yield* subscriptions.feed(path.name).pipe(
            Effect.catchTag("FeedNotFound", () => Effect.fail(feedNotFound()))
          )
          const body = JSON.stringify({ feed: renderFeed(feed) })
          return cacheableJson(headers, body, feed.updatedAt, publicCache(yield* DateTime.now))
        }))
      .handle("put", ({ path, payload }) =>
        Effect.map(subscriptions.putFeed(path.name, payload.title), ({ created, feed }) =>
          jsonAnswer({ feed: renderFeed(feed) }, {
            status: created ? 201 : 200,
            headers: created ? { location: `${baseUrl}/feeds/${feed.name}` } : {}
          })))
      .handle("delete", ({ path }) =>
        subscriptions.deleteFeed(path.name).pipe(
          Effect.as(HttpServerResponse.empty({ status: 204 })),
          Effect.catchTag("FeedNotFound", () =>
            Effect.fail(feedNotFound()))
        ))
  }))
