// Refunds racing on one transfer from two instances (two pools on one server database): the transfer's row lock
// is what keeps them from together refunding more than its amount. Shared by the PostgreSQL and MariaDB suites.
import { assert } from "@effect/vitest"
import { Context, DateTime, Effect, Option } from "effect"
import { CurrencyCode } from "../../core/payments/Currency.ts"
import { RefundId, settledRefund } from "../../core/payments/Refund.ts"
import { RefundStore } from "../../core/payments/RefundStore.ts"
import { ClientId, Reference, Transfer, TransferId } from "../../core/payments/Transfer.ts"
import { TransferStore } from "../../core/payments/TransferStore.ts"

const now = DateTime.unsafeMake(Date.UTC(2025, 0, 15, 12))
const client = ClientId.make(`cl_${"refunder".padEnd(24, "x")}`)

const transfer = (round: number) =>
  new Transfer({
    id: TransferId.make(`tr_${`refunded${round}`.padEnd(24, "x")}`),
    clientId: client,
    reference: Reference.make(`refunded-${round}`),
    amount: 1000n,
    currency: CurrencyCode.make("USD"),
    status: "approved",
    sender: {
      first_name: "Ann",
      email: "ann@example.com",
      card: { brand: "visa", last4: "4242", exp_month: 12, exp_year: 2030, fingerprint: "fp" }
    },
    recipient: { first_name: "Bob", email: "bob@example.com", merchant_id: "merchant-a" },
    authorizationCode: "AUTH",
    createdAt: now
  })

// Five transfers of 10.00 USD, each refunded by 16 requests of 1.00 to 5.00 at once, half through each pool,
// while the refunds already made fail (giving their amount back) through the other pool.
export const refundsRacingOverTwoPools = (pools: ReadonlyArray<Context.Context<TransferStore | RefundStore>>) =>
  Effect.gen(function*() {
    const transfers = pools.map((p) => Context.get(p, TransferStore))
    const refunds = pools.map((p) => Context.get(p, RefundStore))
    yield* transfers[0]!.createClient({ id: client, name: "Refunder" }, "hash-refunder", now)
    for (let round = 0; round < 5; round++) {
      const t = transfer(round)
      yield* transfers[0]!.record(t)
      const openings = yield* Effect.all(
        Array.from({ length: 16 }, (_, i) =>
          refunds[i % 2]!.open({
            client,
            transfer: t.id,
            id: RefundId.make(`re_${`r${round}n${i}`.padEnd(24, "x")}`),
            amount: `${(i % 5) + 1}.00`,
            reason: undefined,
            claim: undefined
          }, now)),
        { concurrency: "unbounded" }
      )
      const made = openings.flatMap((o) => (o._tag === "Opened" ? [o.refund] : []))
      for (const o of openings) {
        if (o._tag === "Refused") assert.oneOf(o.reason._tag, ["AmountTooLarge", "TransferAlreadyRefunded"])
      }
      const sum = made.reduce((x, r) => x + r.amount, 0n)
      assert.isAtMost(Number(sum), 1000, `round ${round}`)
      const refundedOf = (store: number) =>
        Effect.map(transfers[store]!.get(client, t.id), (found) => Option.getOrThrow(found).amountRefunded)
      assert.strictEqual(yield* refundedOf(1), sum, `round ${round}`)
      // The first half fail through one pool while new refunds are opened through the other.
      const failing = made.slice(0, Math.ceil(made.length / 2))
      const more = yield* Effect.all(
        [
          ...failing.map((r) =>
            Effect.as(refunds[0]!.settle(settledRefund(r, { _tag: "Failed", reason: "declined" }), "pending"), 0n)
          ),
          ...Array.from({ length: 8 }, (_, i) =>
            Effect.map(
              refunds[1]!.open({
                client,
                transfer: t.id,
                id: RefundId.make(`re_${`r${round}m${i}`.padEnd(24, "x")}`),
                amount: "1.00",
                reason: undefined,
                claim: undefined
              }, now),
              (o) => (o._tag === "Opened" ? o.refund.amount : 0n)
            ))
        ],
        { concurrency: "unbounded" }
      )
      const counted = sum - failing.reduce((x, r) => x + r.amount, 0n) + more.reduce((x, y) => x + y, 0n)
      assert.isAtMost(Number(counted), 1000, `round ${round}`)
      assert.strictEqual(yield* refundedOf(0), counted, `round ${round}`)
      const listed = yield* refunds[1]!.list(client, t.id, { limit: 100 })
      const live = listed.data.filter((r) => r.status !== "failed").reduce((x, r) => x + r.amount, 0n)
      assert.strictEqual(live, counted, `round ${round}`)
    }
  })
