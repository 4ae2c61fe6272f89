import { assert, describe, it } from "@effect/vitest"
import { readdirSync, readFileSync } from "node:fs"
import { resolve } from "node:path"
import { RefundStatus } from "../../core/payments/Refund.ts"
import { TransferStatus } from "../../core/payments/Transfer.ts"
import { SubscriptionStatus } from "../../core/subscriptions/Subscription.ts"

// The storage adapters name no status of core: statuses, the unsettled condition, the balance and the tokens'
// status come from core (UnsettledTransfers, UnsettledRefunds, BalanceStatuses, AwaitsConfirmation), so a status
// added to core needs no edit in any adapter (docs/adapters.md). The migrations alone may name statuses (their
// CHECK constraints and partial indexes are the schema's history). The card network adapters speak a
// processor's wire protocol, whose words are its own.
const root = resolve(import.meta.dirname, "../..")
const storage = ["memory", "sql", "sqlite", "postgres", "mariadb"]
const migrations = /Migration/
const statuses = [...new Set([...TransferStatus.literals, ...RefundStatus.literals, ...SubscriptionStatus.literals])]
const quoted = new RegExp(`["'\`](${statuses.join("|")})["'\`]`, "g")

const sources = storage.flatMap((folder) =>
  readdirSync(resolve(root, "adapters", folder)).filter((f) => f.endsWith(".ts") && !migrations.test(f)).map((f) =>
    `adapters/${folder}/${f}`
  )
)

describe("the storage adapters", () => {
  it("are all scanned", () => {
    assert.isAbove(sources.length, 30)
    assert.include(sources, "adapters/postgres/PgTransferStore.ts")
  })

  it("name no status of core outside the migrations", () => {
    const found = sources.flatMap((file) =>
      readFileSync(resolve(root, file), "utf8").split("\n").flatMap((line, i) =>
        [...line.matchAll(quoted)].map((m) => `${file}:${i + 1}: ${m[0]}`)
      )
    )
    assert.deepStrictEqual(found, [])
  })
})
