// The console's pages of transfers over a listing like Transfers.list (newest first, filtered by reference, status
// and created range, `startingAfter`, at most `limit`): each page is one read of a page, and following the pages
// shows every matching transfer once, in order.
import { assert, describe, it } from "@effect/vitest"
import { DateTime, Effect } from "effect"
import { PageSize, transferPage } from "../../apps/console/TransferPaging.ts"
import type { ClientId, Transfer, TransferId, TransferStatus } from "../../core/payments/Transfer.ts"
import type { Transfers } from "../../core/payments/Transfers.ts"

const client = "cl_xxxxxxxxxxxxxxxxxxxxxxxx" as ClientId
const statuses: ReadonlyArray<TransferStatus> = ["approved", "declined", "pending", "unknown"]
// Newest first, one an hour; every 97th declined, so that a page of them spans thousands of others.
const T0 = Date.UTC(2026, 0, 1)
const all = Array.from({ length: 2500 }, (_, i) => ({
  id: `tr_${String(2500 - i).padStart(24, "0")}` as TransferId,
  reference: `ref-${i}`,
  status: i % 97 === 0 ? "declined" : statuses[i % 2 === 0 ? 0 : 2],
  createdAt: DateTime.unsafeMake(T0 + (2500 - i) * 3_600_000)
})) as unknown as ReadonlyArray<Transfer>

let reads = 0
const list: Transfers["list"] = (_client, query) =>
  Effect.sync(() => {
    reads++
    assert.strictEqual(query.limit, PageSize)
    const start = query.startingAfter === undefined ? 0 : all.findIndex((t) => t.id === query.startingAfter) + 1
    const matching = all.slice(start).filter((t) =>
      (query.reference === undefined || t.reference === query.reference) &&
      (query.status === undefined || t.status === query.status) &&
      (query.createdFrom === undefined || !DateTime.lessThan(t.createdAt, query.createdFrom)) &&
      (query.createdBefore === undefined || DateTime.lessThan(t.createdAt, query.createdBefore))
    )
    return { data: matching.slice(0, query.limit), hasMore: matching.length > query.limit }
  })

const follow = (status?: TransferStatus, dates: { from?: DateTime.Utc; until?: DateTime.Utc } = {}) =>
  Effect.gen(function*() {
    const seen: Array<Array<string>> = []
    let after: TransferId | undefined
    for (let pages = 0; pages < 200; pages++) {
      reads = 0
      const page = yield* transferPage(list, client, {
        ...(status === undefined ? {} : { status }),
        ...dates,
        ...(after === undefined ? {} : { after })
      })
      assert.strictEqual(reads, 1, "a page is one read")
      assert.isAtMost(page.transfers.length, PageSize)
      seen.push(page.transfers.map((t) => t.id))
      if (page.nextAfter === undefined) return seen
      assert.lengthOf(page.transfers, PageSize, "a page that offers the next is full")
      after = page.nextAfter
    }
    throw new Error("the pages never ended")
  })

describe("the console's transfer pages", () => {
  it.effect("without a filter: pages of 25, every transfer once, newest first", () =>
    Effect.gen(function*() {
      const pages = yield* follow()
      assert.deepStrictEqual(pages.flat(), all.map((t) => t.id))
      assert.isTrue(pages.slice(0, -1).every((p) => p.length === PageSize))
    }))

  it.effect("by status: every matching transfer once, in order, however sparse", () =>
    Effect.gen(function*() {
      for (const status of ["declined", "approved", "pending", "unknown"] as const) {
        const pages = yield* follow(status)
        assert.deepStrictEqual(pages.flat(), all.filter((t) => t.status === status).map((t) => t.id), status)
      }
    }))

  it.effect("by dates: those made from the first and before the second, with or without a status", () =>
    Effect.gen(function*() {
      const from = DateTime.unsafeMake(T0 + 400 * 3_600_000)
      const until = DateTime.unsafeMake(T0 + 1900 * 3_600_000)
      const within = (t: Transfer) => !DateTime.lessThan(t.createdAt, from) && DateTime.lessThan(t.createdAt, until)
      const pages = yield* follow(undefined, { from, until })
      assert.deepStrictEqual(pages.flat(), all.filter(within).map((t) => t.id))
      assert.lengthOf(pages.flat(), 1500)
      const declined = yield* follow("declined", { from, until })
      assert.deepStrictEqual(
        declined.flat(),
        all.filter((t) => within(t) && t.status === "declined").map((t) => t.id)
      )
      assert.deepStrictEqual((yield* follow(undefined, { from: DateTime.unsafeMake(T0 + 9e10) })).flat(), [])
    }))

  it.effect("a reference finds its transfer", () =>
    Effect.gen(function*() {
      const page = yield* transferPage(list, client, { reference: "ref-1234" as Transfer["reference"] })
      assert.deepStrictEqual(page.transfers.map((t) => t.reference), ["ref-1234"])
      assert.isUndefined(page.nextAfter)
    }))
})
