import { Effect, Layer, Option, type Redacted } from "effect"
import { Clients } from "../../../core/payments/Clients.ts"
import { apiError } from "./ApiError.ts"
import { MerchantAuth } from "./MerchantAuth.ts"

const known = <A>(client: Option.Option<A>) =>
  Option.isSome(client)
    ? Effect.succeed(client.value)
    : Effect.fail(apiError("api_key_invalid", "Send a valid API key as `Authorization: Bearer sk_...`."))

// The client a Bearer key belongs to, or 401.
export const bearerClient = (clients: Clients) => (key: Redacted.Redacted<string>) =>
  Effect.flatMap(clients.authenticate(key), known)

export const merchantAuthLayer = Layer.effect(
  MerchantAuth,
  Effect.map(Clients, (clients) => MerchantAuth.of({ bearer: bearerClient(clients) }))
)
