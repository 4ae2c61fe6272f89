// Token buckets in memory, one per key (an IP address, an API key's hash). They are per process: with
// several instances each enforces its own share, which bounds abuse without a shared store on the hot path.
export interface RateLimit {
  readonly limit: number
  readonly perMillis: number
}

// Answers 0 when the request may go ahead, else the seconds to wait before retrying.
export type RateLimiter = (key: string, now: number) => number

export const makeRateLimiter = ({ limit, perMillis }: RateLimit): RateLimiter => {
  const buckets = new Map<string, { tokens: number; at: number }>()
  const refill = limit / perMillis
  return (key: string, now: number): number => {
    if (limit <= 0) return 0
    if (buckets.size > 50_000) {
      for (const [k, b] of buckets) if (b.tokens + (now - b.at) * refill >= limit) buckets.delete(k)
    }
    const bucket = buckets.get(key) ?? { tokens: limit, at: now }
    bucket.tokens = Math.min(limit, bucket.tokens + (now - bucket.at) * refill)
    bucket.at = now
    buckets.set(key, bucket)
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1
      return 0
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / refill / 1000))
  }
}
