// The CLI's export (apps/cli/SubscribersExport.ts) over real SQLite storage, into a slow writable stream: every
// active subscriber of the feed, in order, as the HTTP export writes them.
import { SqlClient } from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { Writable } from "node:stream"
import { subscribersExport } from "../../apps/cli/SubscribersExport.ts"
import { CsvHeader } from "../../apps/SubscribersCsv.ts"
import { FeedNotFound } from "../../core/subscriptions/Errors.ts"
import { ExportPageSize, SubscriberDirectory } from "../../core/subscriptions/SubscriberDirectory.ts"
import { tempSqliteStore } from "../storage/TempSqlite.ts"

const testLayer = () => SubscriberDirectory.Default.pipe(Layer.provideMerge(tempSqliteStore()))

// A reader that takes one chunk per tick and says "full" after each: the export must wait for drain.
const slowSink = () => {
  const chunks: Array<Buffer> = []
  const sink = new Writable({
    highWaterMark: 1,
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk)
      setImmediate(done)
    }
  })
  return { sink, text: () => Buffer.concat(chunks).toString("utf8"), chunks }
}

describe("subscribers export (CLI)", () => {
  it.effect("writes the feed's active subscribers as CSV, page by page, waiting for the reader", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const total = ExportPageSize * 2 + 3
      yield* sql`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${total})
        INSERT INTO subscriptions (email, email_key, name, feed, status, created_at, updated_at)
        SELECT 'p' || i || '@example.com', 'p' || i || '@example.com', 'P' || i, 'default',
          CASE WHEN i % 10 = 0 THEN 'pending' ELSE 'active' END, 0, 0 FROM n`
      const { chunks, sink, text } = slowSink()
      yield* subscribersExport("default", sink)
      const lines = text().split("\r\n")
      assert.strictEqual(`${lines[0]}\r\n`, CsvHeader)
      const active = Array.from({ length: total }, (_, i) => i + 1).filter((i) => i % 10 !== 0)
      assert.deepStrictEqual(lines.slice(1, -1).map((l) => l.split(",")[1]), active.map((i) => `p${i}@example.com`))
      assert.strictEqual(
        lines[1],
        "1,p1@example.com,P1,default,active,1970-01-01T00:00:00.000Z,1970-01-01T00:00:00.000Z"
      )
      assert.isAtLeast(chunks.length, 3, "a chunk per page")
    }).pipe(Effect.provide(testLayer())))

  it.effect("fails with FeedNotFound for an unknown feed, writing nothing", () =>
    Effect.gen(function*() {
      const { sink, text } = slowSink()
      const error = yield* Effect.flip(subscribersExport("no-such-feed", sink))
      assert.instanceOf(error, FeedNotFound)
      assert.strictEqual(text(), "")
      const invalid = yield* Effect.flip(subscribersExport("Not A Feed", sink))
      assert.strictEqual(invalid._tag, "ParseError")
    }).pipe(Effect.provide(testLayer())))
})
