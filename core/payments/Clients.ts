import { DateTime, Effect, Option, Redacted } from "effect"
import { randomId } from "../shared/RandomId.ts"
import { Tokens } from "../shared/Tokens.ts"
import { ClientId } from "./Transfer.ts"
import { TransferStore } from "./TransferStore.ts"

export const ApiKeyPrefix = "sk_"

// API clients and their secret keys. A key is shown once, when it is made; only its SHA-256 is kept
// (a key has 256 random bits, so an unkeyed hash cannot be reversed by guessing).
export class Clients extends Effect.Service<Clients>()("Clients", {
  effect: Effect.gen(function*() {
    const store = yield* TransferStore
    const tokens = yield* Tokens

    const create = (name: string) =>
      Effect.gen(function*() {
        const id = ClientId.make(yield* randomId("cl_"))
        const apiKey = `${ApiKeyPrefix}${yield* tokens.issue}`
        yield* store.createClient({ id, name }, tokens.hash(apiKey), yield* DateTime.now)
        return { id, apiKey: Redacted.make(apiKey) }
      })

    return {
      create,
      authenticate: (apiKey: Redacted.Redacted<string>) => store.clientByKeyHash(tokens.hash(Redacted.value(apiKey))),
      // The embedded sandbox's first start: a client to try the README's curl examples with.
      ensureFirst: (name: string) =>
        Effect.flatMap(store.hasClients, (has) => has ? Effect.succeedNone : Effect.map(create(name), Option.some))
    } as const
  })
}) {}
