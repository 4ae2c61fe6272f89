import { DateTime, Effect, Layer, Option } from "effect"
import type { CurrencyCode } from "../../core/Currency.ts"
import { EventViews, type EventViewsShape } from "../../core/EventViews.ts"
import { decideStart, IdempotencyStart, KeptAnswer, type KeyClaim } from "../../core/Idempotency.ts"
import { type ClientId, DuplicateReference, type Transfer, type TransferId } from "../../core/Transfer.ts"
import { TransferStore } from "../../core/TransferStore.ts"
import { transferEventType } from "../../core/Webhooks.ts"
import { newEvent, writeEvent } from "../sql/EventRows.ts"
import {
  answerColumns,
  answersWaitingKeys,
  KeyColumns,
  type KeyRow,
  outcomeRow,
  toKeyRecord,
  toTransfer,
  TransferColumns,
  type TransferRow,
  transferRow
} from "../sql/TransferRows.ts"
import { type DirectSql, SqliteDirect } from "./SqliteClient.ts"

// The transfer store on SQLite: every method one synchronous function over prepared statements (SqliteDirect),
// in the client's group commit, instead of statement by statement through @effect/sql, which cost several
// times the SQLite work. A request with an Idempotency-Key costs what one without does: its key is started in
// the transaction that reserves the transfer, and its answer kept in the one that settles it. The write lock
// (BEGIN IMMEDIATE) is held for the whole transaction, so reading a key and then writing it is safe across
// processes on one file.

const millis = DateTime.toEpochMillis
const started = IdempotencyStart.Started()

// Statement texts are made once: each is also the key of its prepared statement, hashed on every lookup.
const selectTransfer = (where: string) => `SELECT ${TransferColumns} FROM transfers WHERE ${where}`
const byId = selectTransfer("client_id = ? AND id = ?")
const byReference = selectTransfer("client_id = ? AND reference = ?")
const listOf = (reference: boolean, after: boolean) =>
  selectTransfer(
    `client_id = ?${reference ? " AND reference = ?" : ""}${
      after ? " AND (created_at < ? OR (created_at = ? AND id < ?))" : ""
    } ORDER BY created_at DESC, id DESC LIMIT ?`
  )
const lists = [listOf(false, false), listOf(false, true), listOf(true, false), listOf(true, true)]
const keyRow = `SELECT ${KeyColumns} FROM idempotency_keys WHERE client_id = ? AND idempotency_key = ?`
const keep = `UPDATE idempotency_keys SET answer = ?, transfer_id = ?
  WHERE client_id = ? AND idempotency_key = ? AND answer IS NULL`
// A transfer's outcome is written once: a final one is never changed again (by a late request or a second
// reconciler).
const settleTransfer = `UPDATE transfers SET status = ?, failure_code = ?, decline_code = ?, authorization_code = ?,
  reconciled_at = ?, reconcile_at = NULL WHERE id = ? AND status IN ('pending', 'unknown')`
const answerWaitingKeys = `UPDATE idempotency_keys SET answer = 'transfer_made', transfer_id = ?
  WHERE client_id = ? AND request_hash = ? AND answer IS NULL`
const unsettled = `SELECT ${TransferColumns}, reconcile_attempts FROM transfers
  WHERE status IN ('pending', 'unknown') AND (status = 'unknown' OR created_at <= ?)
    AND (reconcile_at IS NULL OR reconcile_at <= ?)
  ORDER BY created_at LIMIT ?`
let insertTransfer: string | undefined
const insertTransferOf = (row: Record<string, unknown>) =>
  insertTransfer ??= `INSERT INTO transfers (${Object.keys(row).join(", ")}) VALUES (${
    Object.keys(row).map(() => "?").join(", ")
  }) ON CONFLICT (client_id, reference) DO NOTHING RETURNING id`

const start = (db: DirectSql, claim: KeyClaim, client: ClientId, now: DateTime.Utc) => {
  const row = db.get<KeyRow>(keyRow, [client, claim.key])
  const decided = decideStart(row === undefined ? undefined : toKeyRecord(row), claim, now)
  if (decided._tag !== "Started") return decided
  if (row === undefined) {
    db.run(
      `INSERT INTO idempotency_keys (client_id, idempotency_key, request_hash, request_id, started_at)
       VALUES (?, ?, ?, ?, ?)`,
      [client, claim.key, claim.requestHash, claim.requestId, millis(now)]
    )
  } else {
    db.run(
      `UPDATE idempotency_keys SET started_at = ?, request_id = ?, request_hash = ?, answer = NULL, transfer_id = NULL
       WHERE client_id = ? AND idempotency_key = ?`,
      [millis(now), claim.requestId, claim.requestHash, client, claim.key]
    )
  }
  return started
}

const keepAnswer = (db: DirectSql, client: ClientId, key: string, answer: KeptAnswer) =>
  db.run(keep, [...answerColumns(answer), client, key])

// The one place this store records a transfer's event: in the transaction that made it final.
const recordEvent = (db: DirectSql, views: EventViewsShape, t: Transfer) => {
  const type = transferEventType(t.status)
  if (type !== undefined) writeEvent(db, newEvent(type, t.clientId, views.transfer(t), Date.now()))
}

// Starts the key, then writes the transfer (and, when it is final, keeps it as the key's answer and records
// its event). A taken reference is answered after the commit, so that the started key stays for the caller
// to answer.
const write = (db: DirectSql, views: EventViewsShape, t: Transfer, claim: KeyClaim | undefined, final: boolean) => {
  if (claim !== undefined) {
    const decided = start(db, claim, t.clientId, t.createdAt)
    if (decided._tag !== "Started") return decided
  }
  const row = transferRow(t, (ms) => ms)
  if (db.get(insertTransferOf(row), Object.values(row)) === undefined) {
    return db.get<{ id: TransferId }>(`SELECT id FROM transfers WHERE client_id = ? AND reference = ?`, [
      t.clientId,
      t.reference
    ])!.id
  }
  if (final && claim !== undefined) {
    keepAnswer(db, t.clientId, claim.key, KeptAnswer.TransferMade({ transferId: t.id }))
  }
  if (final) recordEvent(db, views, t)
  return started
}

export const layer = Layer.effect(
  TransferStore,
  Effect.gen(function*() {
    const direct = yield* SqliteDirect
    const views = yield* EventViews
    const read = <A>(work: (db: DirectSql) => A) => Effect.orDie(direct.read(work))
    const transaction = <A>(work: (db: DirectSql) => A) => Effect.orDie(direct.transaction(work))
    const transfer = (sql: string, params: ReadonlyArray<unknown>) =>
      read((db) => Option.map(Option.fromNullable(db.get<TransferRow>(sql, params)), toTransfer))
    const written = (t: Transfer, claim: KeyClaim | undefined, final: boolean) =>
      Effect.flatMap(
        transaction((db) => write(db, views, t, claim, final)),
        (r) => typeof r === "string" ? new DuplicateReference({ existing: r }) : Effect.succeed(r)
      )

    return TransferStore.of({
      createClient: (client, keyHash, now) =>
        transaction((db) =>
          void db.run(`INSERT INTO api_clients (id, name, key_hash, created_at) VALUES (?, ?, ?, ?)`, [
            client.id,
            client.name,
            keyHash,
            millis(now)
          ])
        ),
      clientByKeyHash: (keyHash) =>
        read((db) =>
          Option.fromNullable(
            db.get<{ id: ClientId; name: string }>(`SELECT id, name FROM api_clients WHERE key_hash = ?`, [keyHash])
          )
        ),
      hasClients: read((db) => db.get(`SELECT 1 AS one FROM api_clients LIMIT 1`, []) !== undefined),
      record: (t, claim) => written(t, claim, true),
      reserve: (t, claim) => written(t, claim, false),
      settle: (t, key) =>
        transaction((db) => {
          const changed = db.run(settleTransfer, [...outcomeRow(t, (ms) => ms), t.id])
          // An event only for a change this call made: a late request or a second reconciler writes nothing.
          if (changed > 0) recordEvent(db, views, t)
          if (key !== undefined) keepAnswer(db, t.clientId, key, KeptAnswer.TransferMade({ transferId: t.id }))
          else if (answersWaitingKeys(t)) db.run(answerWaitingKeys, [t.id, t.clientId, t.requestHash])
        }),
      cancel: (t) =>
        transaction((db) => void db.run(`DELETE FROM transfers WHERE id = ? AND status = 'pending'`, [t.id])),
      keep: (client, key, answer) => transaction((db) => void keepAnswer(db, client, key, answer)),
      keyRecord: (client, key) =>
        read((db) => Option.map(Option.fromNullable(db.get<KeyRow>(keyRow, [client, key])), toKeyRecord)),
      release: (client, key) =>
        transaction((db) =>
          void db.run(`DELETE FROM idempotency_keys WHERE client_id = ? AND idempotency_key = ? AND answer IS NULL`, [
            client,
            key
          ])
        ),
      get: (client, id) => transfer(byId, [client, id]),
      byReference: (client, reference) => transfer(byReference, [client, reference]),
      list: (client, query) =>
        read((db) => {
          const after = query.startingAfter === undefined
            ? undefined
            : db.get<{ created_at: number; id: string }>(
              `SELECT created_at, id FROM transfers WHERE client_id = ? AND id = ?`,
              [
                client,
                query.startingAfter
              ]
            )
          const sql = lists[(query.reference === undefined ? 0 : 2) + (after === undefined ? 0 : 1)]!
          const rows = db.all<TransferRow>(sql, [
            client,
            ...(query.reference === undefined ? [] : [query.reference]),
            ...(after === undefined ? [] : [after.created_at, after.created_at, after.id]),
            query.limit + 1
          ])
          return { data: rows.slice(0, query.limit).map(toTransfer), hasMore: rows.length > query.limit }
        }),
      claimUnsettled: (now, pendingBefore, leaseUntil, limit) =>
        transaction((db) => {
          const rows = db.all<TransferRow & { reconcile_attempts: number }>(unsettled, [
            millis(pendingBefore),
            millis(now),
            limit
          ])
          for (const row of rows) {
            db.run(`UPDATE transfers SET reconcile_at = ? WHERE id = ?`, [millis(leaseUntil), row.id])
          }
          return rows.map((row) => ({ transfer: toTransfer(row), attempts: Number(row.reconcile_attempts) }))
        }),
      reconcileLater: (id, attempts, next) =>
        transaction((db) =>
          void db.run(
            `UPDATE transfers SET reconcile_attempts = ?, reconcile_at = ? WHERE id = ? AND status IN ('pending', 'unknown')`,
            [attempts, millis(next), id]
          )
        ),
      // A batch per transaction: the write lock is held for one short DELETE at a time.
      pruneKeys: (before, limit) =>
        transaction((db) =>
          db.run(
            `DELETE FROM idempotency_keys WHERE rowid IN
             (SELECT rowid FROM idempotency_keys WHERE started_at < ? LIMIT ?)`,
            [millis(before), limit]
          )
        ),
      // Summed by the database in integers and read back as text: exact for any total, never a float.
      balance: (client) =>
        read((db) =>
          db.all<{ merchant_id: string; currency: CurrencyCode; total: string }>(
            `SELECT recipient_merchant_id AS merchant_id, currency, CAST(SUM(amount) AS TEXT) AS total FROM transfers
             WHERE client_id = ? AND status = 'approved'
             GROUP BY recipient_merchant_id, currency ORDER BY recipient_merchant_id, currency`,
            [client]
          ).map((r) => ({ merchantId: r.merchant_id, currency: r.currency, amount: BigInt(r.total) }))
        )
    })
  })
)
