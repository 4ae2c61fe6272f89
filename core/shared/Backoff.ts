import { Duration } from "effect"

export const RetryPolicy = { base: Duration.seconds(1), cap: Duration.minutes(5), maxAttempts: 50 } as const

// "Full jitter" exponential backoff: a uniformly random wait below min(cap, base * 2^attempt), so that many
// mails failing together do not retry together. `random` is a number in [0, 1).
export const retryDelay = (attempt: number, random: number): Duration.Duration => {
  const ceiling = Math.min(
    Duration.toMillis(RetryPolicy.cap),
    Duration.toMillis(RetryPolicy.base) * 2 ** Math.min(attempt, 30)
  )
  return Duration.millis(Math.floor(random * ceiling))
}
