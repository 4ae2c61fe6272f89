import { Context, Duration } from "effect"

// How the service settles transfers whose outcome it does not know (docs/unknown-outcomes.md). A reference with
// defaults, so that use cases and tests need no layer; apps/AppLayer.ts sets it from the environment.
export interface ReconcileSettingsShape {
  // A `pending` transfer older than this belongs to a request that died: it must be longer than the card
  // network's time-out, so a request still running is never reconciled under it.
  readonly pendingLease: Duration.Duration
  // How long one instance holds a transfer it reconciles; others skip it meanwhile. It must outlast one
  // lookup, which the card network bounds by its time-out.
  readonly claimLease: Duration.Duration
  // The longest wait between two questions to the network about one transfer (the backoff's cap).
  readonly maxDelay: Duration.Duration
  readonly pollInterval: Duration.Duration
}

export class ReconcileSettings extends Context.Reference<ReconcileSettings>()("ReconcileSettings", {
  defaultValue: (): ReconcileSettingsShape => ({
    pendingLease: Duration.seconds(30),
    claimLease: Duration.seconds(30),
    maxDelay: Duration.minutes(5),
    pollInterval: Duration.seconds(1)
  })
}) {}
