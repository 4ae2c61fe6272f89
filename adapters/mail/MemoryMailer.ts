// In-memory Mailer for tests: records what was sent and can be told to fail the next sends, so the
// outbox worker's retry and give-up paths run without an SMTP server.
import { Context, Effect, Layer, Option, Stream, SubscriptionRef } from "effect"
import { MailDeliveryFailed } from "../../core/subscriptions/Errors.ts"
import { type Mail, Mailer, type MailerShape } from "../../core/subscriptions/Mailer.ts"

interface PlannedFailure {
  readonly reason: string
  readonly permanent: boolean
}

interface State {
  readonly sent: ReadonlyArray<Mail>
  // Every call of send, failed ones included, in order.
  readonly attempts: ReadonlyArray<Mail>
  readonly failures: ReadonlyArray<PlannedFailure>
}

export interface MemoryMailerShape {
  // Mails delivered, oldest first. Failed sends are not in here.
  readonly sent: Effect.Effect<ReadonlyArray<Mail>>
  // Every send call, failed ones included, oldest first.
  readonly attempts: Effect.Effect<ReadonlyArray<Mail>>
  // The next n sends fail with MailDeliveryFailed { permanent }. Adds to failures already planned.
  readonly failNext: (n: number, permanent: boolean, reason?: string) => Effect.Effect<void>
  // Waits until at least `count` mails were delivered, then answers them all.
  readonly awaitSent: (count: number) => Effect.Effect<ReadonlyArray<Mail>>
  // Forgets sent mails, attempts and planned failures.
  readonly reset: Effect.Effect<void>
}

const empty: State = { sent: [], attempts: [], failures: [] }

export const make = Effect.gen(function*() {
  const state = yield* SubscriptionRef.make(empty)

  const send = (mail: Mail) =>
    SubscriptionRef.modify(state, (s): [PlannedFailure | undefined, State] => {
      const [failure, ...rest] = s.failures
      const attempts = [...s.attempts, mail]
      return failure === undefined
        ? [undefined, { ...s, attempts, sent: [...s.sent, mail] }]
        : [failure, { ...s, attempts, failures: rest }]
    }).pipe(Effect.flatMap((failure) => (failure === undefined ? Effect.void : new MailDeliveryFailed(failure))))

  const memory: MemoryMailerShape = {
    sent: Effect.map(SubscriptionRef.get(state), (s) => s.sent),
    attempts: Effect.map(SubscriptionRef.get(state), (s) => s.attempts),
    failNext: (
      n,
      permanent,
      reason = permanent ? "550 mailbox unavailable (simulated)" : "connection refused (simulated)"
    ) =>
      SubscriptionRef.update(state, (s) => ({
        ...s,
        failures: [...s.failures, ...Array.from({ length: Math.max(0, n) }, () => ({ reason, permanent }))]
      })),
    awaitSent: (count) =>
      state.changes.pipe(
        Stream.map((s) => s.sent),
        Stream.filter((sent) => sent.length >= count),
        Stream.runHead,
        Effect.map(Option.getOrElse((): ReadonlyArray<Mail> => []))
      ),
    reset: SubscriptionRef.set(state, empty)
  }
  // The batch's mails one after another, each reported as it is done.
  const sendAll: MailerShape["sendAll"] = (mails, report) =>
    Effect.forEach(mails, (mail, index) =>
      Effect.match(send(mail), {
        onSuccess: () => report({ index }),
        onFailure: (failure) => report({ index, failure })
      }), { discard: true })
  return { mailer: Mailer.of({ sendAll }), memory } as const
})

export class MemoryMailer extends Context.Tag("MemoryMailer")<MemoryMailer, MemoryMailerShape>() {
  // A fresh, empty recorder each time the layer is built; provides the Mailer port and the recorder.
  static readonly layer: Layer.Layer<Mailer | MemoryMailer> = Layer.effectContext(
    Effect.map(make, ({ mailer, memory }) => Context.make(Mailer, mailer).pipe(Context.add(MemoryMailer, memory)))
  )
}
