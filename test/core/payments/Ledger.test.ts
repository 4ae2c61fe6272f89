import { assert, describe, it } from "@effect/vitest"
import { DateTime } from "effect"
import * as fc from "effect/FastCheck"
import { balanceChange, balanceShare } from "../../../core/payments/Ledger.ts"
import {
  BalanceStatuses,
  ClientId,
  Reference,
  Transfer,
  TransferId,
  TransferStatus,
  UnsettledTransfers
} from "../../../core/payments/Transfer.ts"
import { currency } from "./arbitraries.ts"

const transfer = fc.record({
  status: fc.constantFrom(...TransferStatus.literals),
  amount: fc.bigInt({ min: 1n, max: 10n ** 15n }),
  refunded: fc.bigInt({ min: 0n, max: 10n ** 15n }),
  currency,
  merchant: fc.constantFrom("m-1", "m-2")
}).map(({ amount, currency, merchant, refunded, status }) =>
  new Transfer({
    id: TransferId.make(`tr_${"ledger".padEnd(24, "x")}`),
    clientId: ClientId.make(`cl_${"ledger".padEnd(24, "x")}`),
    reference: Reference.make("ref-ledger"),
    amount,
    amountRefunded: refunded > amount ? amount : refunded,
    currency,
    status,
    sender: {
      first_name: "Ann",
      email: "ann@example.com",
      card: { brand: "visa", last4: "4242", exp_month: 12, exp_year: 2030, fingerprint: "fp" }
    },
    recipient: { first_name: "Bob", email: "bob@example.com", merchant_id: merchant },
    createdAt: DateTime.unsafeMake(0)
  })
)

describe("balance changes", () => {
  it("a settle's change needs no read: no unsettled status counts in a balance", () => {
    for (const status of UnsettledTransfers.all) assert.notInclude(BalanceStatuses, status)
  })

  it.prop("the changes along any sequence of a transfer's states add up to its last share", [
    fc.array(transfer, { minLength: 1, maxLength: 8 })
  ], ([states]) => {
    const sameTransfer = states.map((t) =>
      new Transfer({ ...t, amount: states[0]!.amount, amountRefunded: t.amountRefunded % (states[0]!.amount + 1n) })
    )
    let total = 0n
    let before: Transfer | undefined
    for (const after of sameTransfer) {
      const change = balanceChange(before, after)
      if (change !== undefined) {
        assert.notStrictEqual(change.amount, 0n)
        assert.deepStrictEqual([change.clientId, change.merchantId, change.currency], [
          after.clientId,
          after.recipient.merchant_id,
          after.currency
        ])
        total += change.amount
      }
      before = after
    }
    assert.strictEqual(total, balanceShare(sameTransfer.at(-1)!))
  })
})
