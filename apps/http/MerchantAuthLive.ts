import { Effect, Layer, Option } from "effect"
import { Clients } from "../../core/Clients.ts"
import { apiError } from "./ApiError.ts"
import { JsonOnly, jsonOnly, MerchantAuth } from "./MerchantAuth.ts"

export const merchantAuthLayer = Layer.merge(
  Layer.effect(
    MerchantAuth,
    Effect.map(Clients, (clients) =>
      MerchantAuth.of({
        bearer: (key) =>
          Effect.flatMap(
            clients.authenticate(key),
            Option.match({
              onNone: () =>
                Effect.fail(apiError("api_key_invalid", "Send a valid API key as `Authorization: Bearer sk_...`.")),
              onSome: Effect.succeed
            })
          )
      }))
  ),
  Layer.succeed(JsonOnly, jsonOnly)
)
