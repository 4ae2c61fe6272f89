import { Effect, Redacted, Schema } from "effect"
import { SessionStore } from "../console/SessionStore.ts"
import { Tokens } from "../shared/Tokens.ts"
import { ClientDirectory } from "./ClientDirectory.ts"
import { ApiKeyPrefix } from "./Clients.ts"
import { ClientId } from "./Transfer.ts"

export class ClientNotFound extends Schema.TaggedError<ClientNotFound>()("ClientNotFound", { client: ClientId }) {}

// A revoked client keeps its row (its transfers reference it) with, in place of a key's hash, a value no key
// hashes to: no key authenticates as it any more, and rotating its key makes it usable again.
const RevokedPrefix = "revoked:"

export class ClientKeys extends Effect.Service<ClientKeys>()("ClientKeys", {
  effect: Effect.gen(function*() {
    const directory = yield* ClientDirectory
    const tokens = yield* Tokens
    const sessions = yield* SessionStore
    // The console sessions the old key opened end with it.
    const replace = (id: ClientId, keyHash: string) =>
      Effect.flatMap(
        directory.replaceKeyHash(id, keyHash),
        (found) => found ? Effect.asVoid(sessions.removeForClient(id)) : Effect.fail(new ClientNotFound({ client: id }))
      )
    return {
      // Never a key's hash: whether the client can still authenticate is all that is shown of it.
      list: Effect.map(directory.list, (clients) =>
        clients.map(({ createdAt, id, keyHash, name }) => ({
          id,
          name,
          createdAt,
          revoked: keyHash.startsWith(RevokedPrefix)
        }))),
      revoke: (id: ClientId) => replace(id, `${RevokedPrefix}${id}`),
      // A new key, shown once; the old one stops working at once.
      rotateKey: (id: ClientId) =>
        Effect.gen(function*() {
          const apiKey = `${ApiKeyPrefix}${yield* tokens.issue}`
          yield* replace(id, tokens.hash(apiKey))
          return { id, apiKey: Redacted.make(apiKey) }
        })
    } as const
  })
}) {}
