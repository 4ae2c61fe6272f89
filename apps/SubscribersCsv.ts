import { Chunk, DateTime, Duration, Effect, Stream } from "effect"
import type { Subscription } from "../core/subscriptions/Subscription.ts"

// A feed's subscribers as CSV (RFC 4180: CRLF line ends, fields quoted when they hold a comma, a quote or a
// line break), one chunk of text per page the store read, with a turn of the event loop after each. A field that starts like a formula (= + - @, tab,
// CR) gets a leading apostrophe, so that a spreadsheet shows a name such as "=HYPERLINK(...)" instead of
// running it.
export const CsvHeader = "id,email,name,feed,status,created,updated\r\n"

const cell = (value: string) => {
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, "\"\"")}"` : safe
}

export const csvLine = (s: Subscription) =>
  `${s.id},${cell(s.email)},${cell(s.name)},${cell(s.feed)},${s.status},${DateTime.formatIso(s.createdAt)},${
    DateTime.formatIso(s.updatedAt)
  }\r\n`

const encoder = new TextEncoder()

// A timer's turn of the event loop: the requests that arrived while a page was read and written (on SQLite, on
// this thread) are answered before the next page is read, so a long export holds no one up for more than a page.
const turn = Effect.sleep(Duration.zero)

export const subscribersCsv = <E>(subscriptions: Stream.Stream<Subscription, E>): Stream.Stream<Uint8Array, E> =>
  Stream.concat(
    Stream.succeed(encoder.encode(CsvHeader)),
    Stream.mapChunksEffect(
      subscriptions,
      (page) =>
        Chunk.isEmpty(page)
          ? Effect.succeed(Chunk.empty())
          : Effect.as(turn, Chunk.of(encoder.encode(Chunk.join(Chunk.map(page, csvLine), ""))))
    )
  )
