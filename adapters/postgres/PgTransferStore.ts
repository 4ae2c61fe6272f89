import { SqlClient } from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { DateTime, Effect, Layer, Option } from "effect"
import type { CurrencyCode } from "../../core/Currency.ts"
import { EventViews } from "../../core/EventViews.ts"
import { decideStart, IdempotencyStart, KeptAnswer, type KeyClaim } from "../../core/Idempotency.ts"
import { type ClientId, DuplicateReference, type Transfer, type TransferId } from "../../core/Transfer.ts"
import { TransferStore, type TransferStoreShape } from "../../core/TransferStore.ts"
import { transferEventType } from "../../core/Webhooks.ts"
import { newEvent, pgCteValues, pgEventCtes, pgEventStatement, pgEventValues } from "../sql/EventRows.ts"
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
import { PgDirect, type PgQuery, statement } from "./PgClient.ts"

// The transfer store on PostgreSQL. Keys and references are decided by unique constraints and row locks, so
// that several instances on one database see the rules hold. What every loaded request runs goes through
// PgDirect as named (prepared) statements, each transaction phase in as few round trips as its rules allow:
// a key is started and the transfer reserved in one statement (data-modifying CTEs: one statement is one
// transaction), a settle and the key's answer in another. Only a key that exists already is judged in a
// transaction of its own, locked (FOR UPDATE). Listing and balances, built per query, stay on @effect/sql.

const started = IdempotencyStart.Started()

// The columns of a transfer row, in transferRow's order, and each parameter cast to its column's type (an
// INSERT ... SELECT does not infer them).
const fields = TransferColumns.replace("CAST(amount AS TEXT) AS amount", "amount").split(",").map((c) => c.trim())
const types: Record<string, string> = {
  amount: "bigint",
  card_exp_month: "integer",
  card_exp_year: "integer",
  created_at: "timestamptz",
  reconciled_at: "timestamptz"
}
const values = fields.map((f, i) => `$${i + 1}::${types[f] ?? "text"}`).join(", ")
const at = (f: string) => `$${fields.indexOf(f) + 1}`
const n = fields.length

const insertTransfer = statement(
  "insert_transfer",
  `INSERT INTO transfers (${fields.join(", ")}) VALUES (${values})
   ON CONFLICT (client_id, reference) DO NOTHING RETURNING id`
)
const holderOf = statement("reference_holder", `SELECT id FROM transfers WHERE client_id = $1 AND reference = $2`)

// Starts a new key and, only if it was new, reserves the transfer: one statement. Also reads the key as it
// was when the statement began, so that a key answered before is judged without a second round trip.
const startAndInsert = statement(
  "start_key_insert_transfer",
  `WITH k AS (
     INSERT INTO idempotency_keys (client_id, idempotency_key, request_hash, request_id, started_at)
     VALUES (${at("client_id")}::text, $${n + 1}::text, $${n + 2}::text, $${n + 3}::text, ${
    at("created_at")
  }::timestamptz)
     ON CONFLICT (client_id, idempotency_key) DO NOTHING RETURNING 1
   ), t AS (
     INSERT INTO transfers (${fields.join(", ")}) SELECT ${values} WHERE EXISTS (SELECT 1 FROM k)
     ON CONFLICT (client_id, reference) DO NOTHING RETURNING id
   )
   SELECT EXISTS (SELECT 1 FROM k) AS started, (SELECT id FROM t) AS inserted, key.*
   FROM (VALUES (1)) AS one LEFT JOIN (
     SELECT ${KeyColumns} FROM idempotency_keys
     WHERE client_id = ${at("client_id")}::text AND idempotency_key = $${n + 1}::text
   ) AS key ON true`
)
const selectKey = `SELECT ${KeyColumns} FROM idempotency_keys WHERE client_id = $1 AND idempotency_key = $2`
const lockKey = statement("lock_key", `${selectKey} FOR UPDATE`)
const keyRecord = statement("key_record", selectKey)
const restartKey = statement(
  "restart_key",
  `UPDATE idempotency_keys SET started_at = $3, request_id = $4, request_hash = $5, answer = NULL, transfer_id = NULL
   WHERE client_id = $1 AND idempotency_key = $2`
)
const keepAnswer = statement(
  "keep_answer",
  `UPDATE idempotency_keys SET answer = $3, transfer_id = $4
   WHERE client_id = $1 AND idempotency_key = $2 AND answer IS NULL`
)
const releaseKey = statement(
  "release_key",
  `DELETE FROM idempotency_keys WHERE client_id = $1 AND idempotency_key = $2 AND answer IS NULL`
)
// A transfer's outcome is written once: a final one is never changed again (by a late request or a second
// reconciler).
const settleSet = `UPDATE transfers SET status = $2, failure_code = $3, decline_code = $4, authorization_code = $5,
   reconciled_at = $6::timestamptz, reconcile_at = NULL WHERE id = $1 AND status IN ('pending', 'unknown')`
// Leased with SKIP LOCKED: instances claiming at once take disjoint transfers, and a leased one is not due.
const claimUnsettled = statement(
  "claim_unsettled",
  `UPDATE transfers SET reconcile_at = $3 WHERE id IN (
     SELECT id FROM transfers WHERE status IN ('pending', 'unknown') AND (status = 'unknown' OR created_at <= $2)
       AND (reconcile_at IS NULL OR reconcile_at <= $1)
     ORDER BY created_at LIMIT $4 FOR UPDATE SKIP LOCKED)
   RETURNING ${TransferColumns}, reconcile_attempts`
)
const reconcileLater = statement(
  "reconcile_later",
  `UPDATE transfers SET reconcile_attempts = $2, reconcile_at = $3 WHERE id = $1 AND status IN ('pending', 'unknown')`
)
// A batch per statement, skipping rows another transaction holds: no lock is held long.
const pruneKeys = statement(
  "prune_keys",
  `DELETE FROM idempotency_keys WHERE (client_id, idempotency_key) IN (
     SELECT client_id, idempotency_key FROM idempotency_keys WHERE started_at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)
   RETURNING 1`
)
// The outcome, then the answer of the keys it gives, in one statement (a key is answered whether or not the
// transfer changed): none; the request's own key (`key`, $7 and $8: client and key); or every key waiting for
// the transfer's request (`waiting`, $7 and $8: client and request hash). Each with or without the transfer's
// event and its deliveries: there `s` returns a row only when the transfer changed, so a late request or a
// second reconciler writes no event.
type SettleAnswers = "none" | "key" | "waiting"
const answered = { key: "idempotency_key", waiting: "request_hash" } as const
const settleStatement = (answers: SettleAnswers, event: boolean) => {
  const name = `settle${answers === "none" ? "" : answers === "key" ? "_keep" : "_answer_waiting"}${
    event ? "_event" : ""
  }`
  const updateKeys = answers === "none" ? "" : `UPDATE idempotency_keys SET answer = 'transfer_made', transfer_id = $1
   WHERE client_id = $7 AND ${answered[answers]} = $8 AND answer IS NULL`
  if (event) {
    return statement(
      name,
      `WITH s AS (${settleSet} RETURNING client_id AS owner), ${pgEventCtes(answers === "none" ? 7 : 9)}${
        answers === "none" ? " SELECT 1" : `\n   ${updateKeys}`
      }`
    )
  }
  return statement(name, answers === "none" ? settleSet : `WITH s AS (${settleSet})\n   ${updateKeys}`)
}
const settleStatements = {
  none: [settleStatement("none", false), settleStatement("none", true)],
  key: [settleStatement("key", false), settleStatement("key", true)],
  waiting: [settleStatement("waiting", false), settleStatement("waiting", true)]
} as const
const recordEventStatement = statement("record_event", pgEventStatement)
const cancelTransfer = statement("cancel", `DELETE FROM transfers WHERE id = $1 AND status = 'pending'`)
const clientByKeyHash = statement("client_by_key_hash", `SELECT id, name FROM api_clients WHERE key_hash = $1`)
const transferById = statement(
  "transfer_by_id",
  `SELECT ${TransferColumns} FROM transfers WHERE client_id = $1 AND id = $2`
)
const transferByReference = statement(
  "transfer_by_reference",
  `SELECT ${TransferColumns} FROM transfers WHERE client_id = $1 AND reference = $2`
)

type Written = IdempotencyStart | TransferId
interface StartRow extends Partial<KeyRow> {
  readonly started: boolean
  readonly inserted: TransferId | null
}

const time = (ms: number) => new Date(ms)

export const make = Effect.gen(function*() {
  const sql = yield* SqlClient
  const direct = yield* PgDirect
  const views = yield* EventViews
  // The one place this store makes a transfer's event; written in the transaction that made it final.
  const eventOf = (t: Transfer) => {
    const type = transferEventType(t.status)
    return type === undefined ? undefined : newEvent(type, t.clientId, views.transfer(t), Date.now())
  }
  const recordEvent = (query: PgQuery, t: Transfer) => {
    const event = eventOf(t)
    return event === undefined ? Effect.void : query(recordEventStatement, pgEventValues(event))
  }
  const first = <A>(rows: ReadonlyArray<A>) => Option.fromNullable(rows[0])
  const columns = sql.literal(TransferColumns)

  // The transfer's row written (undefined), or the id of the transfer that holds its reference; `conflicted`
  // when an insert was tried already.
  const insert = (query: PgQuery, row: ReadonlyArray<unknown>, conflicted = false): Effect.Effect<
    TransferId | undefined,
    SqlError
  > =>
    Effect.gen(function*() {
      if (!conflicted && (yield* query(insertTransfer, row)).length > 0) return undefined
      const holder = yield* query<{ id: TransferId }>(holderOf, [row[1], row[2]])
      // The competing reservation was cancelled in between (its card network failed): try again.
      return holder.length === 0 ? yield* insert(query, row) : holder[0]!.id
    })

  // Once the key is started: the transfer written (`tried`: an insert was tried already, and whether it wrote),
  // and kept as the key's answer when it is final. A taken reference leaves the key started, for the caller
  // to answer.
  const afterStart = (
    query: PgQuery,
    t: Transfer,
    row: ReadonlyArray<unknown>,
    claim: KeyClaim,
    final: boolean,
    tried?: "inserted" | "conflicted"
  ) =>
    Effect.gen(function*() {
      const holder = tried === "inserted" ? undefined : yield* insert(query, row, tried === "conflicted")
      if (holder !== undefined) return holder
      if (final) {
        yield* query(keepAnswer, [
          t.clientId,
          claim.key,
          ...answerColumns(KeptAnswer.TransferMade({ transferId: t.id }))
        ])
        yield* recordEvent(query, t)
      }
      return started
    })

  // The whole rule in one transaction: insert first (the primary key decides between concurrent first
  // requests); an existing key is locked while it is judged, so only one of several retries can take over an
  // abandoned key.
  const writeLocked = (t: Transfer, row: ReadonlyArray<unknown>, claim: KeyClaim, final: boolean) =>
    direct.transaction((query) => {
      const attempt: Effect.Effect<Written, SqlError> = Effect.gen(function*() {
        const [r] = yield* query<StartRow>(startAndInsert, [...row, claim.key, claim.requestHash, claim.requestId])
        if (r!.started) {
          return yield* afterStart(query, t, row, claim, final, r!.inserted === null ? "conflicted" : "inserted")
        }
        const key = (yield* query<KeyRow>(lockKey, [t.clientId, claim.key]))[0]
        // Released in between: the key is new again.
        if (key === undefined) return yield* attempt
        const decided = decideStart(toKeyRecord(key), claim, t.createdAt)
        if (decided._tag !== "Started") return decided
        yield* query(restartKey, [
          t.clientId,
          claim.key,
          time(DateTime.toEpochMillis(t.createdAt)),
          claim.requestId,
          claim.requestHash
        ])
        return yield* afterStart(query, t, row, claim, final)
      })
      return attempt
    })

  // Starts the key (if any), then writes the transfer; when it is final, keeps it as the key's answer.
  const write = (t: Transfer, claim: KeyClaim | undefined, final: boolean): Effect.Effect<Written, SqlError> => {
    const row = Object.values(transferRow(t, time))
    if (claim === undefined && final) {
      return direct.transaction((query) =>
        Effect.flatMap(
          insert(query, row),
          (holder): Effect.Effect<Written, SqlError> =>
            holder !== undefined ? Effect.succeed(holder) : Effect.as(recordEvent(query, t), started)
        )
      )
    }
    if (claim === undefined) return Effect.map(insert(direct.query, row), (holder) => holder ?? started)
    // Keeping a final answer with the new key needs a second statement: in a transaction.
    if (final) return writeLocked(t, row, claim, final)
    return Effect.gen(function*() {
      const [r] = yield* direct.query<StartRow>(startAndInsert, [
        ...row,
        claim.key,
        claim.requestHash,
        claim.requestId
      ])
      if (r!.started) {
        return yield* afterStart(direct.query, t, row, claim, final, r!.inserted === null ? "conflicted" : "inserted")
      }
      // A key answered (or in progress) before this statement began is judged as read; anything else (a key
      // to take over, or one written while this statement ran) under the lock.
      if (r!.request_hash != null) {
        const decided = decideStart(toKeyRecord(r as KeyRow), claim, t.createdAt)
        if (decided._tag !== "Started") return decided
      }
      return yield* writeLocked(t, row, claim, final)
    })
  }

  const written = (effect: Effect.Effect<Written, SqlError>) =>
    effect.pipe(
      Effect.orDie,
      Effect.flatMap((r) => typeof r === "string" ? new DuplicateReference({ existing: r }) : Effect.succeed(r))
    )

  const settle: TransferStoreShape["settle"] = (t, key) => {
    const event = eventOf(t)
    const answers: SettleAnswers = key !== undefined ? "key" : answersWaitingKeys(t) ? "waiting" : "none"
    const keys = answers === "key" ? [t.clientId, key] : answers === "waiting" ? [t.clientId, t.requestHash] : []
    return Effect.orDie(
      direct.query(settleStatements[answers][event === undefined ? 0 : 1], [
        t.id,
        ...outcomeRow(t, time),
        ...keys,
        ...(event === undefined ? [] : pgCteValues(event))
      ])
    )
  }

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

  const transferWhere = (byWhat: typeof transferById, client: ClientId, value: string) =>
    direct.query<TransferRow>(byWhat, [client, value]).pipe(
      Effect.map((rows) => Option.map(first(rows), toTransfer)),
      Effect.orDie
    )

  return TransferStore.of({
    createClient: (client, keyHash, now) =>
      Effect.orDie(sql`INSERT INTO api_clients (id, name, key_hash, created_at)
        VALUES (${client.id}, ${client.name}, ${keyHash}, ${time(DateTime.toEpochMillis(now))})`),
    clientByKeyHash: (keyHash) =>
      direct.query<{ id: ClientId; name: string }>(clientByKeyHash, [keyHash]).pipe(Effect.map(first), Effect.orDie),
    hasClients: sql`SELECT 1 FROM api_clients LIMIT 1`.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie),
    record: (t, claim) => written(write(t, claim, true)),
    reserve: (t, claim) => written(write(t, claim, false)),
    settle,
    cancel: (t) => Effect.orDie(direct.query(cancelTransfer, [t.id])),
    keep: (client, key, answer) => Effect.orDie(direct.query(keepAnswer, [client, key, ...answerColumns(answer)])),
    release: (client, key) => Effect.orDie(direct.query(releaseKey, [client, key])),
    keyRecord: (client, key) =>
      Effect.orDie(
        Effect.map(direct.query<KeyRow>(keyRecord, [client, key]), (rows) =>
          Option.map(Option.fromNullable(rows[0]), toKeyRecord))
      ),
    get: (client, id) => transferWhere(transferById, client, id),
    byReference: (client, reference) => transferWhere(transferByReference, client, reference),
    list,
    claimUnsettled: (now, pendingBefore, leaseUntil, limit) =>
      direct.query<TransferRow & { reconcile_attempts: number }>(claimUnsettled, [
        time(DateTime.toEpochMillis(now)),
        time(DateTime.toEpochMillis(pendingBefore)),
        time(DateTime.toEpochMillis(leaseUntil)),
        limit
      ]).pipe(
        Effect.map((rows) =>
          rows.map((row) => ({ transfer: toTransfer(row), attempts: Number(row.reconcile_attempts) }))
        ),
        Effect.orDie
      ),
    reconcileLater: (id, attempts, next) =>
      Effect.orDie(direct.query(reconcileLater, [id, attempts, time(DateTime.toEpochMillis(next))])),
    pruneKeys: (before, limit) =>
      direct.query(pruneKeys, [time(DateTime.toEpochMillis(before)), limit]).pipe(
        Effect.map((rows) => rows.length),
        Effect.orDie
      ),
    // Summed by the database in integers and read back as text: exact for any total, never a float.
    balance: (client) =>
      sql<{ merchant_id: string; currency: CurrencyCode; total: string }>`
        SELECT recipient_merchant_id AS merchant_id, currency, CAST(SUM(amount) AS TEXT) AS total FROM transfers
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
