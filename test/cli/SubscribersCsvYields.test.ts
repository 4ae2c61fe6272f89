// The CSV export (apps/SubscribersCsv.ts, for GET /subscriptions as CSV and the CLI) over real SQLite storage,
// whose reads are synchronous: between two pages it gives the event loop a turn, so a request that arrives
// during a long export (a timer stands for it here) is answered after at most a page, not after the export.
import { SqlClient } from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import { subscribersCsv } from "../../apps/SubscribersCsv.ts"
import { FeedName } from "../../core/subscriptions/Feed.ts"
import { ExportPageSize, SubscriberDirectory } from "../../core/subscriptions/SubscriberDirectory.ts"
import { tempSqliteStore } from "../storage/TempSqlite.ts"

const testLayer = () => SubscriberDirectory.Default.pipe(Layer.provideMerge(tempSqliteStore()))

// `pages` full export pages of active subscribers, straight into the store, and their export.
const pages = 20
const activeExport = Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${ExportPageSize * pages})
    INSERT INTO subscriptions (email, email_key, name, feed, status, created_at, updated_at)
    SELECT 'p' || i || '@example.com', 'p' || i || '@example.com', 'P' || i, 'default', 'active', 0, 0 FROM n`
  return yield* (yield* SubscriberDirectory).exportFeed(FeedName.make("default"), "active")
})

describe("the subscribers export", () => {
  it.live("lets the event loop run between pages", () =>
    Effect.gen(function*() {
      const rows = yield* activeExport
      let written = 0
      const seen: Array<number> = []
      const timer = setTimeout(() => seen.push(written), 0)
      yield* Stream.runForEach(subscribersCsv(rows), () => Effect.sync(() => written++))
      clearTimeout(timer)
      // The header, then a chunk per page.
      assert.strictEqual(written, pages + 1)
      assert.deepStrictEqual(seen.length, 1)
      assert.isAtMost(seen[0]!, 2, `the timer ran after ${seen[0]} of ${written} chunks`)
    }).pipe(Effect.provide(testLayer())), 60_000)

  // What the Node app sends (apps/node/main.ts): the stream as a web ReadableStream, piped to the socket. A page is
  // read from the store only when the reader asks for more, so a client that stops reading stops the export.
  it.live("reads a page only as the reader takes the last", () =>
    Effect.gen(function*() {
      const rows = yield* activeExport
      let pulled = 0
      const counted = Stream.mapChunks(rows, (page) => (pulled++, page))
      const reader = Stream.toReadableStream(subscribersCsv(counted)).getReader()
      for (let read = 1; read <= 5; read++) {
        yield* Effect.promise(() => reader.read())
        yield* Effect.sleep(10)
        // The header, then a page per read; at most one page read ahead.
        assert.isAtMost(pulled, read + 1, `${pulled} pages read after ${read} chunks taken`)
      }
      yield* Effect.promise(() => reader.cancel())
    }).pipe(Effect.provide(testLayer())), 60_000)
})
