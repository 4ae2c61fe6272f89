import type { ConfigError } from "effect"
import { Config, Duration, Effect, Layer, Option } from "effect"
import { HttpCardNetwork } from "../../adapters/cardnetwork/HttpCardNetwork.ts"
import { SandboxCardNetwork } from "../../adapters/cardnetwork/SandboxCardNetwork.ts"
import { ConsoleMailer } from "../../adapters/mail/ConsoleMailer.ts"
import { SmtpMailer } from "../../adapters/mail/SmtpMailer.ts"
import * as DeliveryThread from "../../adapters/thread/DeliveryThread.ts"
import { layer as HttpWebhookSender } from "../../adapters/webhook/HttpWebhookSender.ts"
import type { Mailer } from "../../core/subscriptions/Mailer.ts"
import { MailReceipts, noReceipts } from "../../core/subscriptions/MailReceipts.ts"
import type { WebhookSender } from "../../core/webhooks/Webhooks.ts"
import { countedMailer } from "../http/pipeline/Observability.ts"
import type { AppConfig } from "./Config.ts"
import { storageOf } from "./Storage.ts"
import { Sqlite, sqliteFilename } from "./storage/Sqlite.ts"

// What the service sends to: mail, webhooks and the card network, each adapter picked from the configuration.

// Where the delivery thread keeps the receipts of accepted mails: MAIL_RECEIPTS_FILE, by default the SQLite
// file's name with -mail-receipts (beside its -wal), none on a database server or in memory.
export const receiptFile = (config: AppConfig): string | undefined =>
  Option.match(config.mailReceipts, {
    onSome: (path) => (path === "off" ? undefined : path),
    onNone: () => {
      if (storageOf(config.databaseUrl) !== Sqlite) return undefined
      const filename = sqliteFilename(config.databaseUrl)
      return filename === ":memory:" ? undefined : `${filename}-mail-receipts`
    }
  })

// The SMTP mailer and the webhook sender: on the delivery thread when the app has its module (the bundles do)
// and DELIVERY_THREAD is not off, else on the main thread (which keeps no receipts).
export const sendersLayer = (
  config: AppConfig,
  deliveryWorker: URL | undefined
): Layer.Layer<Mailer | WebhookSender | MailReceipts, ConfigError.ConfigError> => {
  const webhooks = {
    allowHttp: config.webhookAllowHttp === "on",
    allowPrivate: config.webhookAllowPrivate === "on"
  }
  const smtp = config.mailTransport === "smtp"
  if (deliveryWorker === undefined || config.deliveryThread === "off") {
    return Layer.mergeAll(
      countedMailer(smtp ? SmtpMailer.layerConfig : ConsoleMailer.layer),
      HttpWebhookSender(webhooks),
      Layer.succeed(MailReceipts, noReceipts)
    )
  }
  const receipts = smtp ? receiptFile(config) : undefined
  return Layer.mergeAll(
    countedMailer(smtp ? DeliveryThread.mailerLayer : ConsoleMailer.layer),
    DeliveryThread.webhookSenderLayer,
    DeliveryThread.receiptsLayer
  ).pipe(Layer.provide(DeliveryThread.layer({ worker: deliveryWorker, smtp, webhooks, receipts })))
}

export const cardNetworkLayer = (kind: "sandbox" | "http", timeoutMs: number) =>
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
