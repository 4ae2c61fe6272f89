import { SqlClient } from "@effect/sql/SqlClient"
import { Effect, Layer } from "effect"
import type { CurrencyCode } from "../../core/payments/Currency.ts"
import type { ClientId, TransferId } from "../../core/payments/Transfer.ts"
import { TransferStorage, type TransferTx } from "../../core/payments/TransferStorage.ts"
import {
  answerColumns,
  KeyColumns,
  type KeyRow,
  listTransfers,
  outcomeRow,
  toKeyRecord,
  toTransfer,
  TransferColumns as Columns,
  type TransferRow,
  transferRow
} from "../sql/TransferRows.ts"
import { transactionOn } from "./MariaDbClient.ts"
import { mariaDbRefundStatements, mariaDbRefundStorage, refundCompound } from "./MariaDbRefundStatements.ts"
import { eventStatements, first, ms, type Statements, unitOfWork, unlessDuplicate } from "./MariaDbUnitOfWork.ts"

// The transfer storage on MariaDB, on @effect/sql. Keys and references are decided by unique constraints: the
// second of two first inserts waits for the first's row lock, then loses (1062) and answers false; keys are read
// FOR UPDATE while core judges them. A conditional update says whether it wrote by a locked read of the row
// first (no UPDATE ... RETURNING on MariaDB, no affected rows from @effect/sql-mysql2).
const TransferColumns = Columns.replaceAll(" AS TEXT)", " AS CHAR)")
const time = (n: number) => n

export const make = Effect.gen(function*() {
  const sql = yield* SqlClient
  const transaction = transactionOn(sql)
  const columns = sql.literal(TransferColumns)
  const keyColumns = sql.literal(KeyColumns)
  const keyWhere = (client: ClientId, key: string) => sql`client_id = ${client} AND idempotency_key = ${key}`
  const transferWhere = (client: ClientId, column: "id" | "reference", value: string) =>
    sql<TransferRow>`SELECT ${columns} FROM transfers WHERE client_id = ${client} AND ${sql(column)} = ${value}`.pipe(
      Effect.map((rows) => first(rows, toTransfer)),
      Effect.orDie
    )

  const statements: Statements<TransferTx> = {
    ...eventStatements(sql),
    ...mariaDbRefundStatements(sql, TransferColumns),
    insertKey: (client, claim, now) =>
      unlessDuplicate(
        Effect.as(
          sql`INSERT INTO idempotency_keys (client_id, idempotency_key, request_hash, request_id, started_at)
            VALUES (${client}, ${claim.key}, ${claim.requestHash}, ${claim.requestId}, ${ms(now)})`,
          true
        ),
        false
      ),
    lockKey: (client, key) =>
      Effect.map(
        sql<KeyRow>`SELECT ${keyColumns} FROM idempotency_keys WHERE ${keyWhere(client, key)} FOR UPDATE`,
        (rows) => first(rows, toKeyRecord)
      ),
    restartKey: (client, claim, now) =>
      Effect.asVoid(sql`UPDATE idempotency_keys SET started_at = ${ms(now)}, request_id = ${claim.requestId},
        request_hash = ${claim.requestHash}, answer = NULL, transfer_id = NULL, refund_id = NULL
        WHERE ${keyWhere(client, claim.key)}`),
    keepAnswer: (client, key, answer) => {
      const [kind, transfer, refund] = answerColumns(answer)
      return Effect.asVoid(sql`UPDATE idempotency_keys SET answer = ${kind}, transfer_id = ${transfer},
        refund_id = ${refund} WHERE ${keyWhere(client, key)} AND answer IS NULL`)
    },
    answerWaitingKeys: (client, hash, transfer) =>
      Effect.asVoid(sql`UPDATE idempotency_keys SET answer = 'transfer_made', transfer_id = ${transfer}
        WHERE client_id = ${client} AND request_hash = ${hash} AND answer IS NULL`),
    releaseKey: (client, key) =>
      Effect.asVoid(sql`DELETE FROM idempotency_keys WHERE ${keyWhere(client, key)} AND answer IS NULL`),
    insertTransfer: (t) =>
      unlessDuplicate(Effect.as(sql`INSERT INTO transfers ${sql.insert(transferRow(t, time))}`, true), false),
    referenceHolder: (client, reference) =>
      Effect.map(
        sql<{ id: TransferId }>`SELECT id FROM transfers WHERE client_id = ${client} AND reference = ${reference}`,
        (rows) => first(rows, (r) => r.id)
      ),
    // The row locked, then written if its status is still one of `from` (a compound: a transaction of its own
    // outside `transact`).
    updateOutcome: (t, from) =>
      Effect.gen(function*() {
        const found = yield* sql`SELECT id FROM transfers WHERE id = ${t.id} AND ${sql.in("status", from)} FOR UPDATE`
        if (found.length === 0) return false
        const [status, failure, decline, authorization, reconciledAt] = outcomeRow(t, time)
        yield* sql`UPDATE transfers SET status = ${status}, failure_code = ${failure}, decline_code = ${decline},
          authorization_code = ${authorization}, reconciled_at = ${reconciledAt}, reconcile_at = NULL
          WHERE id = ${t.id}`
        return true
      }),
    deleteTransfer: (id, status) => Effect.asVoid(sql`DELETE FROM transfers WHERE id = ${id} AND status = ${status}`)
  }

  return TransferStorage.of({
    ...unitOfWork<TransferTx>(sql, statements, ["updateOutcome", "insertEvent", ...refundCompound]),
    ...mariaDbRefundStorage(sql),
    createClient: (client, keyHash, now) =>
      Effect.orDie(sql`INSERT INTO api_clients (id, name, key_hash, created_at)
        VALUES (${client.id}, ${client.name}, ${keyHash}, ${ms(now)})`),
    clientByKeyHash: (keyHash) =>
      sql<{ id: ClientId; name: string }>`SELECT id, name FROM api_clients WHERE key_hash = ${keyHash}`.pipe(
        Effect.map((rows) => first(rows, (r) => ({ id: r.id, name: r.name }))),
        Effect.orDie
      ),
    hasClients: sql`SELECT 1 FROM api_clients LIMIT 1`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie),
    keyRecord: (client, key) =>
      sql<KeyRow>`SELECT ${keyColumns} FROM idempotency_keys WHERE ${keyWhere(client, key)}`.pipe(
        Effect.map((rows) => first(rows, toKeyRecord)),
        Effect.orDie
      ),
    get: (client, id) => transferWhere(client, "id", id),
    byReference: (client, reference) => transferWhere(client, "reference", reference),
    list: listTransfers(sql, TransferColumns),
    // Leased with SKIP LOCKED: instances claiming at once take disjoint transfers, and a leased one is not due.
    // Read in the index's order, so a claim locks the rows it takes and no more (a sort would lock every due row).
    claimUnsettled: (now, pendingBefore, leaseUntil, limit) =>
      transaction(Effect.gen(function*() {
        const rows = yield* sql<TransferRow & { reconcile_attempts: number }>`
          SELECT ${columns}, reconcile_attempts FROM transfers FORCE INDEX (transfers_unsettled)
          WHERE status IN ('pending', 'unknown') AND (status = 'unknown' OR created_at <= ${ms(pendingBefore)})
          AND (reconcile_at IS NULL OR reconcile_at <= ${ms(now)})
          ORDER BY created_at LIMIT ${limit} FOR UPDATE SKIP LOCKED`
        if (rows.length > 0) {
          yield* sql`UPDATE transfers SET reconcile_at = ${ms(leaseUntil)} WHERE ${sql.in("id", rows.map((r) => r.id))}`
        }
        return rows.map((row) => ({ transfer: toTransfer(row), attempts: Number(row.reconcile_attempts) }))
      })).pipe(Effect.orDie),
    reconcileLater: (id, attempts, next) =>
      Effect.orDie(sql`UPDATE transfers SET reconcile_attempts = ${attempts}, reconcile_at = ${ms(next)}
        WHERE id = ${id} AND status IN ('pending', 'unknown')`),
    // A batch per statement: no lock is held long.
    pruneKeys: (before, limit) =>
      sql`DELETE FROM idempotency_keys WHERE started_at < ${ms(before)} LIMIT ${limit} RETURNING client_id`.pipe(
        Effect.map((rows) => rows.length),
        Effect.orDie
      ),
    // Summed by the database in integers and read back as text: exact for any total, never a float.
    balance: (client) =>
      sql<{ merchant_id: string; currency: CurrencyCode; total: string }>`
        SELECT recipient_merchant_id AS merchant_id, currency, CAST(SUM(amount - amount_refunded) AS CHAR) AS total
        FROM transfers
        WHERE client_id = ${client} AND status = 'approved'
        GROUP BY recipient_merchant_id, currency ORDER BY recipient_merchant_id, currency`.pipe(
        Effect.map((rows) =>
          rows.map((r) => ({ merchantId: r.merchant_id, currency: r.currency, amount: BigInt(r.total) }))
        ),
        Effect.orDie
      )
  })
})

export const layer = Layer.effect(TransferStorage, make)
