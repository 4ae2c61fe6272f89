import { DateTime, Duration, Effect, FiberSet, Option, Queue, Random, Schedule } from "effect"
import { afterFailure, attemptsAllowed } from "./DestinationBackoff.ts"
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

    const attempt = (url: string, secret: string, delivery: Delivery) =>
      Effect.flatMap(DateTime.now, (now) =>
        sender.send({
          url,
          secret,
          id: delivery.eventId,
          timestamp: Math.floor(DateTime.toEpochMillis(now) / 1000),
          body: delivery.body
        })).pipe(Effect.either)

    // One pass of an endpoint's lane: false when it has nothing (more) to do now. Only a pass that `probes` tries
    // a failing endpoint, so that it gets one attempt at a time.
    const pass = (endpoint: EndpointId, probes: boolean) =>
      Effect.gen(function*() {
        const now = yield* DateTime.now
        const target = yield* store.target(endpoint)
        if (Option.isNone(target) || target.value.disabled) return false
        const { failingSince, retryAt, secret, url } = target.value
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
        const results = yield* Effect.forEach(due, (d) => attempt(url, secret, d), {
          concurrency: attemptsAllowed(failing, PerEndpoint)
        })
        const done = yield* DateTime.now
        const failures = results.flatMap((r) => (r._tag === "Left" ? [r.left.reason] : []))
        if (failures.length < results.length && failingSince !== undefined) yield* store.endpointRecovered(endpoint)
        const failure = failures.length === results.length
          ? afterFailure(failingSince, done, yield* Random.next)
          : undefined
        yield* store.delivered(due.filter((_, i) => results[i]!._tag === "Right").map((d) => d.id), done)
        // A failed delivery is due when its endpoint is tried again: the backlog moves with the endpoint.
        yield* Effect.forEach(results, (r, i) =>
          r._tag === "Left" ? store.failed(due[i]!.id, failure?.retryAt ?? done, r.left.reason) : Effect.void, {
          discard: true
        })
        if (failure === undefined) {
          return true
        }
        const reason = failures[failures.length - 1]!
        yield* store.endpointFailing(
          endpoint,
          { ...failure, reason },
          failure.giveUp ? disabledReason(failure.failingSince, reason) : undefined
        )
        yield* Effect.logWarning("webhook endpoint failing", { endpoint, reason, disabled: failure.giveUp })
        return false
      })

    const passes = (endpoint: EndpointId) =>
      Effect.forEach(
        Array.from({ length: PassesPerLane }, (_, i) => i === 0),
        (probes) => pass(endpoint, probes).pipe(Effect.repeat({ while: (more) => more })),
        { concurrency: "unbounded", discard: true }
      )

    const lane = (endpoint: EndpointId) =>
      passes(endpoint).pipe(
        Effect.catchAllCause((cause) => Effect.logError("webhook delivery failed", cause)),
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
      return yield* dispatch.pipe(
        Effect.catchAllCause((cause) => Effect.logError("webhook dispatch failed", cause)),
        Effect.zipRight(waitForWork),
        Effect.repeat(Schedule.forever)
      )
    }))

    return { run, deliverDue, wake: Queue.offer(wakeUps, undefined).pipe(Effect.asVoid) } as const
  })
}) {}
