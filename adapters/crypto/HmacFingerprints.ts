import { Layer, Redacted } from "effect"
import { createHmac } from "node:crypto"
import { CardFingerprints } from "../../core/payments/CardFingerprints.ts"

export const layer = (key: Redacted.Redacted<string>) =>
  Layer.succeed(
    CardFingerprints,
    CardFingerprints.of({
      of: (pan) =>
        `fp_${createHmac("sha256", Redacted.value(key)).update(Redacted.value(pan)).digest("base64url").slice(0, 32)}`
    })
  )
