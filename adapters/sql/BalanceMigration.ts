import { SqlClient } from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { BalanceStatuses } from "../../core/payments/Transfer.ts"
import { Dialect, sqlStrings } from "./Dialect.ts"

// The balances (decision 0050): one row per client, recipient merchant and currency, which core's balance
// changes move in the transactions of the settles and refunds that change them, so a balance is read, never
// summed. Computed once here from the transfers as they are: those in BalanceStatuses, net of their refunds.
// A total may pass 2^63 where a transfer's amount cannot: exact decimals on the servers, decimal text on SQLite
// (whose integers would turn into floats on overflow; its store adds in JavaScript's bigint).
export const m0010_balances = Effect.gen(function*() {
  const sql = yield* SqlClient
  const { mysql, pg, types: T } = yield* Dialect
  const total = sql.literal(pg ? "NUMERIC(40, 0)" : mysql ? "DECIMAL(40, 0)" : "TEXT")
  yield* sql`CREATE TABLE balances (
    client_id ${T.key} NOT NULL REFERENCES api_clients (id),
    merchant_id ${T.key} NOT NULL,
    currency ${T.key} NOT NULL,
    amount ${total} NOT NULL,
    PRIMARY KEY (client_id, merchant_id, currency)
  )${T.table}`
  yield* sql`INSERT INTO balances (client_id, merchant_id, currency, amount)
    SELECT client_id, recipient_merchant_id, currency, SUM(amount - amount_refunded) FROM transfers
    WHERE status IN (${sql.literal(sqlStrings(BalanceStatuses))})
    GROUP BY client_id, recipient_merchant_id, currency`
})
