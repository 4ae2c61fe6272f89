import { Schema } from "effect"
import { ClientId } from "../payments/Transfer.ts"

// A console session as stored: who signed in (a merchant's client, or the list owner), never the key they
// signed in with. The cookie holds a random id; the store holds only its hash, so a leaked table opens nothing.
export const SessionIdHash = Schema.String.pipe(Schema.brand("SessionIdHash"))
export type SessionIdHash = typeof SessionIdHash.Type

export const SessionRole = Schema.Literal("merchant", "admin")
export type SessionRole = typeof SessionRole.Type

export class Session extends Schema.Class<Session>("Session")({
  idHash: SessionIdHash,
  role: SessionRole,
  // The merchant's client; none for the list owner.
  clientId: Schema.optional(ClientId),
  // The list owner's: the hash of the admin key signed in with (kept as API keys are, by hash), so that a
  // changed ADMIN_API_KEY ends the sessions of the old one.
  adminKeyHash: Schema.optional(Schema.String),
  // Every form of the session carries it; a post without it is refused.
  csrfToken: Schema.String,
  createdAt: Schema.DateTimeUtcFromSelf,
  lastSeenAt: Schema.DateTimeUtcFromSelf
}) {}

// Whatever was wrong with a sign-in (an unknown key, a revoked one, the admin key when none is set), one answer.
export class SignInRefused extends Schema.TaggedError<SignInRefused>()("SignInRefused", {}) {}
