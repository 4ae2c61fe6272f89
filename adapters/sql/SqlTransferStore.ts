import { SqlClient } from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { DateTime, Duration, Effect, Layer, Option } from "effect"
import type { CardBrand } from "../../core/Card.ts"
import type { CardErrorCode } from "../../core/CardNetwork.ts"
import type { CurrencyCode } from "../../core/Currency.ts"
import { type ClientId, DuplicateReference, type Reference, Transfer, type TransferId } from "../../core/Transfer.ts"
import {
  type Completion,
  type IdempotencyStart,
  TransferStore,
  type TransferStoreShape
} from "../../core/TransferStore.ts"
import { Dialect, millisOf } from "./Dialect.ts"

// A request whose first attempt has run this long without completing is taken to have died with its
// process; a retry may then take the key over (the reference keeps it from charging twice).
export const IdempotencyLease = Duration.minutes(1)

export interface TransferRow {
  readonly id: string
  readonly client_id: string
  readonly reference: string
  readonly amount: number | bigint | string
  readonly currency: string
  readonly status: "pending" | "approved" | "declined"
  readonly sender_first_name: string
  readonly sender_middle_name: string | null
  readonly sender_email: string
  readonly card_brand: string
  readonly card_last4: string
  readonly card_exp_month: number
  readonly card_exp_year: number
  readonly card_fingerprint: string
  readonly recipient_first_name: string
  readonly recipient_middle_name: string | null
  readonly recipient_email: string
  readonly recipient_merchant_id: string
  readonly failure_code: string | null
  readonly decline_code: string | null
  readonly authorization_code: string | null
  readonly created_at: unknown
}

const millis = DateTime.toEpochMillis

const optional = <K extends string>(key: K, value: string | null) =>
  (value === null ? {} : { [key]: value }) as { [P in K]?: string }

// A row this store wrote, through the constraints of its table: mapped, not validated again.
export const toTransfer = (r: TransferRow) =>
  new Transfer({
    id: r.id as TransferId,
    clientId: r.client_id as ClientId,
    reference: r.reference as Reference,
    amount: BigInt(r.amount),
    currency: r.currency as CurrencyCode,
    status: r.status,
    sender: {
      first_name: r.sender_first_name,
      ...optional("middle_name", r.sender_middle_name),
      email: r.sender_email,
      card: {
        brand: r.card_brand as CardBrand,
        last4: r.card_last4,
        exp_month: Number(r.card_exp_month),
        exp_year: Number(r.card_exp_year),
        fingerprint: r.card_fingerprint
      }
    },
    recipient: {
      first_name: r.recipient_first_name,
      ...optional("middle_name", r.recipient_middle_name),
      email: r.recipient_email,
      merchant_id: r.recipient_merchant_id
    },
    ...(r.failure_code === null ? {} : {
      failure: { code: r.failure_code as CardErrorCode, ...optional("decline_code", r.decline_code) }
    }),
    ...optional("authorizationCode", r.authorization_code),
    createdAt: DateTime.unsafeMake(millisOf(r.created_at))
  }, { disableValidation: true })

// The amount is read as text: SQLite drivers hand out INTEGERs as JS numbers, exact only up to 2^53.
export const TransferColumns = `id, client_id, reference, CAST(amount AS TEXT) AS amount, currency, status,
    sender_first_name, sender_middle_name, sender_email, card_brand, card_last4, card_exp_month, card_exp_year,
    card_fingerprint, recipient_first_name, recipient_middle_name, recipient_email, recipient_merchant_id,
    failure_code, decline_code, authorization_code, created_at`

// A transfer as a row of its table; `time` turns a time into the dialect's parameter.
export const transferRow = (t: Transfer, time: (ms: number) => number | Date) => ({
  id: t.id,
  client_id: t.clientId,
  reference: t.reference,
  amount: t.amount,
  currency: t.currency,
  status: t.status,
  sender_first_name: t.sender.first_name,
  sender_middle_name: t.sender.middle_name ?? null,
  sender_email: t.sender.email,
  card_brand: t.sender.card.brand,
  card_last4: t.sender.card.last4,
  card_exp_month: t.sender.card.exp_month,
  card_exp_year: t.sender.card.exp_year,
  card_fingerprint: t.sender.card.fingerprint,
  recipient_first_name: t.recipient.first_name,
  recipient_middle_name: t.recipient.middle_name ?? null,
  recipient_email: t.recipient.email,
  recipient_merchant_id: t.recipient.merchant_id,
  failure_code: t.failure?.code ?? null,
  decline_code: t.failure?.decline_code ?? null,
  authorization_code: t.authorizationCode ?? null,
  created_at: time(millis(t.createdAt))
})

export const make = Effect.gen(function*() {
  const sql = yield* SqlClient
  const { forUpdate, time } = yield* Dialect
  // A time as a query parameter.
  const ms = (t: DateTime.Utc) => time(millis(t))
  const first = <A>(rows: ReadonlyArray<A>) => Option.fromNullable(rows[0])
  const columns = sql.literal(TransferColumns)

  const insert = (t: Transfer): Effect.Effect<void, DuplicateReference | SqlError> =>
    Effect.gen(function*() {
      const inserted = yield* sql`INSERT INTO transfers ${
        sql.insert(transferRow(t, time))
      } ON CONFLICT (client_id, reference) DO NOTHING RETURNING id`
      if (inserted.length === 0) {
        const existing = yield* sql<{ id: string }>`
          SELECT id FROM transfers WHERE client_id = ${t.clientId} AND reference = ${t.reference}`
        // The competing reservation was cancelled in between (its card network failed): try again.
        if (existing.length === 0) return yield* insert(t)
        return yield* new DuplicateReference({ existing: existing[0]!.id as TransferId })
      }
    })

  const complete = (t: Transfer, completion?: Completion) =>
    Effect.gen(function*() {
      if (completion !== undefined) {
        const response = completion.response(t)
        yield* sql`UPDATE idempotency_keys
          SET response_status = ${response.status}, response_body = ${response.body}, completed_at = ${ms(t.createdAt)}
          WHERE client_id = ${t.clientId} AND idempotency_key = ${completion.key}`
      }
      return t
    })

  const record: TransferStoreShape["record"] = (t, completion) =>
    Effect.zipRight(insert(t), complete(t, completion)).pipe(
      sql.withTransaction,
      Effect.catchTag("SqlError", Effect.die)
    )

  const reserve: TransferStoreShape["reserve"] = (t) =>
    insert(t).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die))

  const settle: TransferStoreShape["settle"] = (t, completion) =>
    Effect.gen(function*() {
      yield* sql`UPDATE transfers SET status = ${t.status}, failure_code = ${t.failure?.code ?? null},
        decline_code = ${t.failure?.decline_code ?? null}, authorization_code = ${t.authorizationCode ?? null}
        WHERE id = ${t.id} AND status = 'pending'`
      return yield* complete(t, completion)
    }).pipe(sql.withTransaction, Effect.orDie)

  const cancel: TransferStoreShape["cancel"] = (t) =>
    Effect.orDie(sql`DELETE FROM transfers WHERE id = ${t.id} AND status = 'pending'`)

  // Insert first: the primary key decides between concurrent first requests; an existing record is then
  // locked while it is judged, so only one of several retries can take over an abandoned key.
  const beginIdempotent: TransferStoreShape["beginIdempotent"] = (client, key, requestHash, now) =>
    Effect.gen(function*() {
      const inserted = yield* sql`INSERT INTO idempotency_keys (client_id, idempotency_key, request_hash, started_at)
        VALUES (${client}, ${key}, ${requestHash}, ${ms(now)})
        ON CONFLICT (client_id, idempotency_key) DO NOTHING RETURNING client_id`
      if (inserted.length > 0) return { _tag: "Started" } as IdempotencyStart
      const r = (yield* sql<
        { request_hash: string; started_at: unknown; response_status: number | null; response_body: string | null }
      >`SELECT request_hash, started_at, response_status, response_body FROM idempotency_keys
        WHERE client_id = ${client} AND idempotency_key = ${key} ${forUpdate}`)[0]!
      if (r.request_hash !== requestHash) return { _tag: "Mismatch" } as IdempotencyStart
      if (r.response_status !== null) {
        return {
          _tag: "Replay",
          response: { status: Number(r.response_status), body: r.response_body! }
        } as IdempotencyStart
      }
      if (millisOf(r.started_at) + Duration.toMillis(IdempotencyLease) <= millis(now)) {
        yield* sql`UPDATE idempotency_keys SET started_at = ${ms(now)}
          WHERE client_id = ${client} AND idempotency_key = ${key}`
        return { _tag: "Started" } as IdempotencyStart
      }
      return { _tag: "InProgress" } as IdempotencyStart
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
    record,
    reserve,
    settle,
    cancel,
    get: (client, id) =>
      sql<TransferRow>`SELECT ${columns} FROM transfers WHERE client_id = ${client} AND id = ${id}`.pipe(
        Effect.map((rows) => Option.map(first(rows), toTransfer)),
        Effect.orDie
      ),
    byReference: (client, reference) =>
      sql<TransferRow>`SELECT ${columns} FROM transfers WHERE client_id = ${client} AND reference = ${reference}`.pipe(
        Effect.map((rows) => Option.map(first(rows), toTransfer)),
        Effect.orDie
      ),
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
      ),
    beginIdempotent,
    completeIdempotent: (client, key, response) =>
      Effect.orDie(sql`UPDATE idempotency_keys
        SET response_status = ${response.status}, response_body = ${response.body}
        WHERE client_id = ${client} AND idempotency_key = ${key}`),
    releaseIdempotent: (client, key) =>
      Effect.orDie(sql`DELETE FROM idempotency_keys
        WHERE client_id = ${client} AND idempotency_key = ${key} AND response_status IS NULL`)
  })
})

export const layer = Layer.effect(TransferStore, make)
