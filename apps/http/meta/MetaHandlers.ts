import { Clock, DateTime, Effect, Metric } from "effect"
import { SiteSettings } from "../../../core/shared/SiteSettings.ts"
import { type Backlog, StorageHealth } from "../../../core/shared/StorageHealth.ts"
import { Api, Health } from "../Api.ts"
import { Pages } from "../pages/Pages.ts"
import { apiError } from "../pipeline/ApiError.ts"
import { group } from "../pipeline/ApiHandlers.ts"
import { ErrorCatalog, errorCodes } from "../pipeline/ErrorCatalog.ts"
import { jsonAnswer, textAnswer } from "../pipeline/TextBody.ts"
import { scalarPage } from "./DocsUi.ts"
import { documentedApi, openApiDocument } from "./OpenApiDocument.ts"
import { prometheusText } from "./Prometheus.ts"

// One answer for every health check: a Schema class checks its fields when it is made, so it is made once.
const healthy = Effect.succeed(new Health({ status: "ok" }))
const catalogPage = Pages.errorCatalog(errorCodes.map((code) => ({ code, ...ErrorCatalog[code] })))

// Sampled when /metrics is scraped, for each outbox (the confirmation mails, and the webhook deliveries of the
// endpoints not disabled): rows not sent yet (the given-up mails apart), and how long the oldest due one has
// waited past its time.
const outboxGauges = (outbox: "mail" | "webhook") => ({
  depth: Metric.gauge("outbox_depth", { description: "Outbox rows still to send" }).pipe(
    Metric.tagged("outbox", outbox)
  ),
  oldestDue: Metric.gauge("outbox_oldest_due_age_seconds", {
    description: "Seconds the oldest due outbox row has waited past its time (0 when none is due)"
  }).pipe(Metric.tagged("outbox", outbox))
})
const mailGauges = outboxGauges("mail")
const webhookGauges = outboxGauges("webhook")

export const MetaLive = group(Api, "meta", (handlers) =>
  Effect.gen(function*() {
    const storage = yield* StorageHealth
    const { baseUrl } = yield* SiteSettings
    const spec = openApiDocument(Api, baseUrl)
    const docsPage = yield* Effect.cached(scalarPage(documentedApi(Api, baseUrl)))
    const sample = (gauges: typeof mailGauges, backlog: Backlog) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const oldest = backlog.oldestDue === undefined ? now : DateTime.toEpochMillis(backlog.oldestDue)
        yield* Metric.set(gauges.depth, backlog.depth)
        yield* Metric.set(gauges.oldestDue, Math.max(0, now - oldest) / 1000)
      })
    const sampleOutbox = Effect.flatMap(
      storage.backlogs,
      ({ mail, webhook }) => Effect.zipRight(sample(mailGauges, mail), sample(webhookGauges, webhook))
    )
    return handlers
      .handle("healthz", () => healthy)
      .handle("readyz", () =>
        storage.probeWrite.pipe(
          Effect.zipRight(healthy),
          Effect.catchAllCause(() =>
            Effect.fail(apiError("service_unavailable", "The database is unreachable or cannot take writes."))
          )
        ))
      .handle("errors", () => Effect.succeed(catalogPage))
      .handle("openapi", () => Effect.succeed(jsonAnswer(spec)))
      .handle("docs", () => docsPage)
      .handle("metrics", () =>
        Effect.map(
          sampleOutbox,
          () => textAnswer(prometheusText(), { contentType: "text/plain; version=0.0.4; charset=utf-8" })
        ))
  }))
