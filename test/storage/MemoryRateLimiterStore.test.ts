// @effect/experimental's in-memory RateLimiterStore (what the SQLite set-up runs) through the rate limit
// store contract.
import * as RateLimiter from "@effect/experimental/RateLimiter"
import { rateLimiterStoreContract } from "./RateLimiterStore.contract.ts"

rateLimiterStoreContract("in-memory (RateLimiter.layerStoreMemory)", () => RateLimiter.layerStoreMemory)
