import { Cause, Clock, Deferred, Duration, Effect, Exit, FiberId, Random } from "effect"
import { globalValue } from "effect/GlobalValue"
import { retryDelay } from "./Backoff.ts"

// The database is a destination like the SMTP server: a background pass that fails (the stores fail only when
// the database does) waits before the next, with capped, jittered backoff, instead of retrying at once. The
// process logs one line when its first loop fails and one when a loop succeeds again, whatever the number of
// loops and passes in between; each loop keeps its own count of failures for its waits. The first loop whose pass
// succeeds after failing ends the other loops' waits: the database is back, and the work they hold or that is due
// is not left to the rest of their backoff. Each loop's count stays, so a database that answers one loop and not the
// next sends that one back to a wait as long as before.
export const StorageBackoffCap = Duration.seconds(15)
const StorageBackoffFloor = Duration.millis(100)

export const storageDelay = (failures: number, random: number): Duration.Duration =>
  Duration.max(StorageBackoffFloor, Duration.min(retryDelay(failures - 1, random), StorageBackoffCap))

// A pass that only reads succeeds while writes still fail (a full disk): the outage ends once a pass succeeds
// with no failure anywhere for StorageSettle.
const StorageSettle = Duration.seconds(3)
const outage = globalValue("paysub/StorageOutage", () => ({
  since: undefined as number | undefined,
  last: 0,
  back: Deferred.unsafeMake<void>(FiberId.none)
}))
const announceBack = () => {
  Deferred.unsafeDone(outage.back, Exit.void)
  outage.back = Deferred.unsafeMake<void>(FiberId.none)
}

// What failed, in one line: the error's message and its cause's (a SqlError's driver error).
const describe = (cause: Cause.Cause<unknown>): string => {
  const e = Cause.squash(cause) as { message?: unknown; cause?: { message?: unknown } }
  return [e?.message, e?.cause?.message].filter((m) => typeof m === "string" && m !== "").join(": ") ||
    String(e)
}

export interface StorageBackoff {
  // Runs one pass; when it fails, logs the outage if it is the first failure, waits, and answers `fallback`.
  readonly guard: <A, E, R>(pass: Effect.Effect<A, E, R>, fallback: A) => Effect.Effect<A, never, R>
}

export const makeStorageBackoff = (loop: string): StorageBackoff => {
  let failures = 0
  const failed = (cause: Cause.Cause<unknown>) =>
    Effect.gen(function*() {
      failures++
      const now = yield* Clock.currentTimeMillis
      outage.last = now
      if (outage.since === undefined) {
        outage.since = now
        yield* Effect.logWarning("background work waits for the database", { loop, error: describe(cause) })
      }
      const back = outage.back
      yield* Effect.raceFirst(Effect.sleep(storageDelay(failures, yield* Random.next)), Deferred.await(back))
    })
  const succeeded = Effect.flatMap(Clock.currentTimeMillis, (now) => {
    if (failures > 0) announceBack()
    failures = 0
    const since = outage.since
    if (since === undefined || now - outage.last < Duration.toMillis(StorageSettle)) return Effect.void
    outage.since = undefined
    return Effect.logInfo("background work resumes: the database is back", { loop, down_ms: outage.last - since })
  })
  return {
    guard: (pass, fallback) =>
      pass.pipe(
        Effect.tap(() => succeeded),
        Effect.catchAllCause((cause) =>
          Cause.isInterruptedOnly(cause) ? Effect.interrupt : Effect.as(failed(cause), fallback)
        )
      )
  }
}
