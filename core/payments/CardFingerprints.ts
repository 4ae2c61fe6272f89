import { Context, type Redacted } from "effect"

// A keyed hash of the PAN (HMAC-SHA-256): lets a merchant see that two transfers used one card without
// anyone, a database reader included, being able to test guesses of card numbers against it.
export interface CardFingerprintsShape {
  readonly of: (pan: Redacted.Redacted<string>) => string
}

export class CardFingerprints extends Context.Tag("CardFingerprints")<CardFingerprints, CardFingerprintsShape>() {}
