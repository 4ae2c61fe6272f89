import { DateTime, Effect, Option, Redacted } from "effect"
import { Clients } from "../payments/Clients.ts"
import type { ClientId } from "../payments/Transfer.ts"
import { Tokens } from "../shared/Tokens.ts"
import { ConsoleSettings } from "./ConsoleSettings.ts"
import { Session, type SessionIdHash, SignInRefused } from "./Session.ts"
import { SessionStore } from "./SessionStore.ts"

// Signing in to the console and keeping the session: the rules, over any SessionStore. The session's id goes
// to the browser once, as a cookie; only its hash is stored, with who signed in, never the key.
export class Sessions extends Effect.Service<Sessions>()("Sessions", {
  effect: Effect.gen(function*() {
    const store = yield* SessionStore
    const tokens = yield* Tokens
    const clients = yield* Clients
    const settings = yield* ConsoleSettings
    const hashOf = (id: string) => tokens.hash(id) as string as SessionIdHash
    const idle = (session: Session, now: DateTime.Utc) =>
      DateTime.greaterThanOrEqualTo(now, DateTime.addDuration(session.lastSeenAt, settings.idleTimeout))
    // A list owner's session opened with another admin key than today's has ended.
    const keyChanged = (session: Session) =>
      session.role === "admin" && !Option.exists(settings.adminKeyHash, (hash) => hash === session.adminKeyHash)

    const whoIs = (key: Redacted.Redacted<string>) =>
      Option.contains(settings.adminKeyHash, tokens.hash(Redacted.value(key)))
        ? Effect.succeed({ role: "admin" as const, adminKeyHash: tokens.hash(Redacted.value(key)) as string })
        : Effect.flatMap(clients.authenticate(key), (client) =>
          Option.match(client, {
            onNone: () => Effect.fail(new SignInRefused()),
            onSome: ({ id }) => Effect.succeed({ role: "merchant" as const, clientId: id })
          }))

    return {
      // A new session for the holder of `key`: its id (for the cookie) and the session.
      signIn: (key: Redacted.Redacted<string>) =>
        Effect.gen(function*() {
          const who = yield* whoIs(key)
          const id = yield* tokens.issue
          const now = yield* DateTime.now
          const session = new Session({
            idHash: hashOf(id),
            ...who,
            csrfToken: yield* tokens.issue,
            createdAt: now,
            lastSeenAt: now
          })
          // Ended sessions go when someone signs in: no worker needed, and the table stays small.
          yield* store.removeSeenBefore(DateTime.subtractDuration(now, settings.idleTimeout))
          yield* store.insert(session)
          return { id: Redacted.make(id as string), session }
        }),
      // The session a cookie's id names, if it has not ended; using it keeps it alive.
      current: (id: string) =>
        Effect.gen(function*() {
          const found = yield* store.find(hashOf(id))
          if (Option.isNone(found)) return Option.none<Session>()
          const now = yield* DateTime.now
          if (idle(found.value, now) || keyChanged(found.value)) {
            yield* store.remove(found.value.idHash)
            return Option.none<Session>()
          }
          yield* store.touch(found.value.idHash, now)
          return Option.some(new Session({ ...found.value, lastSeenAt: now }))
        }),
      signOut: (id: string) => store.remove(hashOf(id)),
      // A form's token is the session's: compared by hash, so the time taken says nothing of the token.
      formTokenValid: (session: Session, token: string | undefined) =>
        token !== undefined && tokens.hash(token) === tokens.hash(session.csrfToken),
      // A rolled or revoked key ends every session it opened.
      endForClient: (clientId: ClientId) => store.removeForClient(clientId)
    } as const
  })
}) {}
