import { RateLimiterStore, RateLimitStoreError } from "@effect/experimental/RateLimiter"
import { Duration, Effect, Layer, Schedule } from "effect"
import { PgDirect, statement } from "./PgClient.ts"

// @effect/experimental's RateLimiter with its state in PostgreSQL, so that every instance on the database draws
// from the same buckets. A token bucket is one row, refilled and drawn from in one statement (its row lock
// orders concurrent draws); a draw that would go below zero takes nothing.
const tokenBucket = statement(
  "rate_limit_draw",
  `INSERT INTO rate_limits AS r (key, tokens, refilled_at, consumed)
   VALUES ($1, $2::float8 - $3::float8, clock_timestamp(), $2::float8 >= $3::float8)
   ON CONFLICT (key) DO UPDATE SET
     tokens = CASE WHEN $5::boolean OR least($2::float8, r.tokens
         + extract(epoch FROM clock_timestamp() - r.refilled_at) * 1000 / $4::float8) >= $3::float8
       THEN least($2::float8, r.tokens + extract(epoch FROM clock_timestamp() - r.refilled_at) * 1000 / $4::float8)
         - $3::float8
       ELSE least($2::float8, r.tokens + extract(epoch FROM clock_timestamp() - r.refilled_at) * 1000 / $4::float8)
       END,
     consumed = $5::boolean OR least($2::float8, r.tokens
       + extract(epoch FROM clock_timestamp() - r.refilled_at) * 1000 / $4::float8) >= $3::float8,
     refilled_at = clock_timestamp()
   RETURNING CASE WHEN consumed THEN tokens ELSE tokens - $3::float8 END AS remaining`
)

// Full buckets need no row: rows untouched for an hour (every limit here refills within one) are removed.
const sweep = statement("rate_limit_sweep", `DELETE FROM rate_limits WHERE refilled_at < now() - interval '1 hour'`)

const failed = (cause: unknown) => new RateLimitStoreError({ message: "PostgreSQL rate limit store failed", cause })

export const layer = Layer.scoped(
  RateLimiterStore,
  Effect.gen(function*() {
    const { query } = yield* PgDirect
    yield* query(sweep, []).pipe(
      Effect.ignore,
      Effect.repeat(Schedule.spaced(Duration.minutes(1))),
      Effect.forkScoped
    )
    return RateLimiterStore.of({
      tokenBucket: ({ allowOverflow, key, limit, refillRate, tokens }) =>
        query<{ remaining: number }>(tokenBucket, [key, limit, tokens, Duration.toMillis(refillRate), allowOverflow])
          .pipe(
            Effect.map((rows) => Math.floor(rows[0]!.remaining)),
            Effect.mapError(failed)
          ),
      fixedWindow: () => Effect.die("the PostgreSQL rate limit store keeps token buckets only")
    })
  })
)
