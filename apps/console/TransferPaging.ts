import { DateTime, Effect } from "effect"
import type { ClientId, Transfer, TransferId, TransferStatus } from "../../core/payments/Transfer.ts"
import type { Transfers } from "../../core/payments/Transfers.ts"

export const PageSize = 25
// A status or end-date filter reads the client's transfers in batches and keeps those that match; a page reads
// at most this many batches, then offers the next page from where it stopped.
const Batch = 100
const MaxBatches = 10

export interface TransferPage {
  readonly transfers: ReadonlyArray<Transfer>
  // The cursor of the next page, when there may be one.
  readonly nextAfter: TransferId | undefined
}

// One page of a client's transfers, newest first, through the API's own listing (Transfers.list).
export const transferPage = (
  list: Transfers["list"],
  client: ClientId,
  query: {
    readonly reference?: Transfer["reference"]
    readonly status?: TransferStatus
    // Made at or after `from` and before `until`.
    readonly from?: DateTime.Utc
    readonly until?: DateTime.Utc
    readonly after?: TransferId
  }
): Effect.Effect<TransferPage> =>
  Effect.gen(function*() {
    const { from, status, until } = query
    const filtered = status !== undefined || until !== undefined
    const shown: Array<Transfer> = []
    let cursor = query.after
    for (let batch = 0; batch < MaxBatches; batch++) {
      const { data, hasMore } = yield* list(client, {
        ...(query.reference === undefined ? {} : { reference: query.reference }),
        limit: filtered ? Batch : PageSize,
        ...(cursor === undefined ? {} : { startingAfter: cursor })
      })
      for (const [i, t] of data.entries()) {
        // Newest first: once one is older than `from`, all the rest are.
        if (from !== undefined && DateTime.lessThan(t.createdAt, from)) {
          return { transfers: shown, nextAfter: undefined }
        }
        if (until !== undefined && !DateTime.lessThan(t.createdAt, until)) continue
        if (status !== undefined && t.status !== status) continue
        shown.push(t)
        if (shown.length === PageSize) {
          return { transfers: shown, nextAfter: hasMore || i < data.length - 1 ? t.id : undefined }
        }
      }
      if (!hasMore || data.length === 0) return { transfers: shown, nextAfter: undefined }
      cursor = data[data.length - 1]!.id
    }
    return { transfers: shown, nextAfter: cursor }
  })
