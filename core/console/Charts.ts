import { DateTime, Effect } from "effect"
import type { ClientId } from "../payments/Transfer.ts"
import { TransferStore } from "../payments/TransferStore.ts"
import { SubscriptionStore } from "../subscriptions/SubscriptionStore.ts"
import { AdminOwner } from "../webhooks/Webhooks.ts"
import { lastDays, merchantFigures, newsletterFigures } from "./DailyFigures.ts"

// The figures of the console's charts over the last 30 UTC days, today included: two reads each.
export class Charts extends Effect.Service<Charts>()("Charts", {
  effect: Effect.gen(function*() {
    const transfers = yield* TransferStore
    const subscriptions = yield* SubscriptionStore
    return {
      merchant: (client: ClientId) =>
        Effect.gen(function*() {
          const { before, days, from } = lastDays(yield* DateTime.now)
          const [made, refunded] = yield* Effect.all([
            transfers.transferDays(client, from, before),
            transfers.refundDays(client, from, before)
          ])
          return merchantFigures(days, made, refunded)
        }),
      newsletter: Effect.gen(function*() {
        const { before, days, from } = lastDays(yield* DateTime.now)
        const [signups, events] = yield* Effect.all([
          subscriptions.signupDays(days[0]!, days[days.length - 1]! + 1),
          subscriptions.eventDays(AdminOwner, from, before)
        ])
        return newsletterFigures(days, signups, events)
      })
    } as const
  })
}) {}
