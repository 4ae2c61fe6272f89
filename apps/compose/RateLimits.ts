import * as RateLimiterRedis from "@effect/experimental/RateLimiter/Redis"
import { Layer, Option, Redacted } from "effect"
import { makeLimiters } from "../http/pipeline/Edge.ts"
import { sharedLimiterLayer } from "../http/pipeline/SharedLimiter.ts"
import type { AppConfig } from "./Config.ts"
import { storageOf } from "./Storage.ts"

// redis://[user:password@]host[:port][/db], as ioredis reads it.
const redisOptions = (url: string) => {
  const parsed = new URL(url)
  return {
    host: parsed.hostname,
    port: Number(parsed.port || 6379),
    db: Number(parsed.pathname.slice(1) || 0),
    ...(parsed.username === "" ? {} : { username: decodeURIComponent(parsed.username) }),
    ...(parsed.password === "" ? {} : { password: decodeURIComponent(parsed.password) }),
    ...(parsed.protocol === "rediss:" ? { tls: {} } : {}),
    // A Redis that does not answer lets requests through (apps/http/pipeline/SharedLimiter.ts) instead of holding them.
    maxRetriesPerRequest: 1,
    commandTimeout: 500
  }
}

export const rateLimits = (config: AppConfig) => {
  const limits = {
    subscribe: { limit: config.subscribeRateLimit, perMillis: 60_000 },
    merchant: { limit: config.merchantRateLimit, perMillis: 1_000 },
    signIn: { limit: config.consoleSignInRateLimit, perMillis: 60_000 }
  }
  // Several instances run only on a database they share: there the limits are shared, in the database's rate
  // limit store, or in Redis when REDIS_URL is set.
  const shared = !storageOf(config.databaseUrl)?.shared ? Layer.empty : Option.match(config.redisUrl, {
    onNone: () => sharedLimiterLayer(limits),
    onSome: (url) =>
      sharedLimiterLayer(limits).pipe(
        Layer.provide(RateLimiterRedis.layerStore({ ...redisOptions(Redacted.value(url)), prefix: "paysub:rl:" }))
      )
  })
  return { limiters: makeLimiters(limits), shared }
}
