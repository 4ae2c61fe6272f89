import { Effect, Schema, Stream } from "effect"
import { FeedName } from "../../core/subscriptions/Feed.ts"
import { SubscriberDirectory } from "../../core/subscriptions/SubscriberDirectory.ts"
import { subscribersCsv } from "../SubscribersCsv.ts"

// `npm run cli -- subscribers export --feed NAME`: the feed's active subscribers as CSV on stdout, the same CSV
// as GET /subscriptions?feed=NAME with Accept: text/csv. Streamed: one page of rows in memory at a time, each
// written once the output has taken the one before (a pipe into a slow reader holds the export, not memory).
// Fails with FeedNotFound for a feed that does not exist, and a ParseError for a name no feed can have.
export const subscribersExport = (
  feed: string,
  out: NodeJS.WritableStream = process.stdout
) =>
  Effect.gen(function*() {
    const name = yield* Schema.decodeUnknown(FeedName)(feed)
    const rows = yield* Effect.flatMap(SubscriberDirectory, (directory) => directory.exportFeed(name, "active"))
    yield* Stream.runForEach(subscribersCsv(rows), (chunk) => write(out, chunk))
  })

const write = (out: NodeJS.WritableStream, chunk: Uint8Array) =>
  Effect.async<void>((resume) => {
    if (out.write(chunk)) resume(Effect.void)
    else out.once("drain", () => resume(Effect.void))
  })
