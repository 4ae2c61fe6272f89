import { OtlpSerialization, OtlpTracer } from "@effect/opentelemetry"
import { FetchHttpClient } from "@effect/platform"
import { Config, Duration, Effect, FiberRef, HashSet, Layer, Logger, LogLevel, Option } from "effect"

// Logs and traces, from the standard variables: LOG_FORMAT=json writes one JSON object per line (Effect's
// jsonLogger), anything else readable text; LOG_LEVEL sets the least level written. With
// OTEL_EXPORTER_OTLP_ENDPOINT set, spans go to $ENDPOINT/v1/traces as OTLP/HTTP JSON; without it no tracer is
// installed and the pipeline makes no request span (docs/operations.md).
export const TelemetryConfig = Config.all({
  logFormat: Config.literal("json", "text")("LOG_FORMAT").pipe(Config.withDefault("text" as const)),
  logLevel: Config.logLevel("LOG_LEVEL").pipe(Config.withDefault(LogLevel.Info)),
  endpoint: Config.option(Config.string("OTEL_EXPORTER_OTLP_ENDPOINT")),
  disabled: Config.boolean("OTEL_SDK_DISABLED").pipe(Config.withDefault(false)),
  serviceName: Config.string("OTEL_SERVICE_NAME").pipe(Config.withDefault("paysub")),
  headers: Config.string("OTEL_EXPORTER_OTLP_HEADERS").pipe(Config.withDefault("")),
  scheduleDelayMs: Config.integer("OTEL_BSP_SCHEDULE_DELAY").pipe(Config.withDefault(5_000))
})

export const tracingEnabled = Effect.map(
  TelemetryConfig,
  (config) => Option.isSome(config.endpoint) && !config.disabled
)

// "k1=v1,k2=v2", values percent-encoded, as the OTLP exporter specification has them.
const parseHeaders = (text: string) =>
  Object.fromEntries(
    text.split(",").map((pair) => pair.split("=")).filter((kv) => kv.length === 2 && kv[0]!.trim() !== "").map((
      [k, v]
    ) => [k!.trim(), decodeURIComponent(v!.trim())])
  )

// Whichever logger writes text (Effect's default, or the pretty one NodeRuntime.runMain puts in its place)
// gives way to the JSON one.
const jsonLines = Logger.withConsoleLog(Logger.jsonLogger)
const jsonLogs = Layer.scopedDiscard(
  Effect.locallyScopedWith(
    FiberRef.currentLoggers,
    (loggers) =>
      loggers.pipe(
        HashSet.remove(Logger.defaultLogger),
        HashSet.remove(Logger.prettyLoggerDefault),
        HashSet.add(jsonLines)
      )
  )
)

export const telemetryLayer = Layer.unwrapEffect(
  Effect.map(TelemetryConfig, (config) => {
    const logs = Layer.merge(
      config.logFormat === "json" ? jsonLogs : Layer.empty,
      Logger.minimumLogLevel(config.logLevel)
    )
    // Spans made anyway (Effect.withSpan in a library) are no-ops, and the adapters add none of their own.
    if (Option.isNone(config.endpoint) || config.disabled) return Layer.merge(logs, Layer.setTracerEnabled(false))
    const tracer = OtlpTracer.layer({
      url: `${config.endpoint.value.replace(/\/+$/, "")}/v1/traces`,
      resource: { serviceName: config.serviceName },
      headers: parseHeaders(config.headers),
      exportInterval: Duration.millis(config.scheduleDelayMs)
    }).pipe(Layer.provide([FetchHttpClient.layer, OtlpSerialization.layerJson]))
    return Layer.merge(logs, tracer)
  })
)
