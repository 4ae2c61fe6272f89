import { RateLimiter } from "@effect/experimental"
import { Context, Duration, Effect, Layer } from "effect"
import { sha256 } from "../../../adapters/crypto/Sha256.ts"
import type { Limiters } from "./Edge.ts"
import type { RateLimit } from "./RateLimiter.ts"

// The rate limits shared by every instance (PostgreSQL, or Redis with REDIS_URL): @effect/experimental's
// RateLimiter (token buckets) over a store the instances share. The pipeline asks it only after the
// instance's own buckets (apps/http/pipeline/RateLimiter.ts) let a request through: a client over its limit is refused
// without a round trip. Answers 0, or the seconds to wait.
//
// A draw takes a lease of up to limit/20 tokens at once (1 for limits under 40), kept by the instance for one
// window: the next requests of the key spend it without a round trip. Leased tokens are already taken from the
// shared bucket, so no more than the limit ever goes through; what a lease leaves unspent when it expires is
// lost, so each instance may admit up to (lease - 1) fewer per window than the limit (docs/decisions/0031).
// A store that cannot be reached lets the request through (the instance's own buckets still apply) and says so
// in the log: once when it starts failing and once when it answers again, not per request.
export type SharedLimit = (kind: keyof Limiters, key: string) => Effect.Effect<number>

export class SharedLimiter extends Context.Tag("SharedLimiter")<SharedLimiter, SharedLimit>() {}

interface Lease {
  tokens: number
  readonly until: number
}

// An error and its causes' messages, on one line.
const messages = (e: unknown): string => {
  const all: Array<string> = []
  for (let at = e as { message?: unknown; cause?: unknown } | undefined; at != null && all.length < 4;) {
    if (typeof at.message === "string" && at.message !== "") all.push(at.message)
    at = at.cause as typeof at
  }
  return all.join(": ")
}

export const leaseSize = (limit: number) => Math.max(1, Math.floor(limit / 20))

export const sharedLimiterLayer = (limits: { readonly [K in keyof Limiters]: RateLimit }) =>
  Layer.effect(
    SharedLimiter,
    Effect.map(RateLimiter.make, (limiter): SharedLimit => {
      const leases = new Map<string, Lease>()
      const leasing = new Set<string>()
      const draw = (kind: keyof Limiters, key: string, tokens: number) => {
        const { limit, perMillis } = limits[kind]
        return limiter.consume({
          algorithm: "token-bucket",
          onExceeded: "fail",
          window: Duration.millis(perMillis),
          limit,
          tokens,
          // The shared store keeps no client address, nor anything a key could be told from.
          key: `${kind}:${sha256(key, "base64url")}`
        })
      }
      let failing = false
      const answered = Effect.suspend(() => {
        if (!failing) return Effect.void
        failing = false
        return Effect.logInfo("the shared rate limit store answers again")
      })
      const storeFailed = (e: unknown) =>
        Effect.suspend(() => {
          if (failing) return Effect.succeed(0)
          failing = true
          return Effect.as(
            Effect.logWarning("the shared rate limit store failed; requests go ahead until it is back", {
              error: messages(e)
            }),
            0
          )
        })
      const sweep = (now: number) => {
        for (const [k, lease] of leases) if (lease.until <= now) leases.delete(k)
      }
      return (kind, key) => {
        const { limit, perMillis } = limits[kind]
        if (limit <= 0) return Effect.succeed(0)
        const leaseKey = `${kind}:${key}`
        const now = Date.now()
        const lease = leases.get(leaseKey)
        if (lease !== undefined && lease.tokens > 0 && lease.until > now) {
          lease.tokens--
          return Effect.succeed(0)
        }
        // A lease when the bucket has one, else the one token this request needs. Only one lease is drawn at a
        // time per key: requests that arrive meanwhile (a burst) draw one token each, so a burst cannot take
        // leases that nobody is left to spend.
        const size = leasing.has(leaseKey) ? 1 : leaseSize(limit)
        const single = Effect.as(draw(kind, key, 1), 1)
        const leased = Effect.suspend(() => {
          leasing.add(leaseKey)
          return Effect.orElse(Effect.as(draw(kind, key, size), size), () => single).pipe(
            Effect.ensuring(Effect.sync(() => leasing.delete(leaseKey)))
          )
        })
        return (size === 1 ? single : leased).pipe(
          Effect.map((drawn) => {
            if (drawn > 1) {
              // Requests that drew at the same time add to one lease rather than replace each other's.
              const current = leases.get(leaseKey)
              if (current !== undefined && current.until > now) current.tokens += drawn - 1
              else {
                if (leases.size > 50_000) sweep(now)
                leases.set(leaseKey, { tokens: drawn - 1, until: now + perMillis })
              }
            }
            return 0
          }),
          Effect.tap(() => answered),
          Effect.catchAll((e) =>
            e.reason === "Exceeded"
              ? Effect.succeed(Math.max(1, Math.ceil(Duration.toMillis(e.retryAfter) / 1000)))
              : storeFailed(e)
          )
        )
      }
    })
  )
