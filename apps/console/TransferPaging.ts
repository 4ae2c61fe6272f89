import { type DateTime, Effect } from "effect"
import type { ClientId, Transfer, TransferId, TransferStatus } from "../../core/payments/Transfer.ts"
import type { Transfers } from "../../core/payments/Transfers.ts"

export const PageSize = 25

export interface TransferPage {
  readonly transfers: ReadonlyArray<Transfer>
  // The cursor of the next page, when there is one.
  readonly nextAfter: TransferId | undefined
}

// One page of a client's transfers, newest first, through the API's own listing (Transfers.list), whose store
// applies the filters in its one indexed read.
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
  Effect.map(
    list(client, {
      ...(query.reference === undefined ? {} : { reference: query.reference }),
      ...(query.status === undefined ? {} : { status: query.status }),
      ...(query.from === undefined ? {} : { createdFrom: query.from }),
      ...(query.until === undefined ? {} : { createdBefore: query.until }),
      limit: PageSize,
      ...(query.after === undefined ? {} : { startingAfter: query.after })
    }),
    ({ data, hasMore }) => ({ transfers: data, nextAfter: hasMore ? data[data.length - 1]?.id : undefined })
  )
