// Concurrent requests over a storage port, one storage step at a time in an order the test picks: every
// top-level operation of a port (a statement, a combined operation, a whole `transact`) waits for its turn, and
// the next turn is given only when every request is waiting or has ended. The order is then the whole truth of
// an interleaving: the same order on another database, or through another form of the same operations, must
// give the same rows and the same answers. A request may crash at one of its steps: it never runs again, and
// "inside" rolls its transaction back after the transaction's first operation.
import { Effect, FiberRef } from "effect"
import type * as fc from "effect/FastCheck"

export interface Crash {
  // The request's step (counted from 0) at which its process dies.
  readonly step: number
  // Inside the step: its transaction runs its first operation and rolls back; otherwise the step never runs.
  readonly inside: boolean
}

interface Running {
  readonly label: string
  readonly crash: Crash | undefined
}
const current = FiberRef.unsafeMake<Running | undefined>(undefined)

// Picks which waiting step runs next.
export type Choose = (waiting: ReadonlyArray<string>) => Promise<string>

export class Stepper {
  private readonly waiting = new Map<string, () => void>()
  private readonly steps = new Map<string, number>()
  private readonly stopped = new Set<string>()
  private running = 0
  private wake: (() => void) | undefined
  // The steps in the order they ran, each `request#n operation`.
  readonly order: Array<string> = []

  constructor(private readonly choose: Choose) {}

  private changed() {
    const wake = this.wake
    this.wake = undefined
    wake?.()
  }

  // Starts a request, labelled uniquely, in a fiber of its own; its result is awaited with the fiber.
  readonly start = <A, E, R>(label: string, crash: Crash | undefined, self: Effect.Effect<A, E, R>) =>
    Effect.suspend(() => {
      this.running++
      return Effect.forkDaemon(
        self.pipe(
          Effect.locally(current, { label, crash }),
          Effect.ensuring(Effect.sync(() => {
            if (this.stopped.has(label)) return
            this.running--
            this.changed()
          }))
        )
      )
    })

  // Whether the request died (it never ends).
  readonly died = (label: string) => this.stopped.has(label)

  // The current request's label.
  readonly label: Effect.Effect<string> = Effect.map(FiberRef.get(current), (r) => r?.label ?? "")

  // The process running the current request dies: nothing of it runs again.
  readonly die: Effect.Effect<never> = Effect.flatMap(FiberRef.get(current), (r) =>
    Effect.suspend(() => {
      this.stopped.add(r!.label)
      this.running--
      this.changed()
      return Effect.never
    }))

  // `op` as a step of the current request (as it is, outside any). `inside` is how it crashes inside.
  readonly step = <A>(name: string, op: Effect.Effect<A>, inside: Effect.Effect<unknown> = Effect.void) =>
    Effect.flatMap(FiberRef.get(current), (r): Effect.Effect<A> => {
      if (r === undefined) return op
      const n = this.steps.get(r.label) ?? 0
      this.steps.set(r.label, n + 1)
      const label = `${r.label}#${n}`
      const turn = Effect.async<void>((resume) => {
        this.waiting.set(label, () => resume(Effect.void))
        this.running--
        this.changed()
      })
      const crash = r.crash?.step === n ? r.crash : undefined
      return Effect.zipRight(
        turn,
        Effect.suspend(() => {
          this.order.push(`${label} ${name}${crash === undefined ? "" : crash.inside ? " crash-inside" : " crash"}`)
          return crash === undefined ? op : Effect.zipRight(Effect.exit(crash.inside ? inside : Effect.void), this.die)
        })
      )
    })

  // Gives turns until every request has ended or died.
  readonly drive: Effect.Effect<void> = Effect.promise(async () => {
    for (;;) {
      while (this.running > 0) await new Promise<void>((resolve) => (this.wake = resolve))
      if (this.waiting.size === 0) return
      const label = await this.choose([...this.waiting.keys()].sort())
      const release = this.waiting.get(label)
      if (release === undefined) throw new Error(`step ${label} is not waiting; waiting: ${[...this.waiting.keys()]}`)
      this.waiting.delete(label)
      this.running++
      release()
    }
  })
}

// fast-check's scheduler picks: every waiting step is scheduled once, and it releases one of them at a time.
export const schedulerChoice = (s: fc.Scheduler): Choose => {
  const scheduled = new Set<string>()
  const picked: Array<string> = []
  return async (waiting) => {
    for (const label of waiting) {
      if (scheduled.has(label)) continue
      scheduled.add(label)
      void s.schedule(Promise.resolve(label), label).then((l) => picked.push(l))
    }
    await s.waitOne()
    for (let i = 0; picked.length === 0 && i < 100; i++) await Promise.resolve()
    const label = picked.shift()
    if (label === undefined) throw new Error("the scheduler released no step")
    return label
  }
}

// The steps of a recorded order again, in that order (each `label operation`): a step that is not waiting
// when its turn comes is a difference between the two runs.
export const replayChoice = (order: ReadonlyArray<string>): Choose => {
  let next = 0
  return (waiting) => {
    const label = order[next++]?.split(" ")[0]
    if (label === undefined || !waiting.includes(label)) {
      return Promise.reject(
        new Error(`the replay diverged at turn ${next - 1}: ${order[next - 1]} is not among ${waiting.join(", ")}`)
      )
    }
    return Promise.resolve(label)
  }
}
