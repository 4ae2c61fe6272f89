import { DateTime, Duration, Effect, FiberSet, Option, Queue, Random, Schedule } from "effect"
import { afterFailure, attemptsAllowed, type DestinationFailure } from "../shared/DestinationBackoff.ts"
import { makeStorageBackoff } from "../shared/StorageBackoff.ts"
import { type Delivery, disabledReason, type EndpointId, WebhookSender, WebhookStore } from "./Webhooks.ts"

// Deliveries are leased like the mail outbox's rows: a process that dies while sending leaves them due again
// once the lease ends (so a delivery may arrive twice, with the same webhook-id: at-least-once). The lease
// outlasts one attempt, which the sender bounds at 10 s.
export const DeliveryLease = Duration.seconds(60)
// Attempts in flight per endpoint; each endpoint has its own lane, so a slow one holds up no other. A lane
// claims a batch of several times that, so that claiming and marking cost a few statements per batch.
export const PerEndpoint = 16
const Batch = 64
// Passes of one lane at once: while one waits for its claim or its marks to commit, another sends. The claim's
// lease keeps them from taking the same deliveries, as it keeps instances apart.
const PassesPerLane = 3
const MaxEndpoints = 256
const PollInterval = Duration.seconds(1)

export class WebhookWorker extends Effect.Service<WebhookWorker>()("WebhookWorker", {
  effect: Effect.gen(function*() {
    const store = yield* WebhookStore
    const sender = yield* WebhookSender
    const wakeUps = yield* Queue.sliding<void>(1)
    const running = new Set<EndpointId>()

    // A lane's passes share its endpoint's PerEndpoint slots, so that at most that many attempts are in flight
    // however many passes run. An attempt that fails while none of the lane's attempts succeeded marks the
    // endpoint failing at once (a hung endpoint within one attempt's time-out, not after the batch); the lane's
    // attempts not started yet are then not started, and wait for the endpoint's probe with the failed ones.
    interface Lane {
      readonly slots: Effect.Semaphore
      successes: number
      failure?: DestinationFailure
    }
    // Read through a function: the field changes while a pass waits, which narrowing cannot know.
    const failureOf = (lane: Lane): DestinationFailure | undefined => lane.failure
    const newLane = Effect.map(Effect.makeSemaphore(PerEndpoint), (slots): Lane => ({ slots, successes: 0 }))
    type Result = "sent" | "skipped" | { readonly reason: string }

    const markFailing = (lane: Lane, endpoint: EndpointId, failingSince: DateTime.Utc | undefined, reason: string) =>
      Effect.gen(function*() {
        if (lane.failure !== undefined) return
        const failure = afterFailure(failingSince, yield* DateTime.now, yield* Random.next)
        lane.failure = failure
        yield* store.endpointFailing(
          endpoint,
          { ...failure, reason },
          failure.giveUp ? disabledReason(failure.failingSince, reason) : undefined
        )
        yield* Effect.logWarning("webhook endpoint failing", { endpoint, reason, disabled: failure.giveUp })
      })

    const attempt = (
      lane: Lane,
      endpoint: EndpointId,
      target: { readonly url: string; readonly secret: string; readonly failingSince: DateTime.Utc | undefined },
      delivery: Delivery
    ): Effect.Effect<Result> =>
      lane.slots.withPermits(1)(Effect.suspend(() => {
        if (lane.failure !== undefined) return Effect.succeed("skipped" as const)
        const successesBefore = lane.successes
        return Effect.flatMap(DateTime.now, (now) =>
          sender.send({
            url: target.url,
            secret: target.secret,
            id: delivery.eventId,
            timestamp: Math.floor(DateTime.toEpochMillis(now) / 1000),
            body: delivery.body
          })).pipe(
            // Marked delivered as soon as the receiver accepted it (the SQLite group commit joins these small
            // transactions), so a crash re-sends only the attempts in flight.
            Effect.zipRight(Effect.flatMap(DateTime.now, (at) => store.delivered([delivery.id], at))),
            Effect.as<Result>("sent"),
            Effect.tap(() => void lane.successes++),
            Effect.catchAll((e) =>
              Effect.as(
                lane.successes === successesBefore
                  ? markFailing(lane, endpoint, target.failingSince, e.reason)
                  : Effect.void,
                { reason: e.reason }
              )
            )
          )
      }))

    // One pass of an endpoint's lane: false when it has nothing (more) to do now. Only a pass that `probes` tries
    // a failing endpoint, so that it gets one attempt at a time.
    const pass = (lane: Lane, endpoint: EndpointId, probes: boolean) =>
      Effect.gen(function*() {
        const now = yield* DateTime.now
        const target = yield* store.target(endpoint)
        if (Option.isNone(target) || target.value.disabled || lane.failure !== undefined) return false
        const { failingSince, retryAt } = target.value
        if (retryAt !== undefined && DateTime.lessThan(now, retryAt)) return false
        const failing = failingSince !== undefined
        if (failing && !probes) return false
        const due = yield* store.claim(
          endpoint,
          now,
          DateTime.addDuration(now, DeliveryLease),
          attemptsAllowed(failing, Batch)
        )
        if (due.length === 0) return false
        const results = yield* Effect.forEach(due, (d) => attempt(lane, endpoint, target.value, d), {
          concurrency: attemptsAllowed(failing, PerEndpoint)
        })
        const done = yield* DateTime.now
        if (results.includes("sent") && failingSince !== undefined) yield* store.endpointRecovered(endpoint)
        // A failed delivery is due when its endpoint is tried again: the backlog moves with the endpoint.
        const nextAttempt = failureOf(lane)?.retryAt ?? done
        yield* Effect.forEach(results, (r, i) => {
          if (r === "sent") return Effect.void
          return store.failed(due[i]!.id, nextAttempt, r === "skipped" ? "endpoint failing" : r.reason)
        }, { discard: true })
        return failureOf(lane) === undefined
      })

    const passes = (endpoint: EndpointId) =>
      Effect.flatMap(newLane, (lane) =>
        Effect.forEach(
          Array.from({ length: PassesPerLane }, (_, i) => i === 0),
          (probes) => pass(lane, endpoint, probes).pipe(Effect.repeat({ while: (more) => more })),
          { concurrency: "unbounded", discard: true }
        ))

    // A lane whose pass fails (the database does) waits with the database's backoff before it ends, so that
    // dispatch does not start it again at once (core/shared/StorageBackoff.ts).
    const laneBackoff = makeStorageBackoff("webhook lanes")
    const lane = (endpoint: EndpointId) =>
      laneBackoff.guard(passes(endpoint), undefined).pipe(
        Effect.ensuring(Effect.sync(() => running.delete(endpoint)))
      )

    // Every lane with work now, each to its end: what `run` does once, without forking (for tests and tools).
    const deliverDue = Effect.flatMap(DateTime.now, (now) => store.dueEndpoints(now, MaxEndpoints)).pipe(
      Effect.flatMap((due) => Effect.forEach(due, passes, { concurrency: "unbounded", discard: true }))
    )

    const waitForWork = Effect.raceFirst(Queue.take(wakeUps), Effect.sleep(PollInterval))

    const run = Effect.scoped(Effect.gen(function*() {
      const lanes = yield* FiberSet.make()
      const dispatch = Effect.gen(function*() {
        const due = yield* store.dueEndpoints(yield* DateTime.now, MaxEndpoints)
        for (const endpoint of due) {
          if (running.has(endpoint)) continue
          running.add(endpoint)
          yield* FiberSet.run(lanes, lane(endpoint))
        }
      })
      const backoff = makeStorageBackoff("webhook dispatch")
      return yield* backoff.guard(dispatch, undefined).pipe(
        Effect.zipRight(waitForWork),
        Effect.repeat(Schedule.forever)
      )
    }))

    return { run, deliverDue, wake: Queue.offer(wakeUps, undefined).pipe(Effect.asVoid) } as const
  })
}) {}
