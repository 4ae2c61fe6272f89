import { Effect, Layer, Option, Redacted } from "effect"
import { createHash, timingSafeEqual } from "node:crypto"
import { AdminAuth } from "./AdminAuth.ts"
import { apiError } from "./ApiError.ts"

const digest = (s: string) => createHash("sha256").update(s).digest()

// Without ADMIN_API_KEY the admin endpoints are off: every request to them is refused.
export const adminAuthLayer = (adminKey: Option.Option<Redacted.Redacted<string>>) =>
  Layer.succeed(
    AdminAuth,
    AdminAuth.of({
      bearer: (presented) => {
        const expected = Option.map(adminKey, (key) => digest(Redacted.value(key)))
        return Option.isSome(expected) && timingSafeEqual(expected.value, digest(Redacted.value(presented)))
          ? Effect.void
          : Effect.fail(
            apiError(
              "api_key_invalid",
              Option.isSome(adminKey)
                ? "Invalid admin API key."
                : "The admin API is disabled: set ADMIN_API_KEY to enable it."
            )
          )
      }
    })
  )
