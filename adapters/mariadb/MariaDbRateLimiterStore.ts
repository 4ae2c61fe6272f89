import { RateLimiterStore, RateLimitStoreError } from "@effect/experimental/RateLimiter"
import { SqlClient } from "@effect/sql/SqlClient"
import { Clock, Duration, Effect, Layer, Schedule } from "effect"
import { MariaDbDirect } from "./MariaDbDirect.ts"

const draw = `INSERT INTO rate_limits (bucket, tokens, refilled_at) VALUES (?, ?, ?)
  ON DUPLICATE KEY UPDATE bucket = bucket RETURNING tokens, refilled_at`
const refill = `UPDATE rate_limits SET tokens = ?, refilled_at = ? WHERE bucket = ?`

// @effect/experimental's RateLimiter with its token buckets in MariaDB, so that every instance on the database
// draws from the same ones: a bucket's row is locked, refilled for the time since, drawn from and written back
// in one transaction. A draw that would go below zero takes nothing.
export const layer = Layer.scoped(
  RateLimiterStore,
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const direct = yield* MariaDbDirect
    // Full buckets need no row: rows untouched for an hour (every limit here refills within one) are removed.
    yield* Clock.currentTimeMillis.pipe(
      Effect.flatMap((now) => sql`DELETE FROM rate_limits WHERE refilled_at < ${now - 3_600_000}`),
      Effect.ignore,
      Effect.repeat(Schedule.spaced(Duration.minutes(1))),
      Effect.forkScoped
    )
    return RateLimiterStore.of({
      tokenBucket: ({ allowOverflow, key, limit, refillRate, tokens }) =>
        direct.transaction(Effect.gen(function*() {
          const asked = yield* Clock.currentTimeMillis
          // The row made full if missing, and locked either way (a locking read of a missing row locks nothing
          // under READ COMMITTED: concurrent first draws would each find the bucket full).
          const [row] = yield* direct.query<{ tokens: number; refilled_at: number }>(draw, [key, limit, asked])
          // A draw that waited for the lock, or an instance whose clock is behind, can read a time before the
          // bucket's last refill: the bucket's time never goes back, so such a draw finds no refill and loses none.
          const refilledAt = Number(row!.refilled_at)
          const now = Math.max(asked, refilledAt)
          const available = Math.min(limit, Number(row!.tokens) + (now - refilledAt) / Duration.toMillis(refillRate))
          const consumed = allowOverflow || available >= tokens
          const left = consumed ? available - tokens : available
          yield* direct.query(refill, [left, now, key])
          return Math.floor(consumed ? left : left - tokens)
        })).pipe(
          Effect.mapError((cause) => new RateLimitStoreError({ message: "MariaDB rate limit store failed", cause }))
        ),
      fixedWindow: () => Effect.die("the MariaDB rate limit store keeps token buckets only")
    })
  })
)
