import { DateTime, Effect, Layer, Option } from "effect"
import type { CurrencyCode } from "../../core/Currency.ts"
import { decideStart, IdempotencyStart, KeptAnswer, type KeyClaim } from "../../core/Idempotency.ts"
import { type ClientId, DuplicateReference, type Transfer, type TransferId } from "../../core/Transfer.ts"
import { TransferStore } from "../../core/TransferStore.ts"
import {
  answerColumns,
  KeyColumns,
  type KeyRow,
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
      `UPDATE idempotency_keys SET started_at = ?, request_id = ? WHERE client_id = ? AND idempotency_key = ?`,
      [millis(now), claim.requestId, client, claim.key]
    )
  }
  return started
}

const keepAnswer = (db: DirectSql, client: ClientId, key: string, answer: KeptAnswer) =>
  db.run(keep, [...answerColumns(answer), client, key])

// Starts the key, then writes the transfer (and, when it is final, keeps it as the key's answer). A taken
// reference is answered after the commit, so that the started key stays for the caller to answer.
const write = (db: DirectSql, t: Transfer, claim: KeyClaim | undefined, final: boolean) => {
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
  return started
}

export const layer = Layer.effect(
  TransferStore,
  Effect.gen(function*() {
    const direct = yield* SqliteDirect
    const read = <A>(work: (db: DirectSql) => A) => Effect.orDie(direct.read(work))
    const transaction = <A>(work: (db: DirectSql) => A) => Effect.orDie(direct.transaction(work))
    const transfer = (sql: string, params: ReadonlyArray<unknown>) =>
      read((db) => Option.map(Option.fromNullable(db.get<TransferRow>(sql, params)), toTransfer))
    const written = (t: Transfer, claim: KeyClaim | undefined, final: boolean) =>
      Effect.flatMap(
        transaction((db) => write(db, t, claim, final)),
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
          db.run(
            `UPDATE transfers SET status = ?, failure_code = ?, decline_code = ?, authorization_code = ?
             WHERE id = ? AND status = 'pending'`,
            [t.status, t.failure?.code ?? null, t.failure?.decline_code ?? null, t.authorizationCode ?? null, t.id]
          )
          if (key !== undefined) keepAnswer(db, t.clientId, key, KeptAnswer.TransferMade({ transferId: t.id }))
        }),
      cancel: (t) =>
        transaction((db) => void db.run(`DELETE FROM transfers WHERE id = ? AND status = 'pending'`, [t.id])),
      keep: (client, key, answer) => transaction((db) => void keepAnswer(db, client, key, answer)),
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
