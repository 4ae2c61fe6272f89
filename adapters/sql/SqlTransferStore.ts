import { SqlClient } from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { DateTime, Effect, Layer, Option } from "effect"
import type { CurrencyCode } from "../../core/Currency.ts"
import { decideStart, IdempotencyStart, KeptAnswer, type KeyClaim } from "../../core/Idempotency.ts"
import { type ClientId, DuplicateReference, type Transfer, type TransferId } from "../../core/Transfer.ts"
import { TransferStore, type TransferStoreShape } from "../../core/TransferStore.ts"
import { Dialect } from "./Dialect.ts"
import {
  answerColumns,
  KeyColumns,
  type KeyRow,
  toKeyRecord,
  toTransfer,
  TransferColumns,
  type TransferRow,
  transferRow
} from "./TransferRows.ts"

// The transfer store through @effect/sql: the one PostgreSQL runs (SQLite has its own, synchronous one in
// adapters/sqlite/SqliteTransferStore.ts). Keys and references are decided by unique constraints and row
// locks, so that several instances on one database see the rules hold.

const started = IdempotencyStart.Started()

export const make = Effect.gen(function*() {
  const sql = yield* SqlClient
  const { forUpdate, time } = yield* Dialect
  const ms = (t: DateTime.Utc) => time(DateTime.toEpochMillis(t))
  const first = <A>(rows: ReadonlyArray<A>) => Option.fromNullable(rows[0])
  const columns = sql.literal(TransferColumns)
  const keyColumns = sql.literal(KeyColumns)

  // The transfer's row, or the id of the transfer that holds its reference.
  const insert = (t: Transfer): Effect.Effect<TransferId | undefined, SqlError> =>
    Effect.gen(function*() {
      const inserted = yield* sql`INSERT INTO transfers ${
        sql.insert(transferRow(t, time))
      } ON CONFLICT (client_id, reference) DO NOTHING RETURNING id`
      if (inserted.length > 0) return undefined
      const existing = yield* sql<{ id: TransferId }>`
        SELECT id FROM transfers WHERE client_id = ${t.clientId} AND reference = ${t.reference}`
      // The competing reservation was cancelled in between (its card network failed): try again.
      return existing.length === 0 ? yield* insert(t) : existing[0]!.id
    })

  // Insert first: the primary key decides between concurrent first requests; an existing key is then locked
  // while it is judged, so only one of several retries can take over an abandoned key.
  const start = (claim: KeyClaim, client: ClientId, now: DateTime.Utc): Effect.Effect<IdempotencyStart, SqlError> =>
    Effect.gen(function*() {
      const inserted = yield* sql`INSERT INTO idempotency_keys (client_id, idempotency_key, request_hash, request_id,
        started_at) VALUES (${client}, ${claim.key}, ${claim.requestHash}, ${claim.requestId}, ${ms(now)})
        ON CONFLICT (client_id, idempotency_key) DO NOTHING RETURNING client_id`
      if (inserted.length > 0) return started
      const row = (yield* sql<KeyRow>`SELECT ${keyColumns} FROM idempotency_keys
        WHERE client_id = ${client} AND idempotency_key = ${claim.key} ${forUpdate}`)[0]
      // Released in between: the key is new again.
      if (row === undefined) return yield* start(claim, client, now)
      const decided = decideStart(toKeyRecord(row), claim, now)
      if (decided._tag === "Started") {
        yield* sql`UPDATE idempotency_keys SET started_at = ${ms(now)}, request_id = ${claim.requestId}
          WHERE client_id = ${client} AND idempotency_key = ${claim.key}`
      }
      return decided
    })

  const keepAnswer = (client: ClientId, key: string, answer: KeptAnswer) => {
    const [kind, id] = answerColumns(answer)
    return sql`UPDATE idempotency_keys SET answer = ${kind}, transfer_id = ${id}
      WHERE client_id = ${client} AND idempotency_key = ${key} AND answer IS NULL`
  }

  // Starts the key, then writes the transfer (and, when it is final, keeps it as the key's answer). A taken
  // reference is answered after the commit, so that the started key stays for the caller to answer.
  const write = (t: Transfer, claim: KeyClaim | undefined, final: boolean) =>
    Effect.gen(function*() {
      if (claim !== undefined) {
        const decided = yield* start(claim, t.clientId, t.createdAt)
        if (decided._tag !== "Started") return decided
      }
      const existing = yield* insert(t)
      if (existing !== undefined) return existing
      if (final && claim !== undefined) {
        yield* keepAnswer(t.clientId, claim.key, KeptAnswer.TransferMade({ transferId: t.id }))
      }
      return started
    }).pipe(
      sql.withTransaction,
      Effect.orDie,
      Effect.flatMap((r) => typeof r === "string" ? new DuplicateReference({ existing: r }) : Effect.succeed(r))
    )

  const settle: TransferStoreShape["settle"] = (t, key) =>
    Effect.gen(function*() {
      yield* sql`UPDATE transfers SET status = ${t.status}, failure_code = ${t.failure?.code ?? null},
        decline_code = ${t.failure?.decline_code ?? null}, authorization_code = ${t.authorizationCode ?? null}
        WHERE id = ${t.id} AND status = 'pending'`
      if (key !== undefined) yield* keepAnswer(t.clientId, key, KeptAnswer.TransferMade({ transferId: t.id }))
    }).pipe(sql.withTransaction, Effect.orDie)

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

  const transferWhere = (client: ClientId, column: "id" | "reference", value: string) =>
    sql<TransferRow>`SELECT ${columns} FROM transfers WHERE client_id = ${client} AND ${sql(column)} = ${value}`.pipe(
      Effect.map((rows) => Option.map(first(rows), toTransfer)),
      Effect.orDie
    )

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
    keep: (client, key, answer) => Effect.orDie(keepAnswer(client, key, answer)),
    release: (client, key) =>
      Effect.orDie(sql`DELETE FROM idempotency_keys
        WHERE client_id = ${client} AND idempotency_key = ${key} AND answer IS NULL`),
    get: (client, id) => transferWhere(client, "id", id),
    byReference: (client, reference) => transferWhere(client, "reference", reference),
    list,
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
