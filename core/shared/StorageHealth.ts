import { Context, type DateTime, type Effect } from "effect"

// What the operations endpoints and the error edge ask of the storage, whatever it is: whether it takes a
// durable write now (/readyz), how much each outbox still has to send (/metrics), and whether a failure is the
// storage being away or full, so that the same request later may succeed (503 with Retry-After) rather than a
// fault of the request (500). Each storage adapter answers for its own technology.
export interface Backlog {
  // Rows not sent yet (given-up mails and disabled endpoints' deliveries apart).
  readonly depth: number
  // When the oldest of them was due; undefined when none is.
  readonly oldestDue: DateTime.Utc | undefined
}

export interface StorageHealthShape {
  // Succeeds when a durable write went through now; dies otherwise.
  readonly probeWrite: Effect.Effect<void>
  readonly backlogs: Effect.Effect<{ readonly mail: Backlog; readonly webhook: Backlog }>
  // The error (a defect's value, with its causes) means "the storage cannot take this now".
  readonly isUnavailable: (error: unknown) => boolean
}

export class StorageHealth extends Context.Tag("StorageHealth")<StorageHealth, StorageHealthShape>() {}

// A secret the service needs stable across restarts but nobody configured (the card fingerprint key): made
// once with `generate`, kept in the storage; every instance and every later start gets the first one kept.
export interface ServiceSecretsShape {
  readonly keep: (name: string, generate: () => string) => Effect.Effect<string>
}

export class ServiceSecrets extends Context.Tag("ServiceSecrets")<ServiceSecrets, ServiceSecretsShape>() {}
