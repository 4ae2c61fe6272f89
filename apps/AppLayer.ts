import { RateLimiter } from "@effect/experimental"
import * as RateLimiterRedis from "@effect/experimental/RateLimiter/Redis"
import type { MigrationError } from "@effect/sql/Migrator"
import type { SqlClient } from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Config, type ConfigError, Console, Duration, Effect, Layer, Option, Redacted } from "effect"
import { mkdirSync } from "node:fs"
import { dirname } from "node:path"
import { HttpCardNetwork } from "../adapters/cardnetwork/HttpCardNetwork.ts"
import { SandboxCardNetwork } from "../adapters/cardnetwork/SandboxCardNetwork.ts"
import { layer as CryptoTokens } from "../adapters/crypto/CryptoTokens.ts"
import { layer as HmacFingerprints } from "../adapters/crypto/HmacFingerprints.ts"
import { ConsoleMailer } from "../adapters/mail/ConsoleMailer.ts"
import { mailConcurrencyConfig, SmtpMailer } from "../adapters/mail/SmtpMailer.ts"
import { layer as PgClient } from "../adapters/postgres/PgClient.ts"
import { layer as PgRateLimiterStore } from "../adapters/postgres/PgRateLimiterStore.ts"
import { layer as PgSubscriptionStore } from "../adapters/postgres/PgSubscriptionStore.ts"
import { layer as PgTransferStore } from "../adapters/postgres/PgTransferStore.ts"
import { layer as PgWebhookStore } from "../adapters/postgres/PgWebhookStore.ts"
import { runMigrations } from "../adapters/sql/Migrations.ts"
import { storedSecret } from "../adapters/sql/StoredSecret.ts"
import { layer as SqliteClient } from "../adapters/sqlite/SqliteClient.ts"
import type { OpenSqlite } from "../adapters/sqlite/SqliteDriver.ts"
import * as SqliteStores from "../adapters/sqlite/SqliteStores.ts"
import { layer as SqliteWebhookStore } from "../adapters/sqlite/SqliteWebhookStore.ts"
import * as DeliveryThread from "../adapters/thread/DeliveryThread.ts"
import { layer as HttpWebhookSender } from "../adapters/webhook/HttpWebhookSender.ts"
import { Clients } from "../core/Clients.ts"
import { KeyPruner } from "../core/KeyPruner.ts"
import type { Mailer } from "../core/Mailer.ts"
import { MailConcurrency, OutboxWorker } from "../core/OutboxWorker.ts"
import { DefaultPendingTtlDays, PendingPurge, PendingPurgeSettings } from "../core/PendingPurge.ts"
import { Reconciler } from "../core/Reconciler.ts"
import { ReconcileSettings } from "../core/ReconcileSettings.ts"
import { SiteSettings } from "../core/SiteSettings.ts"
import { storesOver } from "../core/Stores.ts"
import { SubscriberDirectory } from "../core/SubscriberDirectory.ts"
import { Subscriptions } from "../core/Subscriptions.ts"
import type { SubscriptionStore } from "../core/SubscriptionStore.ts"
import { Transfers } from "../core/Transfers.ts"
import type { TransferStore } from "../core/TransferStore.ts"
import { WebhookEndpoints } from "../core/WebhookEndpoints.ts"
import type { WebhookSender, WebhookStore } from "../core/Webhooks.ts"
import { WebhookWorker } from "../core/WebhookWorker.ts"
import { adminAuthLayer } from "./http/AdminAuthLive.ts"
import { Api } from "./http/Api.ts"
import { makeCors, parseOrigins } from "./http/Cors.ts"
import { makeLimiters } from "./http/Edge.ts"
import { EventViewsLive } from "./http/EventViewsLive.ts"
import { FeedsLive } from "./http/FeedsHandlers.ts"
import { merchantAuthLayer } from "./http/MerchantAuthLive.ts"
import { MetaLive } from "./http/MetaHandlers.ts"
import { countedMailer } from "./http/Observability.ts"
import { pipelineLayer } from "./http/Pipeline.ts"
import { sharedLimiterLayer } from "./http/SharedLimiter.ts"
import { SubscriptionsLive } from "./http/SubscriptionsHandlers.ts"
import { TransfersLive } from "./http/TransfersHandlers.ts"
import { webhookAuthLayer, WebhooksLive } from "./http/WebhooksHandlers.ts"
import { TelemetryConfig, telemetryLayer, tracingEnabled } from "./Telemetry.ts"

// The one place that reads the environment and picks an adapter for every port. Apps only bring what
// differs between runtimes (the HTTP server and the SQLite binding), so Node and Deno serve the same API.
export const AppConfig = Config.all({
  port: Config.port("PORT").pipe(Config.withDefault(3000)),
  baseUrl: Config.option(Config.string("BASE_URL")),
  databaseUrl: Config.string("DATABASE_URL").pipe(Config.withDefault("sqlite:data/paysub.db")),
  mailTransport: Config.literal("console", "smtp")("MAIL_TRANSPORT").pipe(Config.withDefault("console" as const)),
  mailConcurrency: mailConcurrencyConfig,
  cardNetwork: Config.literal("sandbox", "http")("CARD_NETWORK").pipe(Config.withDefault("sandbox" as const)),
  adminApiKey: Config.option(Config.redacted("ADMIN_API_KEY")),
  fingerprintKey: Config.option(Config.redacted("CARD_FINGERPRINT_KEY")),
  maxBodyBytes: Config.integer("MAX_BODY_BYTES").pipe(Config.withDefault(64 * 1024)),
  headersTimeoutMs: Config.integer("HEADERS_TIMEOUT_MS").pipe(Config.withDefault(10_000)),
  requestTimeoutMs: Config.integer("REQUEST_TIMEOUT_MS").pipe(Config.withDefault(30_000)),
  trace: Config.literal("on", "off")("HTTP_TRACE").pipe(Config.withDefault("on" as const)),
  subscribeRateLimit: Config.integer("SUBSCRIBE_RATE_LIMIT").pipe(Config.withDefault(20)),
  merchantRateLimit: Config.integer("MERCHANT_RATE_LIMIT").pipe(Config.withDefault(100)),
  subscribeAllowedOrigins: Config.string("SUBSCRIBE_ALLOWED_ORIGINS").pipe(Config.withDefault("")),
  pendingTtlDays: Config.integer("PENDING_TTL_DAYS").pipe(
    Config.validate({ message: "PENDING_TTL_DAYS must be at least 1", validation: (days) => days >= 1 }),
    Config.withDefault(DefaultPendingTtlDays)
  ),
  cardNetworkTimeoutMs: Config.integer("CARD_NETWORK_TIMEOUT_MS").pipe(Config.withDefault(10_000)),
  reconcileLeaseMs: Config.integer("RECONCILE_LEASE_MS").pipe(Config.withDefault(30_000)),
  reconcileMaxDelayMs: Config.integer("RECONCILE_MAX_DELAY_MS").pipe(Config.withDefault(300_000)),
  redisUrl: Config.option(Config.redacted("REDIS_URL")),
  webhookAllowHttp: Config.literal("on", "off")("WEBHOOK_ALLOW_HTTP").pipe(Config.withDefault("off" as const)),
  webhookAllowPrivate: Config.literal("on", "off")("WEBHOOK_ALLOW_PRIVATE").pipe(Config.withDefault("off" as const)),
  deliveryThread: Config.literal("on", "off")("DELIVERY_THREAD").pipe(Config.withDefault("on" as const))
})

const isPostgres = (databaseUrl: string) => /^postgres(ql)?:\/\//.test(databaseUrl)

// DATABASE_URL: postgres://... is PostgreSQL; sqlite:PATH or a plain path is the embedded SQLite file.
// The storage adapter: the migrated database, its client and the stores (each database's own, on its direct
// path: SqliteDirect or PgDirect). The rate limit store is the database's too: shared by the instances on
// PostgreSQL, the process's memory on SQLite.
type Storage = SqlClient | SubscriptionStore | TransferStore | WebhookStore | RateLimiter.RateLimiterStore
export const storageLayer = (
  databaseUrl: string,
  open: OpenSqlite
): Layer.Layer<Storage, SqlError | MigrationError> =>
  Layer.suspend((): Layer.Layer<Storage, SqlError | MigrationError> => {
    if (isPostgres(databaseUrl)) {
      return Layer.mergeAll(
        storesOver(Layer.merge(PgSubscriptionStore, PgTransferStore)),
        PgWebhookStore,
        PgRateLimiterStore
      ).pipe(
        Layer.provide(EventViewsLive),
        Layer.provideMerge(Layer.effectDiscard(runMigrations)),
        Layer.provideMerge(PgClient(Redacted.make(databaseUrl)))
      )
    }
    const filename = databaseUrl.replace(/^sqlite:/, "")
    if (filename !== ":memory:") mkdirSync(dirname(filename), { recursive: true })
    return Layer.mergeAll(
      storesOver(Layer.merge(SqliteStores.subscriptionStorage, SqliteStores.transferStorage)),
      SqliteWebhookStore,
      RateLimiter.layerStoreMemory
    ).pipe(
      Layer.provide(EventViewsLive),
      Layer.provideMerge(Layer.effectDiscard(runMigrations)),
      Layer.provideMerge(SqliteClient({ filename, open }))
    )
  })

// redis://[user:password@]host[:port][/db], as ioredis reads it.
const redisOptions = (url: string) => {
  const parsed = new URL(url)
  return {
    host: parsed.hostname,
    port: Number(parsed.port || 6379),
    db: Number(parsed.pathname.slice(1) || 0),
    ...(parsed.username === "" ? {} : { username: decodeURIComponent(parsed.username) }),
    ...(parsed.password === "" ? {} : { password: decodeURIComponent(parsed.password) }),
    ...(parsed.protocol === "rediss:" ? { tls: {} } : {}),
    // A Redis that does not answer lets requests through (apps/http/SharedLimiter.ts) instead of holding them.
    maxRetriesPerRequest: 1,
    commandTimeout: 500
  }
}

const cardNetworkLayer = (kind: "sandbox" | "http", timeoutMs: number) =>
  kind === "sandbox" ? SandboxCardNetwork.layer : Layer.unwrapEffect(
    Effect.map(
      Config.all({
        url: Config.string("CARD_NETWORK_URL"),
        apiKey: Config.option(Config.redacted("CARD_NETWORK_API_KEY"))
      }),
      ({ apiKey, url }) =>
        HttpCardNetwork.layerFetch({
          url,
          timeout: Duration.millis(timeoutMs),
          ...Option.match(apiKey, { onNone: () => ({}), onSome: (k) => ({ apiKey: k }) })
        })
    )
  )

// Without CARD_FINGERPRINT_KEY the key is made once and kept in the database, so fingerprints stay stable.
const fingerprintLayer = (configured: Option.Option<Redacted.Redacted<string>>) =>
  Layer.unwrapEffect(
    Option.match(configured, {
      onSome: (key) => Effect.succeed(HmacFingerprints(key)),
      onNone: () =>
        Effect.logWarning(
          "CARD_FINGERPRINT_KEY is not set: its key is kept in the database next to the fingerprints. Set it in production."
        ).pipe(
          Effect.zipRight(storedSecret(
            "card_fingerprint_key",
            () => Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url")
          )),
          Effect.map((key) => HmacFingerprints(Redacted.make(key)))
        )
    })
  )

// The sandbox default makes a first API client so that the README's curl examples work.
const firstClient = Layer.effectDiscard(
  Effect.flatMap(Clients, (clients) => clients.ensureFirst("sandbox")).pipe(
    Effect.flatMap(Option.match({
      onNone: () => Effect.void,
      onSome: (created) =>
        Console.log(
          `Created the first API client ${created.id}. Its secret key, shown only now:\n  ${
            Redacted.value(created.apiKey)
          }`
        )
    }))
  )
)

// A pending transfer is taken for one whose request died only after the card network's time-out: a request
// still running must never be reconciled under it.
const reconcileSettings = (
  config: {
    readonly cardNetworkTimeoutMs: number
    readonly reconcileLeaseMs: number
    readonly reconcileMaxDelayMs: number
  }
) =>
  config.reconcileLeaseMs <= config.cardNetworkTimeoutMs + 1_000
    ? Effect.dieMessage("RECONCILE_LEASE_MS must be more than CARD_NETWORK_TIMEOUT_MS + 1000")
    : Effect.succeed({
      ...ReconcileSettings.defaultValue(),
      pendingLease: Duration.millis(config.reconcileLeaseMs),
      // A lookup is bounded by the time-out too: a claim outlasts it, and a dead instance's claims end soon.
      claimLease: Duration.millis(config.reconcileLeaseMs),
      maxDelay: Duration.millis(config.reconcileMaxDelayMs)
    })

// The SMTP mailer and the webhook sender: on the delivery thread when the app has its module (the bundles do)
// and DELIVERY_THREAD is not off, else on the main thread.
const sendersLayer = (
  config: Config.Config.Success<typeof AppConfig>,
  deliveryWorker: URL | undefined
): Layer.Layer<Mailer | WebhookSender, ConfigError.ConfigError> => {
  const webhooks = {
    allowHttp: config.webhookAllowHttp === "on",
    allowPrivate: config.webhookAllowPrivate === "on"
  }
  const smtp = config.mailTransport === "smtp"
  if (deliveryWorker === undefined || config.deliveryThread === "off") {
    return Layer.merge(
      countedMailer(smtp ? SmtpMailer.layerConfig : ConsoleMailer.layer),
      HttpWebhookSender(webhooks)
    )
  }
  return Layer.merge(
    countedMailer(smtp ? DeliveryThread.mailerLayer : ConsoleMailer.layer),
    DeliveryThread.webhookSenderLayer
  ).pipe(Layer.provide(DeliveryThread.layer({ worker: deliveryWorker, smtp, webhooks })))
}

export const domainLayer = (open: OpenSqlite, deliveryWorker?: URL) =>
  Layer.unwrapEffect(
    Effect.gen(function*() {
      const config = yield* AppConfig
      const baseUrl = Option.getOrElse(config.baseUrl, () => `http://localhost:${config.port}`).replace(/\/+$/, "")
      const storage = fingerprintLayer(config.fingerprintKey).pipe(
        Layer.provideMerge(storageLayer(config.databaseUrl, open))
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
      return Layer.mergeAll(Subscriptions.Default, Transfers.Default, Clients.Default, WebhookEndpoints.Default).pipe(
        Layer.provideMerge(Layer.mergeAll(OutboxWorker.Default, Reconciler.Default, KeyPruner.Default)),
        Layer.provideMerge(WebhookWorker.Default),
        Layer.provideMerge(Layer.mergeAll(SubscriberDirectory.Default, PendingPurge.Default)),
        Layer.provideMerge(Layer.merge(ports, purgeSettings))
      )
    })
  )

const runOutboxWorker = Layer.scopedDiscard(Effect.flatMap(OutboxWorker, (worker) => Effect.forkScoped(worker.run)))
// Beside the outbox worker, on every instance: unconfirmed signups older than PENDING_TTL_DAYS go, with their
// tokens and mails; transfers whose outcome is unknown are reconciled; expired idempotency keys are pruned.
const runPendingPurge = Layer.scopedDiscard(Effect.flatMap(PendingPurge, (purge) => Effect.forkScoped(purge.run)))
const runReconciler = Layer.scopedDiscard(Effect.flatMap(Reconciler, (reconciler) => Effect.forkScoped(reconciler.run)))
const runKeyPruner = Layer.scopedDiscard(Effect.flatMap(KeyPruner, (pruner) => Effect.forkScoped(pruner.run)))
const runWorkers = Layer.mergeAll(runOutboxWorker, runPendingPurge, runReconciler, runKeyPruner)
const runWebhookWorker = Layer.scopedDiscard(Effect.flatMap(WebhookWorker, (worker) => Effect.forkScoped(worker.run)))

export const appLayer = (open: OpenSqlite, deliveryWorker?: URL) =>
  Layer.unwrapEffect(
    Effect.map(Effect.all([AppConfig, TelemetryConfig, tracingEnabled]), ([config, { logFormat }, tracing]) => {
      const limits = {
        subscribe: { limit: config.subscribeRateLimit, perMillis: 60_000 },
        merchant: { limit: config.merchantRateLimit, perMillis: 1_000 }
      }
      const limiters = makeLimiters(limits)
      // Several instances run on PostgreSQL only: there the limits are shared, in Redis when REDIS_URL is set.
      const shared = !isPostgres(config.databaseUrl) ? Layer.empty : Option.match(config.redisUrl, {
        onNone: () => sharedLimiterLayer(limits),
        onSome: (url) =>
          sharedLimiterLayer(limits).pipe(
            Layer.provide(RateLimiterRedis.layerStore({ ...redisOptions(Redacted.value(url)), prefix: "paysub:rl:" }))
          )
      })
      const cors = makeCors(parseOrigins(config.subscribeAllowedOrigins))
      const pipelineOptions = {
        maxBodyBytes: config.maxBodyBytes,
        trace: config.trace === "on",
        limiters,
        cors,
        tracing,
        logFormat
      }
      return pipelineLayer(Api, pipelineOptions).pipe(
        Layer.provide([SubscriptionsLive, FeedsLive, TransfersLive, MetaLive, WebhooksLive, shared]),
        Layer.provideMerge(
          Layer.mergeAll(adminAuthLayer(config.adminApiKey), merchantAuthLayer, webhookAuthLayer(config.adminApiKey))
        ),
        Layer.provideMerge(runWebhookWorker),
        // A key printed to stdout is fine for a sandbox, not for a service that moves real money.
        Layer.provideMerge(
          config.cardNetwork === "sandbox" ? Layer.merge(runWorkers, firstClient) : runWorkers
        ),
        Layer.provideMerge(domainLayer(open, deliveryWorker)),
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
