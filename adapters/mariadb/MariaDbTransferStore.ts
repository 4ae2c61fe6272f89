import { SqlClient } from "@effect/sql/SqlClient"
import { DateTime, Effect, Layer, Option } from "effect"
import type { CurrencyCode } from "../../core/payments/Currency.ts"
import { decideStart, IdempotencyStart, KeptAnswer, type KeyClaim } from "../../core/payments/Idempotency.ts"
import { type ClientId, DuplicateReference, type Transfer, type TransferId } from "../../core/payments/Transfer.ts"
import { TransferStore, type TransferStoreShape } from "../../core/payments/TransferStore.ts"
import { EventViews } from "../../core/webhooks/EventViews.ts"
import { transferEventType } from "../../core/webhooks/Webhooks.ts"
import { newEvent } from "../sql/EventRows.ts"
import {
  answerColumns,
  answersWaitingKeys,
  KeyColumns,
  type KeyRow,
  outcomeRow,
  toKeyRecord,
  toTransfer,
  TransferColumns as Columns,
  type TransferRow,
  transferRow
} from "../sql/TransferRows.ts"
import { transactionOn, writeEvent } from "./MariaDbClient.ts"

// The transfer store on MariaDB, on @effect/sql. Keys and references are decided by unique constraints and row
// locks: a key or a reference is read FOR UPDATE before it is written, so one of several requests holds it while
// the rules judge it (two first ones deadlock on its gap; one runs again, and finds the other's row).
const TransferColumns = Columns.replace("CAST(amount AS TEXT)", "CAST(amount AS CHAR)")
const ms = (t: DateTime.Utc) => DateTime.toEpochMillis(t)
const time = (n: number) => n
const started = IdempotencyStart.Started()

export const make = Effect.gen(function*() {
  const sql = yield* SqlClient
  const views = yield* EventViews
  const transaction = transactionOn(sql)
  const columns = sql.literal(TransferColumns)
  const first = <A>(rows: ReadonlyArray<A>) => Option.fromNullable(rows[0])

  const recordEvent = (t: Transfer) => {
    const type = transferEventType(t.status)
    return type === undefined ? Effect.void : writeEvent(sql, newEvent(type, t.clientId, views.transfer(t), Date.now()))
  }
  const keep = (client: ClientId, key: string, answer: KeptAnswer) => {
    const [kind, transfer] = answerColumns(answer)
    return sql`UPDATE idempotency_keys SET answer = ${kind}, transfer_id = ${transfer}
      WHERE client_id = ${client} AND idempotency_key = ${key} AND answer IS NULL`
  }

  // The transfer written (undefined), or the id of the one that holds its reference.
  const insert = (t: Transfer) =>
    Effect.gen(function*() {
      const [holder] = yield* sql<{ id: TransferId }>`SELECT id FROM transfers
        WHERE client_id = ${t.clientId} AND reference = ${t.reference} FOR UPDATE`
      if (holder !== undefined) return holder.id
      yield* sql`INSERT INTO transfers ${sql.insert(transferRow(t, time))}`
      return undefined
    })

  // Starts the key (if any), then writes the transfer; when it is final, keeps it as the key's answer.
  const write = (t: Transfer, claim: KeyClaim | undefined, final: boolean) =>
    transaction(Effect.gen(function*() {
      if (claim !== undefined) {
        const [key] = yield* sql<KeyRow>`SELECT ${sql.literal(KeyColumns)} FROM idempotency_keys
          WHERE client_id = ${t.clientId} AND idempotency_key = ${claim.key} FOR UPDATE`
        if (key === undefined) {
          yield* sql`INSERT INTO idempotency_keys (client_id, idempotency_key, request_hash, request_id, started_at)
            VALUES (${t.clientId}, ${claim.key}, ${claim.requestHash}, ${claim.requestId}, ${ms(t.createdAt)})`
        } else {
          const decided = decideStart(toKeyRecord(key), claim, t.createdAt)
          if (decided._tag !== "Started") return decided
          yield* sql`UPDATE idempotency_keys SET started_at = ${ms(t.createdAt)}, request_id = ${claim.requestId},
            request_hash = ${claim.requestHash}, answer = NULL, transfer_id = NULL
            WHERE client_id = ${t.clientId} AND idempotency_key = ${claim.key}`
        }
      }
      const holder = yield* insert(t)
      if (holder !== undefined) return holder
      if (final) {
        if (claim !== undefined) yield* keep(t.clientId, claim.key, KeptAnswer.TransferMade({ transferId: t.id }))
        yield* recordEvent(t)
      }
      return started
    })).pipe(
      Effect.orDie,
      Effect.flatMap((r) => typeof r === "string" ? new DuplicateReference({ existing: r }) : Effect.succeed(r))
    )

  // A final transfer is never changed again (by a late request or a second reconciler), and tells its event once.
  const settle: TransferStoreShape["settle"] = (t, key) =>
    transaction(Effect.gen(function*() {
      const [current] = yield* sql<{ status: string }>`SELECT status FROM transfers WHERE id = ${t.id} FOR UPDATE`
      const changed = current !== undefined && (current.status === "pending" || current.status === "unknown")
      if (changed) {
        const [status, failure, decline, authorization, reconciledAt] = outcomeRow(t, time)
        yield* sql`UPDATE transfers SET status = ${status}, failure_code = ${failure}, decline_code = ${decline},
          authorization_code = ${authorization}, reconciled_at = ${reconciledAt}, reconcile_at = NULL
          WHERE id = ${t.id}`
        yield* recordEvent(t)
      }
      if (key !== undefined) yield* keep(t.clientId, key, KeptAnswer.TransferMade({ transferId: t.id }))
      else if (answersWaitingKeys(t)) {
        yield* sql`UPDATE idempotency_keys SET answer = 'transfer_made', transfer_id = ${t.id}
          WHERE client_id = ${t.clientId} AND request_hash = ${t.requestHash} AND answer IS NULL`
      }
    })).pipe(Effect.orDie)

  const list: TransferStoreShape["list"] = (client, query) =>
    Effect.gen(function*() {
      const after = query.startingAfter === undefined ? Option.none() : first(
        yield* sql<{ created_at: unknown; id: string }>`
          SELECT created_at, id FROM transfers WHERE client_id = ${client} AND id = ${query.startingAfter}`
      )
      const rows = yield* sql<TransferRow>`SELECT ${columns} FROM transfers WHERE ${
        sql.and([
          sql`client_id = ${client}`,
          ...(query.reference === undefined ? [] : [sql`reference = ${query.reference}`]),
          ...(Option.isSome(after)
            ? [
              sql`(created_at < ${after.value.created_at} OR (created_at = ${after.value.created_at} AND id < ${after.value.id}))`
            ]
            : [])
        ])
      } ORDER BY created_at DESC, id DESC LIMIT ${query.limit + 1}`
      return { data: rows.slice(0, query.limit).map(toTransfer), hasMore: rows.length > query.limit }
    }).pipe(Effect.orDie)

  const transferWhere = (column: "id" | "reference", client: ClientId, value: string) =>
    sql<TransferRow>`SELECT ${columns} FROM transfers WHERE client_id = ${client} AND ${sql(column)} = ${value}`.pipe(
      Effect.map((rows) => Option.map(first(rows), toTransfer)),
      Effect.orDie
    )

  // Leased with SKIP LOCKED: instances claiming at once take disjoint transfers, and a leased one is not due. Read
  // in the index's order, so a claim locks the rows it takes and no more (a sort would lock every due row).
  const claimUnsettled: TransferStoreShape["claimUnsettled"] = (now, pendingBefore, leaseUntil, limit) =>
    transaction(Effect.gen(function*() {
      const rows = yield* sql<TransferRow & { reconcile_attempts: number }>`
        SELECT ${columns}, reconcile_attempts FROM transfers FORCE INDEX (transfers_unsettled)
        WHERE status IN ('pending', 'unknown')
        AND (status = 'unknown' OR created_at <= ${ms(pendingBefore)})
        AND (reconcile_at IS NULL OR reconcile_at <= ${ms(now)})
        ORDER BY created_at LIMIT ${limit} FOR UPDATE SKIP LOCKED`
      if (rows.length > 0) {
        yield* sql`UPDATE transfers SET reconcile_at = ${ms(leaseUntil)} WHERE ${sql.in("id", rows.map((r) => r.id))}`
      }
      return rows.map((row) => ({ transfer: toTransfer(row), attempts: Number(row.reconcile_attempts) }))
    })).pipe(Effect.orDie)

  return TransferStore.of({
    createClient: (client, keyHash, now) =>
      Effect.orDie(sql`INSERT INTO api_clients (id, name, key_hash, created_at)
        VALUES (${client.id}, ${client.name}, ${keyHash}, ${ms(now)})`),
    clientByKeyHash: (keyHash) =>
      sql<{ id: ClientId; name: string }>`SELECT id, name FROM api_clients WHERE key_hash = ${keyHash}`.pipe(
        Effect.map(first),
        Effect.orDie
      ),
    hasClients: sql`SELECT 1 FROM api_clients LIMIT 1`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie),
    record: (t, claim) => write(t, claim, true),
    reserve: (t, claim) => write(t, claim, false),
    settle,
    cancel: (t) => Effect.orDie(sql`DELETE FROM transfers WHERE id = ${t.id} AND status = 'pending'`),
    keep: (client, key, answer) => Effect.orDie(keep(client, key, answer)),
    release: (client, key) =>
      Effect.orDie(sql`DELETE FROM idempotency_keys
        WHERE client_id = ${client} AND idempotency_key = ${key} AND answer IS NULL`),
    keyRecord: (client, key) =>
      sql<KeyRow>`SELECT ${sql.literal(KeyColumns)} FROM idempotency_keys
        WHERE client_id = ${client} AND idempotency_key = ${key}`.pipe(
        Effect.map((rows) => Option.map(first(rows), toKeyRecord)),
        Effect.orDie
      ),
    get: (client, id) => transferWhere("id", client, id),
    byReference: (client, reference) => transferWhere("reference", client, reference),
    list,
    claimUnsettled,
    reconcileLater: (id, attempts, next) =>
      Effect.orDie(sql`UPDATE transfers SET reconcile_attempts = ${attempts}, reconcile_at = ${ms(next)}
        WHERE id = ${id} AND status IN ('pending', 'unknown')`),
    pruneKeys: (before, limit) =>
      sql`DELETE FROM idempotency_keys WHERE started_at < ${ms(before)} LIMIT ${limit} RETURNING client_id`.pipe(
        Effect.map((rows) => rows.length),
        Effect.orDie
      ),
    // Summed by the database in integers and read back as text: exact for any total, never a float.
    balance: (client) =>
      sql<{ merchant_id: string; currency: CurrencyCode; total: string }>`
        SELECT recipient_merchant_id AS merchant_id, currency, CAST(SUM(amount) AS CHAR) AS total FROM transfers
        WHERE client_id = ${client} AND status = 'approved'
        GROUP BY recipient_merchant_id, currency ORDER BY recipient_merchant_id, currency`.pipe(
        Effect.map((rows) =>
          rows.map((r) => ({ merchantId: r.merchant_id, currency: r.currency, amount: BigInt(r.total) }))
        ),
        Effect.orDie
      )
  })
})

export const layer = Layer.effect(TransferStore, make)
