import { Chunk, DateTime, Effect, Option, Stream } from "effect"
import type { Email } from "../shared/Email.ts"
import { FeedNotFound } from "./Errors.ts"
import type { FeedName } from "./Feed.ts"
import type { Subscription, SubscriptionId, SubscriptionStatus } from "./Subscription.ts"
import type { SubscriberHistory } from "./SubscriptionStorage.ts"
import { type SubscriptionQuery, SubscriptionStore } from "./SubscriptionStore.ts"

// Rows read per query when a whole feed is exported: the export holds one page at a time, whatever the size
// of the feed.
export const ExportPageSize = 500

// When an active subscription was confirmed, from what the stores keep: its confirmation link used last. A link
// is also marked used when it is voided, but only as the address leaves (or its feed goes), after which the
// subscription is active again only through a later link's click.
export const confirmedAt = (
  subscription: Subscription,
  history: SubscriberHistory
): DateTime.Utc | undefined => {
  if (subscription.status !== "active") return undefined
  const used = history.links.flatMap((l) => l.usedAt === undefined ? [] : [l.usedAt])
  return used.length === 0 ? undefined : used.reduce((a, b) => DateTime.max(a, b))
}

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

    // The list owner's console (docs/console.md): a feed's counts by status, one address's subscription, a
    // subscription with its history, and the outbox as it stands, "today" being the UTC day.
    const counts = (feed: FeedName) => store.countByStatus(feed)
    const find = (email: Email, feed: FeedName) => store.findByEmail(email, feed)
    const subscriber = (id: SubscriptionId) =>
      Effect.flatMap(
        store.get(id),
        Option.match({
          onNone: () => Effect.succeedNone,
          onSome: (subscription) => Effect.map(store.history(id), (history) => Option.some({ subscription, history }))
        })
      )
    const outbox = (failingShown: number) =>
      Effect.gen(function*() {
        const today = DateTime.startOf(yield* DateTime.now, "day")
        return {
          today,
          summary: yield* store.outboxSummary(today),
          failing: yield* store.failingMails(failingShown)
        }
      })

    return { list, exportFeed, counts, find, subscriber, outbox } as const
  })
}) {}
