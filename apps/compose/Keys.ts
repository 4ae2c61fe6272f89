import { Console, Effect, Layer, Option, Redacted } from "effect"
import { layer as HmacFingerprints } from "../../adapters/crypto/HmacFingerprints.ts"
import { Clients } from "../../core/payments/Clients.ts"
import { ServiceSecrets } from "../../core/shared/StorageHealth.ts"

// Keys the service makes for itself when none is configured.

// Without CARD_FINGERPRINT_KEY the key is made once and kept in the storage, so fingerprints stay stable.
export const fingerprintLayer = (configured: Option.Option<Redacted.Redacted<string>>) =>
  Layer.unwrapEffect(
    Option.match(configured, {
      onSome: (key) => Effect.succeed(HmacFingerprints(key)),
      onNone: () =>
        Effect.logWarning(
          "CARD_FINGERPRINT_KEY is not set: its key is kept in the database next to the fingerprints. Set it in production."
        ).pipe(
          Effect.zipRight(Effect.flatMap(ServiceSecrets, (secrets) =>
            secrets.keep(
              "card_fingerprint_key",
              () => Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url")
            ))),
          Effect.map((key) => HmacFingerprints(Redacted.make(key)))
        )
    })
  )

// The sandbox default makes a first API client so that the README's curl examples work.
export const firstClient = Layer.effectDiscard(
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
