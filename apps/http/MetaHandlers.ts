import { HttpServerResponse } from "@effect/platform"
import { SqlClient } from "@effect/sql/SqlClient"
import { Clock, Effect, Metric } from "effect"
import { millisOf } from "../../adapters/sql/Dialect.ts"
import { writeProbe } from "../../adapters/sql/WriteProbe.ts"
import { SiteSettings } from "../../core/shared/SiteSettings.ts"
import { Api, Health } from "./Api.ts"
import { apiError } from "./ApiError.ts"
import { group } from "./ApiHandlers.ts"
import { scalarPage } from "./DocsUi.ts"
import { ErrorCatalog, errorCodes } from "./ErrorCatalog.ts"
import { documentedApi, openApiDocument } from "./OpenApiDocument.ts"
import { Pages } from "./Pages.ts"
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
    const sql = yield* SqlClient
    const { baseUrl } = yield* SiteSettings
    const spec = openApiDocument(Api, baseUrl)
    const docsPage = yield* Effect.cached(scalarPage(documentedApi(Api, baseUrl)))
    const sample = (gauges: typeof mailGauges, row: { depth: number | string; oldest: unknown } | undefined) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const oldest = row?.oldest === null || row?.oldest === undefined ? now : millisOf(row.oldest)
        yield* Metric.set(gauges.depth, Number(row?.depth ?? 0))
        yield* Metric.set(gauges.oldestDue, Math.max(0, now - oldest) / 1000)
      })
    const sampleOutbox = Effect.gen(function*() {
      const [mail] = yield* sql<{ depth: number | string; oldest: unknown }>`SELECT COUNT(*) AS depth,
        MIN(next_attempt_at) AS oldest FROM mail_outbox WHERE sent_at IS NULL AND next_attempt_at IS NOT NULL`
      yield* sample(mailGauges, mail)
      const [webhook] = yield* sql<{ depth: number | string; oldest: unknown }>`SELECT COUNT(*) AS depth,
        MIN(d.next_attempt_at) AS oldest FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
        WHERE d.delivered_at IS NULL AND e.disabled_at IS NULL`
      yield* sample(webhookGauges, webhook)
    }).pipe(Effect.orDie)
    return handlers
      .handle("healthz", () => healthy)
      .handle("readyz", () =>
        writeProbe(sql).pipe(
          Effect.zipRight(healthy),
          Effect.catchAllCause(() =>
            Effect.fail(apiError("service_unavailable", "The database is unreachable or cannot take writes."))
          )
        ))
      .handle("errors", () => Effect.succeed(catalogPage))
      .handle("openapi", () => Effect.succeed(HttpServerResponse.unsafeJson(spec)))
      .handle("docs", () => docsPage)
      .handle("metrics", () =>
        Effect.map(
          sampleOutbox,
          () => HttpServerResponse.text(prometheusText(), { contentType: "text/plain; version=0.0.4; charset=utf-8" })
        ))
  }))
