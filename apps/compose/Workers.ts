import { Effect, Layer } from "effect"
import { KeyPruner } from "../../core/payments/KeyPruner.ts"
import { Reconciler } from "../../core/payments/Reconciler.ts"
import { OutboxWorker } from "../../core/subscriptions/OutboxWorker.ts"
import { PendingPurge } from "../../core/subscriptions/PendingPurge.ts"
import { WebhookWorker } from "../../core/webhooks/WebhookWorker.ts"

// The background loops, forked for as long as the app runs, on every instance: the outbox's mail; unconfirmed
// signups older than PENDING_TTL_DAYS purged, with their tokens and mails; transfers whose outcome is unknown
// reconciled; expired idempotency keys pruned; and the webhook deliveries.
const forked = <I, S extends { readonly run: Effect.Effect<unknown, unknown, never> }>(
  tag: Effect.Effect<S, never, I>
) => Layer.scopedDiscard(Effect.flatMap(tag, (service) => Effect.forkScoped(service.run)))

export const runWorkers = Layer.mergeAll(
  forked(OutboxWorker),
  forked(PendingPurge),
  forked(Reconciler),
  forked(KeyPruner)
)
export const runWebhookWorker = forked(WebhookWorker)
