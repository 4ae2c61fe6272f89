import type { ConfigError } from "effect"
import { Config, Duration, Effect, Layer, Option } from "effect"
import { HttpCardNetwork } from "../../adapters/cardnetwork/HttpCardNetwork.ts"
import { SandboxCardNetwork } from "../../adapters/cardnetwork/SandboxCardNetwork.ts"
import { ConsoleMailer } from "../../adapters/mail/ConsoleMailer.ts"
import { SmtpMailer } from "../../adapters/mail/SmtpMailer.ts"
import * as DeliveryThread from "../../adapters/thread/DeliveryThread.ts"
import { layer as HttpWebhookSender } from "../../adapters/webhook/HttpWebhookSender.ts"
import type { Mailer } from "../../core/subscriptions/Mailer.ts"
import type { WebhookSender } from "../../core/webhooks/Webhooks.ts"
import { countedMailer } from "../http/Observability.ts"
import type { AppConfig } from "./Config.ts"

// What the service sends to: mail, webhooks and the card network, each adapter picked from the configuration.

// The SMTP mailer and the webhook sender: on the delivery thread when the app has its module (the bundles do)
// and DELIVERY_THREAD is not off, else on the main thread.
export const sendersLayer = (
  config: AppConfig,
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
