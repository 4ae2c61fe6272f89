import { Context, Effect, Layer } from "effect"
import { existsSync } from "node:fs"
import { Worker } from "node:worker_threads"
import { MailDeliveryFailed } from "../../core/subscriptions/Errors.ts"
import { type Mail, Mailer } from "../../core/subscriptions/Mailer.ts"
import { MailReceipts, type MailReceiptsShape } from "../../core/subscriptions/MailReceipts.ts"
import { type Answer, type SignedRequest, WebhookSender } from "../../core/webhooks/Webhooks.ts"
import { make as makeHttpWebhookSender, type WebhookSenderOptions } from "../webhook/HttpWebhookSender.ts"
import { openReceiptFile } from "./ReceiptFile.ts"

// The outbox's sends on a thread of their own. The service's main thread answers requests and runs every
// database statement; an SMTP conversation or a webhook's HTTP request costs it about as much CPU as a
// transfer does (composing, signing, the sockets' round trips), so with the sends beside the requests the
// outbox and the requests took turns on one core while the second stood idle (docs/decisions/0029). Here the
// workers stay on the main thread (claiming, tokens, marking: database work, in the group commit) and hand
// each send to DeliveryWorker.ts on a worker thread, which runs the same adapters (SmtpMailer,
// HttpWebhookSender) and answers with the outcome.
//
// Nothing durable lives in the thread: a send it never answers (the thread died) fails as a temporary
// error, and the row is tried again as after any failed attempt. The thread is started again on the next send.
// With a receipt file (ReceiptFile.ts) the thread notes each accepted mail's outbox row there before it answers,
// in the place this side gave the mail; this side reads the file at start and frees the places.

// What the worker is started with (workerData), and the messages both ways.
export interface WorkerSetup {
  readonly smtp: boolean
  readonly webhooks: WebhookSenderOptions
  // The receipt file (core/subscriptions/MailReceipts.ts), if receipts are kept.
  readonly receipts?: string | undefined
}

export interface DeliveryThreadOptions extends WorkerSetup {
  // The worker's module: the bundle's dist/<app>/delivery.mjs (scripts/build.mjs).
  readonly worker: URL
}
export type Job =
  | { readonly n: number; readonly kind: "mail"; readonly mail: Mail; readonly slot?: number | undefined }
  | { readonly n: number; readonly kind: "webhooks"; readonly requests: ReadonlyArray<SignedRequest> }
export type Reply =
  | { readonly n: number; readonly ok: true }
  | { readonly n: number; readonly ok: false; readonly reason: string; readonly permanent: boolean }
  // A webhook round's: each request's Answer, in order (core/webhooks/Webhooks.ts).
  | { readonly n: number; readonly ok: true; readonly answers: ReadonlyArray<Answer> }
export type Status = { readonly ready: true } | { readonly ready: false; readonly error: string }
// Jobs and replies travel in arrays (a batch per message); the status is the thread's first message.

type Settle = (reply: Reply) => void

// The thread's heap: sends keep little (a message, a socket's buffers). With V8's default young generation the
// thread added about 60 MB to the process's peak RSS under load; with these limits about 35-45 MB, most of it
// the thread's own copy of the code (docs/decisions/0029).
const ThreadHeap = { maxYoungGenerationSizeMb: 8, maxOldGenerationSizeMb: 128 }

const make = (options: DeliveryThreadOptions) =>
  Effect.gen(function*() {
    const pending = new Map<number, Settle>()
    let next = 0
    let current: Worker | undefined
    let closed = false
    // Read before the thread starts, which writes into it only the places given here. One that cannot be opened
    // stops the service at start, naming the setting.
    const path = options.receipts
    const receiptFile = path === undefined ? undefined : yield* Effect.try({
      try: () => openReceiptFile(path),
      catch: (e) => new Error(`MAIL_RECEIPTS_FILE: cannot open ${path}: ${e instanceof Error ? e.message : e}`)
    }).pipe(Effect.orDie)

    // A send the thread will never answer fails as a temporary error: its row is tried again.
    const failSend = (n: number, reason: string) => {
      const settle = pending.get(n)
      pending.delete(n)
      settle?.({ n, ok: false, reason, permanent: false })
    }
    const failAll = (reason: string) => {
      for (const n of [...pending.keys()]) failSend(n, reason)
    }

    // Resolves once the worker has built its adapters; fails with the worker's message if it could not (a bad
    // SMTP_URL, say), which stops the service at start as the in-thread adapter would.
    const spawn = () =>
      new Promise<Worker>((resolve, reject) => {
        const setup: WorkerSetup = { smtp: options.smtp, webhooks: options.webhooks, receipts: options.receipts }
        const worker = new Worker(options.worker, { workerData: setup, resourceLimits: ThreadHeap })
        let started = false
        worker.on("message", (message: ReadonlyArray<Reply> | Status) => {
          if (!Array.isArray(message)) {
            const status = message as Status
            started = true
            return status.ready ? resolve(worker) : reject(new Error(status.error))
          }
          for (const reply of message) {
            const settle = pending.get(reply.n)
            pending.delete(reply.n)
            settle?.(reply)
          }
        })
        worker.on("error", (error) => {
          if (!started) reject(error)
        })
        worker.on("exit", (code) => {
          if (current === worker) current = undefined
          if (!started) reject(new Error(`the delivery thread exited at start (${code})`))
          failAll(`the delivery thread stopped (${code})`)
        })
      })

    current = yield* Effect.tryPromise({ try: spawn, catch: (e) => e }).pipe(Effect.orDie)
    yield* Effect.addFinalizer(() =>
      Effect.promise(async () => {
        closed = true
        await current?.terminate()
        receiptFile?.close()
      })
    )

    // Sends are posted in batches: every send asked for in one turn of the event loop goes in one message (a
    // pass of the outbox starts its sends together), and the thread answers in batches too. One message each
    // way per send cost the main thread about 40 µs per delivery in a profile (postMessage and the events).
    let queued: Array<Job> = []
    let starting: Promise<Worker> | undefined
    const refuse = (jobs: ReadonlyArray<Job>, reason: string) => {
      for (const job of jobs) failSend(job.n, reason)
    }
    const flush = () => {
      const jobs = queued
      queued = []
      if (current !== undefined) return current.postMessage(jobs)
      if (closed) return refuse(jobs, "the service is stopping")
      starting ??= spawn().finally(() => (starting = undefined))
      starting.then((worker) => {
        current = worker
        worker.postMessage(jobs)
      }, (e) => refuse(jobs, `the delivery thread did not start: ${e}`))
    }

    // A job for the thread, whose answer goes to `settle`.
    const post = (job: (n: number) => Job, settle: Settle): number => {
      const n = next++
      pending.set(n, settle)
      if (queued.length === 0) setImmediate(flush)
      queued.push(job(n))
      return n
    }

    // One send: a job for the thread and its answer. An interrupted send only stops waiting; the thread
    // finishes it within its own time-out.
    const run = (job: (n: number) => Job) =>
      Effect.async<Reply>((resume) => {
        const n = post(job, (reply) => resume(Effect.succeed(reply)))
        return Effect.sync(() => void pending.delete(n))
      })

    // A batch of mails: one job each, posted together, each answer reported as it comes; no fiber or Effect per
    // mail. The thread has no tracer: the batch's span is made here, around the round trip to the thread.
    // A failed send noted nothing: its place in the receipt file is free at once. An interrupted one keeps its
    // place (the thread may still note it).
    const mailer = Mailer.of({
      sendAll: (mails, report) =>
        Effect.async<void>((resume) => {
          let left = mails.length
          if (left === 0) return resume(Effect.void)
          const posted = mails.map((mail, index) => {
            const outbox = mail.outbox
            const slot = outbox === undefined ? undefined : receiptFile?.take(outbox)
            return post((n) => ({ n, kind: "mail", mail, slot }), (reply) => {
              if (reply.ok) {
                report({ index })
              } else {
                if (slot !== undefined) receiptFile?.release(outbox!)
                report({ index, failure: new MailDeliveryFailed({ reason: reply.reason, permanent: reply.permanent }) })
              }
              if (--left === 0) resume(Effect.void)
            })
          })
          return Effect.sync(() => {
            for (const n of posted) pending.delete(n)
          })
        }).pipe(
          Effect.withSpan("SmtpMailer.send", {
            attributes: { "paysub.delivery_thread": true, "mail.count": mails.length }
          })
        )
    })
    const receipts: MailReceiptsShape = {
      unsettled: Effect.succeed(receiptFile?.unsettled ?? []),
      settle: (ids) => Effect.sync(() => receiptFile?.settle(ids))
    }
    const local = makeHttpWebhookSender(options.webhooks)
    const webhookSender = WebhookSender.of({
      // Registration's check stays here: it answers a request.
      check: local.check,
      // A round is one job, answered once: the thread sends its requests at once.
      send: (requests) =>
        Effect.map(run((n) => ({ n, kind: "webhooks", requests })), (reply) =>
          "answers" in reply
            ? reply.answers
            : requests.map(() => reply.ok ? "no answer from the delivery thread" : reply.reason))
    })
    return { mailer, webhookSender, receipts } as const
  })

export class DeliveryThread extends Context.Tag("DeliveryThread")<
  DeliveryThread,
  Effect.Effect.Success<ReturnType<typeof make>>
>() {}

export const layer = (options: DeliveryThreadOptions): Layer.Layer<DeliveryThread> =>
  Layer.scoped(DeliveryThread, make(options))
// The ports it serves. The Mailer only when mail goes out over SMTP: console mail is printed where it is made.
export const webhookSenderLayer = Layer.effect(WebhookSender, Effect.map(DeliveryThread, (t) => t.webhookSender))
export const mailerLayer = Layer.effect(Mailer, Effect.map(DeliveryThread, (t) => t.mailer))
export const receiptsLayer = Layer.effect(MailReceipts, Effect.map(DeliveryThread, (t) => t.receipts))

// The worker's module beside an app's bundle (dist/node/delivery.mjs next to dist/node/main.mjs), if there is
// one: an app run from its sources (npm run start:dev) sends on its main thread.
export const bundledWorker = (appModule: string): URL | undefined => {
  const worker = new URL("./delivery.mjs", appModule)
  return appModule.endsWith(".mjs") && existsSync(worker) ? worker : undefined
}
