import { Config, Option } from "effect"
import { mailConcurrencyConfig } from "../../adapters/mail/SmtpMailer.ts"
import { mariaDbTimeoutsConfig } from "../../adapters/mariadb/MariaDbClient.ts"
import { pgTimeoutsConfig } from "../../adapters/postgres/PgClient.ts"
import { DefaultIdleMinutes } from "../../core/console/ConsoleSettings.ts"
import { DefaultPendingTtlDays } from "../../core/subscriptions/PendingPurge.ts"
import { databaseUrlConfig, storageOf } from "./Storage.ts"

// Every setting the service reads, checked at start: a value that cannot be read stops it with a message
// naming the variable (Effect Config says which), before anything is opened.
const atLeast = (name: string, min: number, fallback: number) =>
  Config.integer(name).pipe(
    Config.validate({ message: `${name} must be an integer of at least ${min}`, validation: (n) => n >= min }),
    Config.withDefault(fallback)
  )
const onOff = (name: string, fallback: "on" | "off") =>
  Config.literal("on", "off")(name).pipe(Config.withDefault(fallback))

export const AppConfig = Config.all({
  port: Config.port("PORT").pipe(Config.withDefault(3000)),
  baseUrl: Config.option(
    Config.string("BASE_URL").pipe(Config.validate({
      message: "BASE_URL must be an absolute http:// or https:// URL",
      validation: (url) => /^https?:\/\/[^/]/.test(url) && URL.canParse(url)
    }))
  ),
  databaseUrl: databaseUrlConfig,
  postgresTimeouts: pgTimeoutsConfig,
  mariaDbTimeouts: mariaDbTimeoutsConfig,
  mailTransport: Config.literal("console", "smtp")("MAIL_TRANSPORT").pipe(Config.withDefault("console" as const)),
  mailConcurrency: mailConcurrencyConfig,
  cardNetwork: Config.literal("sandbox", "http")("CARD_NETWORK").pipe(Config.withDefault("sandbox" as const)),
  adminApiKey: Config.option(Config.redacted("ADMIN_API_KEY")),
  fingerprintKey: Config.option(Config.redacted("CARD_FINGERPRINT_KEY")),
  maxBodyBytes: atLeast("MAX_BODY_BYTES", 1, 64 * 1024),
  headersTimeoutMs: atLeast("HEADERS_TIMEOUT_MS", 1, 10_000),
  requestTimeoutMs: atLeast("REQUEST_TIMEOUT_MS", 1, 30_000),
  trace: onOff("HTTP_TRACE", "on"),
  subscribeRateLimit: atLeast("SUBSCRIBE_RATE_LIMIT", 0, 20),
  merchantRateLimit: atLeast("MERCHANT_RATE_LIMIT", 0, 100),
  subscribeAllowedOrigins: Config.string("SUBSCRIBE_ALLOWED_ORIGINS").pipe(Config.withDefault("")),
  pendingTtlDays: atLeast("PENDING_TTL_DAYS", 1, DefaultPendingTtlDays),
  consoleIdleMinutes: atLeast("CONSOLE_IDLE_MINUTES", 1, DefaultIdleMinutes),
  consoleSignInRateLimit: atLeast("CONSOLE_SIGNIN_RATE_LIMIT", 0, 10),
  cardNetworkTimeoutMs: atLeast("CARD_NETWORK_TIMEOUT_MS", 1, 10_000),
  reconcileLeaseMs: atLeast("RECONCILE_LEASE_MS", 1, 30_000),
  reconcileMaxDelayMs: atLeast("RECONCILE_MAX_DELAY_MS", 1, 300_000),
  redisUrl: Config.option(Config.redacted("REDIS_URL")),
  webhookAllowHttp: onOff("WEBHOOK_ALLOW_HTTP", "off"),
  webhookAllowPrivate: onOff("WEBHOOK_ALLOW_PRIVATE", "off"),
  deliveryThread: onOff("DELIVERY_THREAD", "on"),
  // The receipt file of accepted mails (core/subscriptions/MailReceipts.ts); "off" keeps none. By default beside
  // a SQLite database's file, none on a database server (each instance needs a file of its own).
  mailReceipts: Config.option(Config.string("MAIL_RECEIPTS_FILE"))
}).pipe(
  // REDIS_URL shares the rate limits between instances; a storage in one process's memory has no second one.
  Config.validate({
    message: "REDIS_URL is for several instances sharing a database; DATABASE_URL=memory: is one process's own",
    validation: (c) => !(storageOf(c.databaseUrl)?.durable === false && Option.isSome(c.redisUrl))
  })
)
export type AppConfig = Config.Config.Success<typeof AppConfig>
