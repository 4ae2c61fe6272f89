import { Chunk, Effect, Option, Stream } from "effect"
import { FeedNotFound } from "./Errors.ts"
import type { FeedName } from "./Feed.ts"
import type { Subscription, SubscriptionStatus } from "./Subscription.ts"
import { type SubscriptionQuery, SubscriptionStore } from "./SubscriptionStore.ts"

// Rows read per query when a whole feed is exported: the export holds one page at a time, whatever the size
// of the feed.
export const ExportPageSize = 500

export interface SubscriptionPage {
  readonly data: ReadonlyArray<Subscription>
  readonly hasMore: boolean
}

// The operator's view of the subscribers: pages by cursor, and a whole feed as a stream.
export class SubscriberDirectory extends Effect.Service<SubscriberDirectory>()("SubscriberDirectory", {
  effect: Effect.gen(function*() {
    const store = yield* SubscriptionStore

    // One row more than asked tells whether there is a next page.
    const list = (query: SubscriptionQuery): Effect.Effect<SubscriptionPage> =>
      Effect.map(store.listSubscriptions({ ...query, limit: query.limit + 1 }), (rows) => ({
        data: rows.slice(0, query.limit),
        hasMore: rows.length > query.limit
      }))

    const exportFeed = (feed: FeedName, status: SubscriptionStatus) =>
      Effect.map(
        Effect.filterOrFail(store.findFeed(feed), Option.isSome, () => new FeedNotFound({ feed })),
        () =>
          Stream.paginateChunkEffect(undefined as Subscription["id"] | undefined, (startingAfter) =>
            Effect.map(
              store.listSubscriptions({
                feed,
                status,
                limit: ExportPageSize,
                ...(startingAfter ? { startingAfter } : {})
              }),
              (rows) =>
                [
                  Chunk.unsafeFromArray(rows),
                  rows.length < ExportPageSize ? Option.none() : Option.some(rows[rows.length - 1]!.id)
                ] as const
            ))
      )

    return { list, exportFeed } as const
  })
}) {}
