import { Duration, Effect, Layer, Option, Redacted } from "effect"
import { layer as CryptoTokens } from "../adapters/crypto/CryptoTokens.ts"
import { Charts } from "../core/console/Charts.ts"
import { ConsoleSettings } from "../core/console/ConsoleSettings.ts"
import { Sessions } from "../core/console/Sessions.ts"
import { Clients } from "../core/payments/Clients.ts"
import { KeyPruner } from "../core/payments/KeyPruner.ts"
import { Reconciler } from "../core/payments/Reconciler.ts"
import { ReconcileSettings } from "../core/payments/ReconcileSettings.ts"
import { Refunds } from "../core/payments/Refunds.ts"
import { Transfers } from "../core/payments/Transfers.ts"
import { SiteSettings } from "../core/shared/SiteSettings.ts"
import { Tokens } from "../core/shared/Tokens.ts"
import { MailConcurrency, OutboxWorker } from "../core/subscriptions/OutboxWorker.ts"
import { PendingPurge, PendingPurgeSettings } from "../core/subscriptions/PendingPurge.ts"
import { SubscriberDirectory } from "../core/subscriptions/SubscriberDirectory.ts"
import { Subscriptions } from "../core/subscriptions/Subscriptions.ts"
import { WebhookEndpoints } from "../core/webhooks/WebhookEndpoints.ts"
import { WebhookWorker } from "../core/webhooks/WebhookWorker.ts"
import { AppConfig } from "./compose/Config.ts"
import { fingerprintLayer, firstClient } from "./compose/Keys.ts"
import { rateLimits } from "./compose/RateLimits.ts"
import { cardNetworkLayer, sendersLayer } from "./compose/Senders.ts"
import { storageLayer } from "./compose/Storage.ts"
import type { StorageDrivers } from "./compose/storage/Drivers.ts"
import { runWebhookWorker, runWorkers } from "./compose/Workers.ts"
import { ChartsLive } from "./console/ChartHandlers.ts"
import { ServedApi } from "./console/ConsoleApi.ts"
import { ConsoleLive } from "./console/ConsoleHandlers.ts"
import { NewsletterConsoleLive } from "./console/NewsletterHandlers.ts"
import { MetaLive } from "./http/meta/MetaHandlers.ts"
import { adminAuthLayer } from "./http/pipeline/AdminAuthLive.ts"
import { makeCors, parseOrigins } from "./http/pipeline/Cors.ts"
import { merchantAuthLayer } from "./http/pipeline/MerchantAuthLive.ts"
import { pipelineLayer } from "./http/pipeline/Pipeline.ts"
import { RefundsLive } from "./http/refunds/RefundsHandlers.ts"
import { FeedsLive } from "./http/subscriptions/FeedsHandlers.ts"
import { SubscriptionsLive } from "./http/subscriptions/SubscriptionsHandlers.ts"
import { TransfersLive } from "./http/transfers/TransfersHandlers.ts"
import { webhookAuthLayer, WebhooksLive } from "./http/webhooks/WebhooksHandlers.ts"
import { TelemetryConfig, telemetryLayer, tracingEnabled } from "./Telemetry.ts"

// The composition root. The adapters are picked by concern in ./compose/ (Config: the settings, checked at
// start; Storage: DATABASE_URL's database; Senders: mail, webhooks and the card network; Keys; RateLimits;
// Workers: the background loops); here they meet the use cases and the HTTP pipeline. Apps only bring what
// differs between runtimes (the HTTP server, and the SQLite binding as StorageDrivers), so Node and Deno serve
// the same API.
export { AppConfig } from "./compose/Config.ts"
export { storageLayer } from "./compose/Storage.ts"

// A pending transfer is taken for one whose request died only after the card network's time-out: a request
// still running must never be reconciled under it.
const reconcileSettings = (config: AppConfig) =>
  config.reconcileLeaseMs <= config.cardNetworkTimeoutMs + 1_000
    ? Effect.dieMessage("RECONCILE_LEASE_MS must be more than CARD_NETWORK_TIMEOUT_MS + 1000")
    : Effect.succeed({
      ...ReconcileSettings.defaultValue(),
      pendingLease: Duration.millis(config.reconcileLeaseMs),
      // A lookup is bounded by the time-out too: a claim outlasts it, and a dead instance's claims end soon.
      claimLease: Duration.millis(config.reconcileLeaseMs),
      maxDelay: Duration.millis(config.reconcileMaxDelayMs)
    })

export const domainLayer = (drivers: StorageDrivers, deliveryWorker?: URL) =>
  Layer.unwrapEffect(
    Effect.gen(function*() {
      const config = yield* AppConfig
      const baseUrl = Option.getOrElse(config.baseUrl, () => `http://localhost:${config.port}`).replace(/\/+$/, "")
      const storage = fingerprintLayer(config.fingerprintKey).pipe(
        Layer.provideMerge(storageLayer(config.databaseUrl, drivers))
      )
      const ports = Layer.mergeAll(
        storage,
        sendersLayer(config, deliveryWorker),
        CryptoTokens,
        cardNetworkLayer(config.cardNetwork, config.cardNetworkTimeoutMs),
        Layer.succeed(SiteSettings, SiteSettings.of({ baseUrl })),
        Layer.succeed(MailConcurrency, config.mailConcurrency),
        Layer.succeed(ReconcileSettings, yield* reconcileSettings(config))
      )
      const purgeSettings = Layer.succeed(PendingPurgeSettings, {
        ttl: Duration.days(config.pendingTtlDays),
        interval: Duration.hours(1)
      })
      const consoleSettings = Layer.effect(
        ConsoleSettings,
        Effect.map(Tokens, (tokens) => ({
          idleTimeout: Duration.minutes(config.consoleIdleMinutes),
          adminKeyHash: Option.map(config.adminApiKey, (key) => tokens.hash(Redacted.value(key)))
        }))
      )
      return Layer.mergeAll(
        Subscriptions.Default,
        Transfers.Default,
        Refunds.Default,
        Clients.Default,
        WebhookEndpoints.Default,
        Charts.Default,
        Sessions.Default.pipe(Layer.provide(Clients.Default), Layer.provide(consoleSettings))
      ).pipe(
        Layer.provideMerge(Layer.mergeAll(OutboxWorker.Default, Reconciler.Default, KeyPruner.Default)),
        Layer.provideMerge(WebhookWorker.Default),
        Layer.provideMerge(Layer.mergeAll(SubscriberDirectory.Default, PendingPurge.Default)),
        Layer.provideMerge(Layer.merge(ports, purgeSettings))
      )
    })
  )

export const appLayer = (drivers: StorageDrivers, deliveryWorker?: URL) =>
  Layer.unwrapEffect(
    Effect.map(Effect.all([AppConfig, TelemetryConfig, tracingEnabled]), ([config, { logFormat }, tracing]) => {
      const { limiters, shared } = rateLimits(config)
      const cors = makeCors(parseOrigins(config.subscribeAllowedOrigins))
      const pipelineOptions = {
        maxBodyBytes: config.maxBodyBytes,
        trace: config.trace === "on",
        limiters,
        cors,
        tracing,
        logFormat
      }
      return pipelineLayer(ServedApi, pipelineOptions).pipe(
        Layer.provide([
          SubscriptionsLive,
          FeedsLive,
          TransfersLive,
          RefundsLive,
          MetaLive,
          WebhooksLive,
          ConsoleLive,
          ChartsLive,
          NewsletterConsoleLive,
          shared
        ]),
        Layer.provideMerge(
          Layer.mergeAll(adminAuthLayer(config.adminApiKey), merchantAuthLayer, webhookAuthLayer(config.adminApiKey))
        ),
        Layer.provideMerge(runWebhookWorker),
        // A key printed to stdout is fine for a sandbox, not for a service that moves real money.
        Layer.provideMerge(
          config.cardNetwork === "sandbox" ? Layer.merge(runWorkers, firstClient) : runWorkers
        ),
        Layer.provideMerge(domainLayer(drivers, deliveryWorker)),
        Layer.provideMerge(telemetryLayer)
      )
    })
  )

export const serverOptions = AppConfig.pipe(
  Effect.map((c) => ({
    port: c.port,
    headersTimeoutMs: c.headersTimeoutMs,
    requestTimeoutMs: c.requestTimeoutMs,
    maxBodyBytes: c.maxBodyBytes
  }))
)
