import { Context, type DateTime, type Effect, type Option } from "effect"
import type { ClientId } from "../payments/Transfer.ts"
import type { Session, SessionIdHash } from "./Session.ts"

// The console's sessions, kept in the service's storage so that every instance sees them and a sign-out ends a
// session everywhere. A dumb repository: core/console/Sessions.ts decides ids, expiry and who may sign in.
export interface SessionStoreShape {
  readonly insert: (session: Session) => Effect.Effect<void>
  readonly find: (idHash: SessionIdHash) => Effect.Effect<Option.Option<Session>>
  readonly touch: (idHash: SessionIdHash, at: DateTime.Utc) => Effect.Effect<void>
  readonly remove: (idHash: SessionIdHash) => Effect.Effect<void>
  // Every session of a client (its key was rolled or revoked); how many there were.
  readonly removeForClient: (clientId: ClientId) => Effect.Effect<number>
  // Every session last seen before `cutoff`; how many there were.
  readonly removeSeenBefore: (cutoff: DateTime.Utc) => Effect.Effect<number>
}

export class SessionStore extends Context.Tag("SessionStore")<SessionStore, SessionStoreShape>() {}
