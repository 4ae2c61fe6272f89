import { DateTime, Effect, Layer, Option } from "effect"
import { normalizeEmail } from "../../core/Email.ts"
import { decideSubscribe } from "../../core/Subscription.ts"
import { SubscriptionStore } from "../../core/SubscriptionStore.ts"
import * as SqlSubscriptionStore from "../sql/SqlSubscriptionStore.ts"
import { SqliteDirect } from "./SqliteClient.ts"

// The subscription store on SQLite: the shared SQL store, with the methods every loaded request calls run
// through SqliteDirect (one synchronous function per transaction on prepared statements, in the same group
// commit) instead of statement by statement through @effect/sql, which cost several times the SQLite work.
// Each fast method takes the common case only and hands anything else to the shared store's own method, which
// starts from scratch in a transaction of its own: a subscription that already exists. Same statements, same
// rules, same rows.

const millis = DateTime.toEpochMillis
const orDie = Effect.orDie

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

// The transfer store has a file of its own: adapters/sqlite/SqliteTransferStore.ts.
export { layer as transferStore } from "./SqliteTransferStore.ts"
