import { SqlClient } from "@effect/sql/SqlClient"
import { Effect, identity, Layer } from "effect"
import { type ClientId, type TransferId, UnsettledTransfers } from "../../core/payments/Transfer.ts"
import { TransferStorage, type TransferTx } from "../../core/payments/TransferStorage.ts"
import { dayTotals } from "../sql/DayRows.ts"
import {
  answerColumns,
  Balance,
  balanceParams,
  type BalanceRow,
  KeyColumns,
  type KeyRow,
  listTransfers,
  outcomeRow,
  toBalance,
  toKeyRecord,
  toTransfer,
  TransferColumns,
  type TransferRow,
  transferRow
} from "../sql/TransferRows.ts"
import { mariaDbRefundStatements, mariaDbRefundStorage } from "./MariaDbRefundStatements.ts"
import {
  asChar,
  eventStatements,
  first,
  ms,
  reconciliation,
  type Statements,
  unitOfWork,
  unlessDuplicate,
  wrote
} from "./MariaDbUnitOfWork.ts"

const transferColumns = asChar(TransferColumns)

// The transfer storage on MariaDB, on @effect/sql. Keys and references are decided by unique constraints: the
// second of two first inserts waits for the first's row lock, then loses (1062) and answers false; keys are read
// FOR UPDATE while core judges them.
export const make = Effect.gen(function*() {
  const sql = yield* SqlClient
  const columns = sql.literal(transferColumns)
  const keyColumns = sql.literal(KeyColumns)
  const keyWhere = (client: ClientId, key: string) => sql`client_id = ${client} AND idempotency_key = ${key}`
  const keyRecord = (client: ClientId, key: string, lock = sql.literal("")) =>
    first(sql<KeyRow>`SELECT ${keyColumns} FROM idempotency_keys WHERE ${keyWhere(client, key)} ${lock}`, toKeyRecord)
  const transferWhere = (client: ClientId, column: "id" | "reference", value: string) =>
    Effect.orDie(first(
      sql<TransferRow>`SELECT ${columns} FROM transfers WHERE client_id = ${client} AND ${sql(column)} = ${value}`,
      toTransfer
    ))
  const unsettled = reconciliation(sql, "transfers", transferColumns, (row: TransferRow, attempts) => ({
    transfer: toTransfer(row),
    attempts
  }), UnsettledTransfers)

  const statements: Statements<TransferTx> = {
    ...eventStatements(sql),
    ...mariaDbRefundStatements(sql),
    insertKey: (client, claim, now) =>
      unlessDuplicate(
        Effect.as(
          sql`INSERT INTO idempotency_keys (client_id, idempotency_key, request_hash, request_id, started_at)
            VALUES (${client}, ${claim.key}, ${claim.requestHash}, ${claim.requestId}, ${ms(now)})`,
          true
        ),
        false
      ),
    lockKey: (client, key) => keyRecord(client, key, sql.literal("FOR UPDATE")),
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
      unlessDuplicate(Effect.as(sql`INSERT INTO transfers ${sql.insert(transferRow(t, identity))}`, true), false),
    referenceHolder: (client, reference) =>
      first(
        sql<{ id: TransferId }>`SELECT id FROM transfers WHERE client_id = ${client} AND reference = ${reference}`,
        (r) => r.id
      ),
    updateOutcome: (t, from) => {
      const [status, failure, decline, authorization, reconciledAt] = outcomeRow(t, identity)
      return wrote(sql`UPDATE transfers SET status = ${status}, failure_code = ${failure}, decline_code = ${decline},
        authorization_code = ${authorization}, reconciled_at = ${reconciledAt}, reconcile_at = NULL
        WHERE id = ${t.id} AND ${sql.in("status", from)}`)
    },
    deleteTransfer: (id, status) => Effect.asVoid(sql`DELETE FROM transfers WHERE id = ${id} AND status = ${status}`),
    addToBalance: (change) =>
      Effect.asVoid(sql.unsafe(
        `INSERT INTO balances (client_id, merchant_id, currency, amount) VALUES (?, ?, ?, ?)
         ON DUPLICATE KEY UPDATE amount = amount + VALUES(amount)`,
        balanceParams(change)
      ))
  }

  return TransferStorage.of({
    ...unitOfWork<TransferTx>(sql, statements),
    ...mariaDbRefundStorage(sql),
    createClient: (client, keyHash, now) =>
      Effect.orDie(sql`INSERT INTO api_clients (id, name, key_hash, created_at)
        VALUES (${client.id}, ${client.name}, ${keyHash}, ${ms(now)})`),
    clientByKeyHash: (keyHash) =>
      Effect.orDie(first(
        sql<{ id: ClientId; name: string }>`SELECT id, name FROM api_clients WHERE key_hash = ${keyHash}`,
        identity
      )),
    hasClients: sql`SELECT 1 FROM api_clients LIMIT 1`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie),
    keyRecord: (client, key) => Effect.orDie(keyRecord(client, key)),
    get: (client, id) => transferWhere(client, "id", id),
    byReference: (client, reference) => transferWhere(client, "reference", reference),
    list: listTransfers(sql, transferColumns),
    transferDays: dayTotals(sql, "transfers"),
    claimUnsettled: unsettled.claim,
    reconcileLater: unsettled.later,
    // A batch per statement: no lock is held long.
    pruneKeys: (before, limit) =>
      sql`DELETE FROM idempotency_keys WHERE started_at < ${ms(before)} LIMIT ${limit} RETURNING client_id`.pipe(
        Effect.map((rows) => rows.length),
        Effect.orDie
      ),
    balance: (client) =>
      Effect.orDie(Effect.map(sql.unsafe<BalanceRow>(asChar(Balance), [client]), (rows) => rows.map(toBalance)))
  })
})

export const layer = Layer.effect(TransferStorage, make)
