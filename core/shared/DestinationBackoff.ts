import { DateTime, Duration } from "effect"

// Backoff per destination (the SMTP server, a webhook endpoint), not per row: while a destination fails, only
// one attempt at a time probes it, at capped, jittered intervals that grow with how long it has been failing;
// the first success resumes its whole backlog. Waits grow with the outage (a share of it) rather than
// doubling per attempt, so a destination back after a minute is probed again within seconds, and one down
// for days is asked about once an hour.
export const DestinationBackoff = {
  floor: Duration.seconds(10),
  share: 0.15,
  cap: Duration.hours(1),
  giveUpAfter: Duration.days(3)
} as const

// The wait before the next attempt, for a destination failing for `failingFor`: uniform in [c/2, c) with
// c = min(cap, max(floor, share * failingFor)). `random` is a number in [0, 1).
export const destinationDelay = (failingFor: Duration.Duration, random: number): Duration.Duration =>
  jittered(
    Math.min(
      Duration.toMillis(DestinationBackoff.cap),
      Math.max(Duration.toMillis(DestinationBackoff.floor), DestinationBackoff.share * Duration.toMillis(failingFor))
    ),
    random
  )

// The wait before a row's next attempt after its `attempts`-th failed while its destination took others (a webhook
// receiver that refuses one event and accepts the rest): the destination is not failing, so the row waits on its
// own, uniform in [c/2, c) with c = min(cap, floor * 2^(attempts - 1)).
export const rowDelay = (attempts: number, random: number): Duration.Duration =>
  jittered(
    Math.min(
      Duration.toMillis(DestinationBackoff.cap),
      Duration.toMillis(DestinationBackoff.floor) * 2 ** Math.min(Math.max(attempts, 1) - 1, 20)
    ),
    random
  )

const jittered = (ceiling: number, random: number) =>
  Duration.millis(Math.min(ceiling - 1, Math.floor(ceiling / 2 + (random * ceiling) / 2)))

export interface DestinationFailure {
  readonly failingSince: DateTime.Utc
  readonly retryAt: DateTime.Utc
  // Failing for longer than giveUpAfter: a webhook endpoint is disabled.
  readonly giveUp: boolean
}

export const afterFailure = (
  failingSince: DateTime.Utc | undefined,
  now: DateTime.Utc,
  random: number
): DestinationFailure => {
  const since = failingSince ?? now
  const failingFor = Duration.millis(Math.max(0, DateTime.toEpochMillis(now) - DateTime.toEpochMillis(since)))
  return {
    failingSince: since,
    retryAt: DateTime.addDuration(now, destinationDelay(failingFor, random)),
    giveUp: Duration.greaterThanOrEqualTo(failingFor, DestinationBackoff.giveUpAfter)
  }
}

// How many attempts a destination gets at once: one probe while it is failing, else its concurrency.
export const attemptsAllowed = (failing: boolean, concurrency: number) => (failing ? 1 : concurrency)
