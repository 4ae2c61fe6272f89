import { Cause, Effect, Exit, ManagedRuntime, Option, Predicate } from "effect"
import { parentPort, workerData } from "node:worker_threads"
import { WebhookSender } from "../../core/Webhooks.ts"
import { makeSender, SmtpMailer, type SmtpSender } from "../mail/SmtpMailer.ts"
import { layer as HttpWebhookSender } from "../webhook/HttpWebhookSender.ts"
import type { Job, Reply, Status, WorkerSetup } from "./DeliveryThread.ts"

// The delivery thread's module (adapters/thread/DeliveryThread.ts starts it): the SMTP mailer (configured
// from the same environment as the service: SMTP_URL, MAIL_FROM, MAIL_CONCURRENCY) and the webhook sender,
// each send answered with its outcome. Runs nothing else and keeps nothing.

const port = parentPort!
const setup = workerData as WorkerSetup

// Mail goes straight to the SMTP sender's promise: no Effect runtime per mail (see makeSender). Webhooks run
// their adapter's Effect.
const runtime = ManagedRuntime.make(HttpWebhookSender(setup.webhooks))
const smtp: Promise<SmtpSender | undefined> = setup.smtp
  ? Effect.runPromise(Effect.map(SmtpMailer.config, makeSender))
  : Promise.resolve(undefined)

type Failure = { readonly reason: string; readonly permanent?: boolean }

// A send's own failure carries its reason (and, for mail, whether it is permanent); anything else is the
// thread's own failure, and temporary.
const failure = (n: number, cause: Cause.Cause<unknown>): Reply =>
  Option.match(Option.filter(Cause.failureOption(cause), (e): e is Failure => Predicate.hasProperty(e, "reason")), {
    onSome: (e) => ({ n, ok: false, reason: e.reason, permanent: e.permanent ?? false }),
    onNone: () => threadFailed(n)
  })
const threadFailed = (n: number): Reply => ({ n, ok: false, reason: "the delivery thread failed", permanent: false })

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

Promise.all([smtp, runtime.runtime()]).then(
  ([mailer]) => {
    const sendMail = (job: Extract<Job, { kind: "mail" }>) => {
      if (mailer === undefined) {
        return answer({ n: job.n, ok: false, reason: "this delivery thread sends no mail", permanent: false })
      }
      mailer.send(job.mail).then(
        (failed) => answer(failed === undefined ? { n: job.n, ok: true } : { n: job.n, ok: false, ...failed }),
        () => answer(threadFailed(job.n))
      )
    }
    port.on("message", (jobs: ReadonlyArray<Job>) => {
      for (const job of jobs) {
        if (job.kind === "mail") {
          sendMail(job)
          continue
        }
        runtime.runPromiseExit(Effect.flatMap(WebhookSender, (s) => s.send(job.request))).then((exit) =>
          answer(Exit.isSuccess(exit) ? { n: job.n, ok: true } : failure(job.n, exit.cause))
        )
      }
    })
    port.postMessage({ ready: true } satisfies Status)
  },
  (error) => port.postMessage({ ready: false, error: String(error) } satisfies Status)
)
