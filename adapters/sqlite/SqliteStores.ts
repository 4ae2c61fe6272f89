import { DateTime, Effect, Layer, Option } from "effect"
import { normalizeEmail } from "../../core/Email.ts"
import { decideSubscribe } from "../../core/Subscription.ts"
import { SubscriptionStore } from "../../core/SubscriptionStore.ts"
import type { ClientId, Transfer } from "../../core/Transfer.ts"
import { TransferStore } from "../../core/TransferStore.ts"
import * as SqlSubscriptionStore from "../sql/SqlSubscriptionStore.ts"
import * as SqlTransferStore from "../sql/SqlTransferStore.ts"
import { SqliteDirect } from "./SqliteClient.ts"

// The storage adapter on SQLite: the shared SQL stores, with the methods every loaded request calls run
// through SqliteDirect (one synchronous function per transaction on prepared statements, in the same group
// commit) instead of statement by statement through @effect/sql, which cost several times the SQLite work.
// Each fast method takes the common case only and hands anything else to the shared store's own method, which
// starts from scratch in a transaction of its own: a subscription that already exists, a reference already
// taken, a transfer with an idempotent response to keep. Same statements, same rules, same rows.

const millis = DateTime.toEpochMillis
const orDie = Effect.orDie

const insertTransfer = (() => {
  let sql: string | undefined
  return (row: Record<string, unknown>) =>
    sql ??= `INSERT INTO transfers (${Object.keys(row).join(", ")}) VALUES (${
      Object.keys(row).map(() => "?").join(", ")
    }) ON CONFLICT (client_id, reference) DO NOTHING RETURNING id`
})()

export const subscriptionStore = Layer.effect(
  SubscriptionStore,
  Effect.gen(function*() {
    const shared = yield* SqlSubscriptionStore.make
    const direct = yield* SqliteDirect
    const fresh = decideSubscribe(undefined, 0)
    // Statement texts are made once: each is also the key of its prepared statement, hashed on every lookup.
    const feedByName = `SELECT ${SqlSubscriptionStore.FeedColumns} FROM feeds WHERE name = ? AND deleted_at IS NULL`
    const insertSubscription = `INSERT INTO subscriptions (email, email_key, name, feed, status, created_at, updated_at)
      VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (email_key, feed) DO NOTHING
      RETURNING ${SqlSubscriptionStore.SubscriptionColumns}`
    return SubscriptionStore.of({
      ...shared,
      findFeed: (name) =>
        orDie(
          direct.read((db) => Option.map(Option.fromNullable(db.get(feedByName, [name])), SqlSubscriptionStore.feedOf))
        ),
      // A new address: the subscription and its confirmation mail, written together.
      subscribe: (request) => {
        const now = millis(request.now)
        return direct.transaction((db) => {
          const row = db.get(
            insertSubscription,
            [request.email, normalizeEmail(request.email), request.name, request.feed, fresh.status, now, now]
          )
          if (row === undefined) return undefined
          if (fresh.queueConfirmation) {
            db.run(
              `INSERT INTO mail_outbox (kind, subscription_id, created_at, next_attempt_at)
               VALUES ('confirmation', ?, ?, ?)`,
              [row.id, now, now]
            )
          }
          return { subscription: SqlSubscriptionStore.subscriptionOf(row), queued: fresh.queueConfirmation }
        }).pipe(orDie, Effect.flatMap((done) => done === undefined ? shared.subscribe(request) : Effect.succeed(done)))
      }
    })
  })
)

export const transferStore = Layer.effect(
  TransferStore,
  Effect.gen(function*() {
    const shared = yield* SqlTransferStore.make
    const direct = yield* SqliteDirect
    const transfer = (where: string) => {
      const sql = `SELECT ${SqlTransferStore.TransferColumns} FROM transfers WHERE ${where}`
      return (params: ReadonlyArray<unknown>) =>
        orDie(
          direct.read((db) =>
            Option.map(
              Option.fromNullable(db.get<SqlTransferStore.TransferRow>(sql, params)),
              SqlTransferStore.toTransfer
            )
          )
        )
    }
    const byId = transfer("client_id = ? AND id = ?")
    const byReference = transfer("client_id = ? AND reference = ?")
    // The transfer's row, unless its reference is taken (then the shared store says by which transfer).
    const insert = (t: Transfer) => {
      const row = SqlTransferStore.transferRow(t, (ms) => ms)
      return direct.transaction((db) => db.get(insertTransfer(row), Object.values(row)) !== undefined).pipe(orDie)
    }
    return TransferStore.of({
      ...shared,
      clientByKeyHash: (keyHash) =>
        orDie(direct.read((db) =>
          Option.fromNullable(
            db.get<{ id: ClientId; name: string }>(`SELECT id, name FROM api_clients WHERE key_hash = ?`, [keyHash])
          )
        )),
      get: (client, id) => byId([client, id]),
      byReference: (client, reference) => byReference([client, reference]),
      reserve: (t) => Effect.flatMap(insert(t), (inserted) => inserted ? Effect.void : shared.reserve(t)),
      record: (t, completion) =>
        completion !== undefined
          ? shared.record(t, completion)
          : Effect.flatMap(insert(t), (inserted) => inserted ? Effect.succeed(t) : shared.record(t)),
      settle: (t, completion) =>
        completion !== undefined ? shared.settle(t, completion) : direct.transaction((db) =>
          db.run(
            `UPDATE transfers SET status = ?, failure_code = ?, decline_code = ?, authorization_code = ?
             WHERE id = ? AND status = 'pending'`,
            [t.status, t.failure?.code ?? null, t.failure?.decline_code ?? null, t.authorizationCode ?? null, t.id]
          )
        ).pipe(Effect.as(t), orDie)
    })
  })
)
