import { Cause, type ConfigError, Effect, Exit, Layer, ManagedRuntime, Option, Predicate } from "effect"
import { parentPort, workerData } from "node:worker_threads"
import { Mailer } from "../../core/Mailer.ts"
import { WebhookSender } from "../../core/Webhooks.ts"
import { SmtpMailer } from "../mail/SmtpMailer.ts"
import { layer as HttpWebhookSender } from "../webhook/HttpWebhookSender.ts"
import type { Job, Reply, Status, WorkerSetup } from "./DeliveryThread.ts"

// The delivery thread's module (adapters/thread/DeliveryThread.ts starts it): the SMTP mailer (configured
// from the same environment as the service: SMTP_URL, MAIL_FROM, MAIL_CONCURRENCY) and the webhook sender,
// each send answered with its outcome. Runs nothing else and keeps nothing.

const port = parentPort!
const setup = workerData as WorkerSetup

const mailer: Layer.Layer<Mailer, ConfigError.ConfigError> = setup.smtp
  ? SmtpMailer.layerConfig
  : Layer.succeed(Mailer, { send: () => Effect.dieMessage("this delivery thread sends no mail") })
const runtime = ManagedRuntime.make(Layer.merge(mailer, HttpWebhookSender(setup.webhooks)))

type Failure = { readonly reason: string; readonly permanent?: boolean }

// A send's own failure carries its reason (and, for mail, whether it is permanent); anything else is the
// thread's own failure, and temporary.
const failure = (n: number, cause: Cause.Cause<unknown>): Reply =>
  Option.match(Option.filter(Cause.failureOption(cause), (e): e is Failure => Predicate.hasProperty(e, "reason")), {
    onSome: (e) => ({ n, ok: false, reason: e.reason, permanent: e.permanent ?? false }),
    onNone: () => ({ n, ok: false, reason: "the delivery thread failed", permanent: false })
  })

const send = (job: Job): Effect.Effect<void, Failure, Mailer | WebhookSender> =>
  job.kind === "mail"
    ? Effect.flatMap(Mailer, (m) => m.send(job.mail))
    : Effect.flatMap(WebhookSender, (s) => s.send(job.request))

// Answers go back in batches, as the jobs came: those finished in one turn of the event loop in one message.
let answers: Array<Reply> = []
const answer = (reply: Reply) => {
  if (answers.length === 0) {
    setImmediate(() => {
      const batch = answers
      answers = []
      port.postMessage(batch)
    })
  }
  answers.push(reply)
}

runtime.runtime().then(
  () => {
    port.on("message", (jobs: ReadonlyArray<Job>) => {
      for (const job of jobs) {
        runtime.runPromiseExit(send(job)).then((exit) =>
          answer(Exit.isSuccess(exit) ? { n: job.n, ok: true } : failure(job.n, exit.cause))
        )
      }
    })
    port.postMessage({ ready: true } satisfies Status)
  },
  (error) => port.postMessage({ ready: false, error: String(error) } satisfies Status)
)
