import { Effect } from "effect"
import { parentPort, workerData } from "node:worker_threads"
import { makeSender, type SendFailure, SmtpMailer, type SmtpSender } from "../mail/SmtpMailer.ts"
import { makeDelivery } from "../webhook/HttpWebhookSender.ts"
import type { Job, Reply, Status, WorkerSetup } from "./DeliveryThread.ts"
import { note, openForNotes } from "./ReceiptFile.ts"

// The delivery thread's module (adapters/thread/DeliveryThread.ts starts it): the SMTP mailer (configured
// from the same environment as the service: SMTP_URL, MAIL_FROM, MAIL_CONCURRENCY) and the webhook sender,
// each send answered with its outcome. Runs nothing else and keeps nothing.
//
// Each job goes straight to the adapters' plain senders (makeSender, makeDelivery; why: see makeSender), which
// their Effect layers wrap for a send on the main thread.

const port = parentPort!
const setup = workerData as WorkerSetup

const smtp: Promise<SmtpSender | undefined> = setup.smtp
  ? Effect.runPromise(Effect.map(SmtpMailer.config, makeSender))
  : Promise.resolve(undefined)
const webhooks = makeDelivery(setup.webhooks)
const receipts = setup.receipts === undefined ? undefined : openForNotes(setup.receipts)

// An accepted mail's outbox row goes into its place in the receipt file before the answer: from then on a crash
// does not send it again (core/subscriptions/MailReceipts.ts). A note that cannot be written costs only that.
const noted = (job: Job & { kind: "mail" }, failed: SendFailure | undefined) => {
  if (failed !== undefined || receipts === undefined || job.slot === undefined || job.mail.outbox === undefined) return
  try {
    note(receipts, job.slot, job.mail.outbox)
  } catch {
    // the mail was accepted all the same
  }
}

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

// A send that failed carries its reason (and, for mail, whether it is permanent); a failure of the thread's
// own is temporary.
const outcome = (n: number, failed: SendFailure | undefined): Reply =>
  failed === undefined ? { n, ok: true } : { n, ok: false, ...failed }
const threadFailed = (n: number): Reply => ({ n, ok: false, reason: "the delivery thread failed", permanent: false })

smtp.then(
  (mailer) => {
    const send = (job: Job): Promise<Reply> => {
      if (job.kind === "webhooks") {
        return webhooks.send(job.requests).then((answers) => ({ n: job.n, ok: true, answers }))
      }
      if (mailer === undefined) {
        return Promise.resolve(outcome(job.n, { reason: "this thread sends no mail", permanent: false }))
      }
      return mailer.send(job.mail).then((failed) => (noted(job, failed), outcome(job.n, failed)))
    }
    port.on("message", (jobs: ReadonlyArray<Job>) => {
      for (const job of jobs) send(job).then(answer, () => answer(threadFailed(job.n)))
    })
    port.postMessage({ ready: true } satisfies Status)
  },
  (error) => port.postMessage({ ready: false, error: String(error) } satisfies Status)
)
