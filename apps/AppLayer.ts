import type { MigrationError } from "@effect/sql/Migrator"
import type { SqlClient } from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Config, Console, Effect, Layer, Option, Redacted } from "effect"
import { mkdirSync } from "node:fs"
import { dirname } from "node:path"
import { HttpCardNetwork } from "../adapters/cardnetwork/HttpCardNetwork.ts"
import { SandboxCardNetwork } from "../adapters/cardnetwork/SandboxCardNetwork.ts"
import { layer as CryptoTokens } from "../adapters/crypto/CryptoTokens.ts"
import { layer as HmacFingerprints } from "../adapters/crypto/HmacFingerprints.ts"
import { ConsoleMailer } from "../adapters/mail/ConsoleMailer.ts"
import { SmtpMailer } from "../adapters/mail/SmtpMailer.ts"
import { layer as PgClient } from "../adapters/postgres/PgClient.ts"
import { layer as PgSubscriptionStore } from "../adapters/postgres/PgSubscriptionStore.ts"
import { layer as PgTransferStore } from "../adapters/postgres/PgTransferStore.ts"
import { runMigrations } from "../adapters/sql/Migrations.ts"
import { storedSecret } from "../adapters/sql/StoredSecret.ts"
import { layer as SqliteClient } from "../adapters/sqlite/SqliteClient.ts"
import type { OpenSqlite } from "../adapters/sqlite/SqliteDriver.ts"
import * as SqliteStores from "../adapters/sqlite/SqliteStores.ts"
import { Clients } from "../core/Clients.ts"
import { OutboxWorker } from "../core/OutboxWorker.ts"
import { SiteSettings } from "../core/SiteSettings.ts"
import { Subscriptions } from "../core/Subscriptions.ts"
import type { SubscriptionStore } from "../core/SubscriptionStore.ts"
import { Transfers } from "../core/Transfers.ts"
import type { TransferStore } from "../core/TransferStore.ts"
import { adminAuthLayer } from "./http/AdminAuthLive.ts"
import { Api } from "./http/Api.ts"
import { makeLimiters } from "./http/Edge.ts"
import { FeedsLive } from "./http/FeedsHandlers.ts"
import { merchantAuthLayer } from "./http/MerchantAuthLive.ts"
import { MetaLive } from "./http/MetaHandlers.ts"
import { pipelineLayer } from "./http/Pipeline.ts"
import { SubscriptionsLive } from "./http/SubscriptionsHandlers.ts"
import { TransfersLive } from "./http/TransfersHandlers.ts"

// The one place that reads the environment and picks an adapter for every port. Apps only bring what
// differs between runtimes (the HTTP server and the SQLite binding), so Node and Deno serve the same API.
export const AppConfig = Config.all({
  port: Config.port("PORT").pipe(Config.withDefault(3000)),
  baseUrl: Config.option(Config.string("BASE_URL")),
  databaseUrl: Config.string("DATABASE_URL").pipe(Config.withDefault("sqlite:data/paysub.db")),
  mailTransport: Config.literal("console", "smtp")("MAIL_TRANSPORT").pipe(Config.withDefault("console" as const)),
  cardNetwork: Config.literal("sandbox", "http")("CARD_NETWORK").pipe(Config.withDefault("sandbox" as const)),
  adminApiKey: Config.option(Config.redacted("ADMIN_API_KEY")),
  fingerprintKey: Config.option(Config.redacted("CARD_FINGERPRINT_KEY")),
  maxBodyBytes: Config.integer("MAX_BODY_BYTES").pipe(Config.withDefault(64 * 1024)),
  headersTimeoutMs: Config.integer("HEADERS_TIMEOUT_MS").pipe(Config.withDefault(10_000)),
  requestTimeoutMs: Config.integer("REQUEST_TIMEOUT_MS").pipe(Config.withDefault(30_000)),
  trace: Config.literal("on", "off")("HTTP_TRACE").pipe(Config.withDefault("on" as const)),
  subscribeRateLimit: Config.integer("SUBSCRIBE_RATE_LIMIT").pipe(Config.withDefault(20)),
  merchantRateLimit: Config.integer("MERCHANT_RATE_LIMIT").pipe(Config.withDefault(100))
})

const isPostgres = (databaseUrl: string) => /^postgres(ql)?:\/\//.test(databaseUrl)

// DATABASE_URL: postgres://... is PostgreSQL; sqlite:PATH or a plain path is the embedded SQLite file.
// The storage adapter: the migrated database, its client and the stores (each database's own, on its direct
// path: SqliteDirect or PgDirect).
export const storageLayer = (
  databaseUrl: string,
  open: OpenSqlite
): Layer.Layer<SqlClient | SubscriptionStore | TransferStore, SqlError | MigrationError> =>
  Layer.suspend((): Layer.Layer<SqlClient | SubscriptionStore | TransferStore, SqlError | MigrationError> => {
    if (isPostgres(databaseUrl)) {
      return Layer.mergeAll(PgSubscriptionStore, PgTransferStore).pipe(
        Layer.provideMerge(Layer.effectDiscard(runMigrations)),
        Layer.provideMerge(PgClient(Redacted.make(databaseUrl)))
      )
    }
    const filename = databaseUrl.replace(/^sqlite:/, "")
    if (filename !== ":memory:") mkdirSync(dirname(filename), { recursive: true })
    return Layer.mergeAll(SqliteStores.subscriptionStore, SqliteStores.transferStore).pipe(
      Layer.provideMerge(Layer.effectDiscard(runMigrations)),
      Layer.provideMerge(SqliteClient({ filename, open }))
    )
  })

const cardNetworkLayer = (kind: "sandbox" | "http") =>
  kind === "sandbox" ? SandboxCardNetwork.layer : Layer.unwrapEffect(
    Effect.map(
      Config.all({
        url: Config.string("CARD_NETWORK_URL"),
        apiKey: Config.option(Config.redacted("CARD_NETWORK_API_KEY"))
      }),
      ({ apiKey, url }) =>
        HttpCardNetwork.layerFetch({
          url,
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

export const domainLayer = (open: OpenSqlite) =>
  Layer.unwrapEffect(
    Effect.gen(function*() {
      const config = yield* AppConfig
      const baseUrl = Option.getOrElse(config.baseUrl, () => `http://localhost:${config.port}`).replace(/\/+$/, "")
      const mailer = config.mailTransport === "smtp" ? SmtpMailer.layerConfig : ConsoleMailer.layer
      const storage = fingerprintLayer(config.fingerprintKey).pipe(
        Layer.provideMerge(storageLayer(config.databaseUrl, open))
      )
      const ports = Layer.mergeAll(
        storage,
        mailer,
        CryptoTokens,
        cardNetworkLayer(config.cardNetwork),
        Layer.succeed(SiteSettings, SiteSettings.of({ baseUrl }))
      )
      return Layer.mergeAll(Subscriptions.Default, Transfers.Default, Clients.Default).pipe(
        Layer.provideMerge(OutboxWorker.Default),
        Layer.provideMerge(ports)
      )
    })
  )

const runOutboxWorker = Layer.scopedDiscard(Effect.flatMap(OutboxWorker, (worker) => Effect.forkScoped(worker.run)))

export const appLayer = (open: OpenSqlite) =>
  Layer.unwrapEffect(
    Effect.map(AppConfig, (config) => {
      const limiters = makeLimiters({
        subscribe: { limit: config.subscribeRateLimit, perMillis: 60_000 },
        merchant: { limit: config.merchantRateLimit, perMillis: 1_000 }
      })
      return pipelineLayer(Api, { maxBodyBytes: config.maxBodyBytes, trace: config.trace === "on", limiters }).pipe(
        Layer.provide([SubscriptionsLive, FeedsLive, TransfersLive, MetaLive]),
        Layer.provideMerge(
          Layer.merge(adminAuthLayer(config.adminApiKey), merchantAuthLayer)
        ),
        // A key printed to stdout is fine for a sandbox, not for a service that moves real money.
        Layer.provideMerge(
          config.cardNetwork === "sandbox" ? Layer.merge(runOutboxWorker, firstClient) : runOutboxWorker
        ),
        Layer.provideMerge(domainLayer(open))
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
