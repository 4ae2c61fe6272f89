// A stand-in for the delivery thread's module (adapters/thread/DeliveryWorker.ts), for DeliveryThread.test.ts:
// it speaks the same messages. A webhook round with a URL ending in /exit ends the thread; one with a URL ending
// in /hang is never answered; otherwise a request to a URL ending in /fail fails and any other succeeds. A mail to
// refused@ fails permanently.
import { parentPort, workerData } from "node:worker_threads"

if (workerData.webhooks.allowHttp === "fail-at-start") parentPort.postMessage({ ready: false, error: "bad SMTP_URL" })
else parentPort.postMessage({ ready: true })
const answer = (job) => {
  if (job.kind === "webhooks") {
    const urls = job.requests.map((r) => r.url)
    if (urls.some((url) => url.endsWith("/exit"))) process.exit(3)
    if (urls.some((url) => url.endsWith("/hang"))) return []
    return [{ n: job.n, ok: true, answers: urls.map((url) => url.endsWith("/fail") ? 503 : 200) }]
  }
  if (job.kind === "mail" && job.mail.to.address.startsWith("refused@")) {
    return [{ n: job.n, ok: false, reason: "550 no such user", permanent: true }]
  }
  return [{ n: job.n, ok: true }]
}
// Jobs come in arrays, and answers go back in arrays, as the real module's do.
parentPort.on("message", (jobs) => parentPort.postMessage(jobs.flatMap(answer)))
