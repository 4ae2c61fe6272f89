import { Effect, Layer } from "effect"
import { Tokens } from "../../core/shared/Tokens.ts"
import { Token, TokenBytes, TokenHash } from "../../core/subscriptions/Token.ts"
import { randomBytes } from "./RandomBytes.ts"
import { sha256 } from "./Sha256.ts"

// Tokens from the operating system's CSPRNG, stored as SHA-256: a leaked database holds no usable link.
// A plain (unkeyed) hash is enough here because the input has 256 bits of entropy.
// Base64url of TokenBytes bytes is a Token by construction: not checked again.
const issue = () => Token.make(randomBytes(TokenBytes).toString("base64url"), { disableValidation: true })

export const layer = Layer.succeed(
  Tokens,
  Tokens.of({
    issue: Effect.sync(issue),
    issueMany: (count) => Effect.sync(() => Array.from({ length: count }, issue)),
    hash: (token) => TokenHash.make(sha256(token, "hex"))
  })
)
