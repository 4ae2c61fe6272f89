import { Effect, type Fiber, FiberRef, Layer, LogLevel, Metric, MetricBoundaries, MetricLabel } from "effect"
import { Mailer } from "../../../core/subscriptions/Mailer.ts"
import { writeAccessLine } from "./AccessLog.ts"

// What every request leaves behind: one access line (apps/http/pipeline/AccessLog.ts) and two metrics, written when its
// fiber is done, outside the fiber (no Effect per request). Label arrays are made once per route, method and
// status: Effect's metric hooks are cached by the array's identity, so an update is a map lookup and an addition.
export const requests = Metric.counter("http_requests_total", {
  description: "Requests answered, by method, route template and status",
  incremental: true
})
export const requestDuration = Metric.histogram(
  "http_request_duration_seconds",
  MetricBoundaries.fromIterable([0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]),
  "Time from the request's routing to its answer, by route template"
)
export const rateLimitedRequests = Metric.counter("http_rate_limited_total", {
  description: "Requests refused with 429, by limit",
  incremental: true
})

const labelCache = new Map<string, ReadonlyArray<MetricLabel.MetricLabel>>()
const labels = (key: string, make: () => ReadonlyArray<MetricLabel.MetricLabel>) => {
  let found = labelCache.get(key)
  if (found === undefined) labelCache.set(key, found = make())
  return found
}

// Those of an answer, found by its route, method and status without making a key or a closure for them.
const answerLabels = new Map<string, Map<string, Map<number, ReadonlyArray<MetricLabel.MetricLabel>>>>()
const labelsOfAnswer = (method: string, route: string, status: number) => {
  let byMethod = answerLabels.get(route)
  if (byMethod === undefined) answerLabels.set(route, byMethod = new Map())
  let byStatus = byMethod.get(method)
  if (byStatus === undefined) byMethod.set(method, byStatus = new Map())
  let found = byStatus.get(status)
  if (found === undefined) {
    byStatus.set(
      status,
      found = [
        MetricLabel.make("method", method),
        MetricLabel.make("route", route),
        MetricLabel.make("status", String(status))
      ]
    )
  }
  return found
}

const routeLabels = new Map<string, ReadonlyArray<MetricLabel.MetricLabel>>()
const labelsOfRoute = (route: string) => {
  let found = routeLabels.get(route)
  if (found === undefined) routeLabels.set(route, found = [MetricLabel.make("route", route)])
  return found
}

export const rateLimitedLabels = (limit: string) => labels(`limit ${limit}`, () => [MetricLabel.make("limit", limit)])

export interface Answered {
  readonly method: string
  // The path template as declared in the spec (`/feeds/:name`), or "unmatched": never the path with its values
  // or its query, which may carry a token.
  readonly route: string
  readonly status: number
  readonly requestId: string
  readonly startedAt: number
  // The API client it was authenticated as, or "".
  readonly clientId: string
}

const accessLevel = LogLevel.Info

export const recordAnswer = (
  fiber: Fiber.RuntimeFiber<unknown, unknown>,
  answered: Answered,
  format: "json" | "text"
) => {
  const seconds = (performance.now() - answered.startedAt) / 1000
  const { method, route, status } = answered
  requests.unsafeUpdate(1, labelsOfAnswer(method, route, status))
  requestDuration.unsafeUpdate(seconds, labelsOfRoute(route))
  // LogLevel.greaterThan, without its Order's calls.
  if (fiber.getFiberRef(FiberRef.currentMinimumLogLevel).ordinal > accessLevel.ordinal) return
  writeAccessLine({
    fiberId: fiber.id().id,
    method,
    route,
    status,
    durationMs: Math.round(seconds * 1e6) / 1000,
    requestId: answered.requestId,
    clientId: answered.clientId
  }, format)
}

export const transfers = Metric.counter("transfers_total", {
  description: "Transfer answers, by outcome (approved, declined, reference_taken), code and decline_code",
  incremental: true
})

export const countTransfer = (outcome: string, code = "", declineCode = "") =>
  transfers.unsafeUpdate(
    1,
    labels(`transfer ${outcome} ${code} ${declineCode}`, () => [
      MetricLabel.make("outcome", outcome),
      MetricLabel.make("code", code),
      MetricLabel.make("decline_code", declineCode)
    ])
  )

export const refunds = Metric.counter("refunds_total", {
  description: "Refund answers, by status (succeeded, failed, unknown) and failure_reason",
  incremental: true
})

export const countRefund = (status: string, failureReason = "") =>
  refunds.unsafeUpdate(
    1,
    labels(`refund ${status} ${failureReason}`, () => [
      MetricLabel.make("status", status),
      MetricLabel.make("failure_reason", failureReason)
    ])
  )

const mailSends = Metric.counter("mail_sends_total", {
  description: "Mails handed to the mail server",
  incremental: true
})
const mailFailures = Metric.counter("mail_failures_total", {
  description: "Mail sends that failed (each is retried by the outbox)",
  incremental: true
})

// The mailer of the app, counted as the outcomes come.
const NoLabels: ReadonlyArray<MetricLabel.MetricLabel> = []
export const countedMailer = <E, R>(layer: Layer.Layer<Mailer, E, R>) =>
  Layer.effect(
    Mailer,
    Effect.map(Mailer, (mailer) =>
      Mailer.of({
        sendAll: (mails, report) =>
          mailer.sendAll(mails, (outcome) => {
            ;(outcome.failure === undefined ? mailSends : mailFailures).unsafeUpdate(1, NoLabels)
            report(outcome)
          })
      }))
  ).pipe(Layer.provide(layer))
