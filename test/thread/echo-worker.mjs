// A stand-in for the delivery thread's module (adapters/thread/DeliveryWorker.ts), for DeliveryThread.test.ts:
// it speaks the same messages. A webhook to a URL ending in /exit ends the thread; one ending in /hang is never
// answered; any other send succeeds, and a mail to refused@ fails permanently.
import { parentPort, workerData } from "node:worker_threads"

if (workerData.webhooks.allowHttp === "fail-at-start") parentPort.postMessage({ ready: false, error: "bad SMTP_URL" })
else parentPort.postMessage({ ready: true })
const answer = (job) => {
  if (job.kind === "webhook" && job.request.url.endsWith("/exit")) process.exit(3)
  if (job.kind === "webhook" && job.request.url.endsWith("/hang")) return []
  if (job.kind === "mail" && job.mail.to.address.startsWith("refused@")) {
    return [{ n: job.n, ok: false, reason: "550 no such user", permanent: true }]
  }
  return [{ n: job.n, ok: true }]
}
// Jobs come in arrays, and answers go back in arrays, as the real module's do.
parentPort.on("message", (jobs) => parentPort.postMessage(jobs.flatMap(answer)))
