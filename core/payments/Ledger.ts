import type { CurrencyCode } from "./Currency.ts"
import { BalanceStatuses, type ClientId, type Transfer } from "./Transfer.ts"

// What a change of one transfer moves in its client's balance for one recipient merchant and currency. Core
// decides it; a storage adds it to the balance it keeps, in the transaction that made the change, so that a
// balance is read whole instead of summed (decision 0050).
export interface BalanceChange {
  readonly clientId: ClientId
  readonly merchantId: string
  readonly currency: CurrencyCode
  readonly amount: bigint
}

// What a transfer counts in its client's balance: its amount net of refunds, while in BalanceStatuses.
export const balanceShare = (t: Transfer): bigint =>
  BalanceStatuses.includes(t.status) ? t.amount - t.amountRefunded : 0n

// The balance change from `before` (undefined: no transfer yet) to `after`; undefined when it moves nothing.
export const balanceChange = (before: Transfer | undefined, after: Transfer): BalanceChange | undefined => {
  const amount = balanceShare(after) - (before === undefined ? 0n : balanceShare(before))
  return amount === 0n
    ? undefined
    : { clientId: after.clientId, merchantId: after.recipient.merchant_id, currency: after.currency, amount }
}
