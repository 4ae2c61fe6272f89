import { DateTime, Duration, Effect, FiberSet, Option, Queue, Random, Schedule } from "effect"
import { afterFailure, attemptsAllowed, type DestinationFailure, rowDelay } from "../shared/DestinationBackoff.ts"
import { type HeldClaims, makeHeldClaims } from "../shared/HeldClaims.ts"
import { makeStorageBackoff } from "../shared/StorageBackoff.ts"
import {
  type Answer,
  type Delivery,
  disabledReason,
  EndpointFailing,
  type EndpointId,
  type EndpointTarget,
  failedAttempt,
  failureOf,
  isDelivered,
  WebhookSender,
  WebhookStore
} from "./Webhooks.ts"

// Deliveries are leased like the mail outbox's rows: a process that dies while sending leaves them due again
// once the lease ends (so a delivery may arrive twice, with the same webhook-id: at-least-once). The lease
// outlasts one attempt, which the sender bounds at 10 s.
export const DeliveryLease = Duration.seconds(60)
// Attempts in flight per endpoint; each endpoint has its own lane, so a slow one holds up no other. A lane
// claims a batch of several times that, so that claiming costs a few statements per batch.
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
    // The deliveries this worker claimed and has not marked, by endpoint (core/shared/HeldClaims.ts).
    const heldBy = new Map<EndpointId, HeldClaims<Delivery, number>>()
    const heldOf = (endpoint: EndpointId) => {
      const found = heldBy.get(endpoint)
      if (found !== undefined) return found
      const made = makeHeldClaims((d: Delivery) => d.id, DeliveryLease)
      heldBy.set(endpoint, made)
      return made
    }

    // A lane's passes share its endpoint's PerEndpoint slots, so that at most that many attempts are in flight
    // however many passes run. A pass sends its claim in rounds of up to PerEndpoint attempts, handed to the
    // sender together, and marks each round's successes in one statement. A round in which nothing succeeded
    // while none of the lane's other attempts did either marks the endpoint failing at once (a hung endpoint
    // within one attempt's time-out, not after the batch); the lane's rounds not started yet are then not
    // started, and wait for the endpoint's probe with the failed ones.
    interface Lane {
      readonly slots: Effect.Semaphore
      successes: number
      failure?: DestinationFailure
    }
    // Read through a function: the field changes while a pass waits, which narrowing cannot know.
    const laneFailure = (lane: Lane): DestinationFailure | undefined => lane.failure
    const newLane = Effect.map(Effect.makeSemaphore(PerEndpoint), (slots): Lane => ({ slots, successes: 0 }))

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

    // The status each delivery the receiver accepted was answered with, until it is marked (a pass that fails
    // leaves it to the next, which marks it): kept by the held Delivery itself, so it goes when the claim does.
    const acceptedWith = new WeakMap<Delivery, number>()

    // One round: when its answers came, and each delivery's Answer (undefined: delivered, and marked so with its
    // attempt), or EndpointFailing for each when the endpoint failed before the round started.
    const round = (
      lane: Lane,
      endpoint: EndpointId,
      target: EndpointTarget,
      deliveries: ReadonlyArray<Delivery>,
      held: HeldClaims<Delivery, number>
    ): Effect.Effect<{ readonly at: DateTime.Utc; readonly answers: ReadonlyArray<Answer | undefined> }> =>
      lane.slots.withPermits(deliveries.length)(Effect.suspend(() => {
        if (lane.failure !== undefined) {
          return Effect.map(DateTime.now, (at) => ({ at, answers: deliveries.map(() => EndpointFailing) }))
        }
        const successesBefore = lane.successes
        return Effect.flatMap(DateTime.now, (now) => {
          const timestamp = Math.floor(DateTime.toEpochMillis(now) / 1000)
          return sender.send(deliveries.map((d) => ({
            url: target.url,
            secret: target.secret,
            id: d.eventId,
            timestamp,
            body: d.body
          })))
        }).pipe(Effect.flatMap((answers) =>
          Effect.gen(function*() {
            const at = yield* DateTime.now
            const sent = deliveries.flatMap((d, i) => {
              const answer = answers[i]!
              return isDelivered(answer) ? [{ id: d.id, status: answer }] : []
            })
            const failed = answers.find((a) => !isDelivered(a))
            // Marked delivered as soon as the receiver accepted the round (the SQLite group commit joins these
            // transactions), so a crash re-sends only the rounds in flight.
            if (sent.length > 0) {
              lane.successes += sent.length
              deliveries.forEach((d, i) => {
                const answer = answers[i]!
                if (isDelivered(answer)) acceptedWith.set(d, answer)
              })
              const ids = sent.map((d) => d.id)
              held.accepted(ids)
              yield* store.delivered(sent, at)
              held.done(ids)
            } else if (lane.successes === successesBefore && failed !== undefined) {
              yield* markFailing(lane, endpoint, target.failingSince, failureOf(failed))
            }
            return { at, answers: answers.map((a) => isDelivered(a) ? undefined : a) }
          })
        ))
      }))

    // One pass of an endpoint's lane: false when it has nothing (more) to do now. Only a pass that `probes` tries
    // a failing endpoint, so that it gets one attempt at a time.
    const pass = (lane: Lane, endpoint: EndpointId, probes: boolean) =>
      Effect.gen(function*() {
        const now = yield* DateTime.now
        // A lane that cannot send now leaves its held deliveries to their lease once it runs short.
        const held = heldOf(endpoint)
        held.expire(now)
        const target = yield* store.target(endpoint)
        if (Option.isNone(target) || target.value.disabled || lane.failure !== undefined) return false
        const { failingSince, retryAt } = target.value
        if (retryAt !== undefined && DateTime.lessThan(now, retryAt)) return false
        const failing = failingSince !== undefined
        if (failing && !probes) return false
        // What a failed pass left is taken up first: deliveries the receiver accepted already are only marked.
        const resumed = held.take(now, attemptsAllowed(failing, Batch))
        const marked = resumed.filter((c) => c.accepted).map((c) => ({
          id: c.item.id,
          status: acceptedWith.get(c.item)!
        }))
        const due = resumed.length > 0
          ? resumed.filter((c) => !c.accepted).map((c) => c.item)
          : yield* store.claim(endpoint, now, DateTime.addDuration(now, DeliveryLease), attemptsAllowed(failing, Batch))
        if (resumed.length === 0) held.hold(due, DateTime.addDuration(now, DeliveryLease))
        return yield* Effect.onError(
          finish(lane, endpoint, target.value, held, marked, due),
          () => Effect.sync(() => held.release([...marked.map((d) => d.id), ...due.map((d) => d.id)]))
        )
      })

    const finish = (
      lane: Lane,
      endpoint: EndpointId,
      target: EndpointTarget,
      held: HeldClaims<Delivery, number>,
      marked: ReadonlyArray<{ readonly id: number; readonly status: number }>,
      due: ReadonlyArray<Delivery>
    ) =>
      Effect.gen(function*() {
        if (marked.length > 0) {
          yield* store.delivered(marked, yield* DateTime.now)
          held.done(marked.map((d) => d.id))
        }
        if (due.length === 0) return marked.length > 0
        const { failingSince } = target
        const failing = failingSince !== undefined
        const size = attemptsAllowed(failing, PerEndpoint)
        const rounds = Array.from(
          { length: Math.ceil(due.length / size) },
          (_, i) => due.slice(i * size, (i + 1) * size)
        )
        const outcomes = (yield* Effect.forEach(rounds, (r) => round(lane, endpoint, target, r, held)))
          .flatMap(({ answers, at }) => answers.map((answer) => ({ answer, at })))
        if (failingSince !== undefined && outcomes.some((o) => o.answer === undefined)) {
          yield* store.endpointRecovered(endpoint)
        }
        // A failed delivery is due when its endpoint is tried again: the backlog moves with the endpoint. One its
        // receiver refused while the endpoint took others waits on its own (rowDelay), or it would be sent again
        // at once, pass after pass. Its attempt is recorded with the time of its round's answers.
        // Only the failures take a step each: a pass whose every delivery succeeded makes none.
        const failures = outcomes.flatMap(({ answer, at }, i) =>
          answer === undefined ? [] : [{ delivery: due[i]!, answer, at }]
        )
        const failure = laneFailure(lane)
        if (failures.length === 0) return failure === undefined
        const done = yield* DateTime.now
        const nextAttempt = (delivery: Delivery) =>
          failure === undefined
            ? Effect.map(Random.next, (r) => DateTime.addDuration(done, rowDelay(delivery.attempts + 1, r)))
            : Effect.succeed(failure.retryAt)
        const failed = ({ answer, at, delivery }: { delivery: Delivery; answer: Answer; at: DateTime.Utc }) =>
          Effect.flatMap(nextAttempt(delivery), (next) =>
            Effect.tap(
              store.failed(delivery.id, next, failureOf(answer), failedAttempt(at, answer)),
              () => held.done([delivery.id])
            ))
        yield* Effect.forEach(failures, failed, { discard: true })
        return failure === undefined
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

    // The endpoints with work now: those with deliveries due, and those of deliveries a failed pass left.
    const withWork = Effect.gen(function*() {
      const due = yield* store.dueEndpoints(yield* DateTime.now, MaxEndpoints)
      for (const [endpoint, held] of heldBy) if (held.size() === 0 && !running.has(endpoint)) heldBy.delete(endpoint)
      const holding = [...heldBy].filter(([, held]) => held.free() > 0).map(([endpoint]) => endpoint)
      return [...new Set([...holding, ...due])]
    })

    // Every lane with work now, each to its end: what `run` does once, without forking (for tests and tools).
    const deliverDue = Effect.flatMap(
      withWork,
      (due) => Effect.forEach(due, passes, { concurrency: "unbounded", discard: true })
    )

    const waitForWork = Effect.raceFirst(Queue.take(wakeUps), Effect.sleep(PollInterval))

    const run = Effect.scoped(Effect.gen(function*() {
      const lanes = yield* FiberSet.make()
      const dispatch = Effect.gen(function*() {
        for (const endpoint of yield* withWork) {
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
