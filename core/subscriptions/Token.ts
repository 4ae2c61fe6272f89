import { Duration, Schema } from "effect"

// 32 random bytes, base64url without padding: 256 bits, far above the 128 the threat model needs.
export const TokenBytes = 32
export const Token = Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9_-]{43}$/), Schema.brand("Token"))
export type Token = typeof Token.Type

export const TokenHash = Schema.String.pipe(Schema.brand("TokenHash"))
export type TokenHash = typeof TokenHash.Type

export const TokenPurpose = Schema.Literal("confirm", "unsubscribe")
export type TokenPurpose = typeof TokenPurpose.Type

// Confirmation links expire; unsubscribe links in old mails keep working (RFC 8058 asks that they do).
export const ConfirmTokenTtl = Duration.hours(48)

export const isUsable = (token: { readonly usedAt: number | null; readonly expiresAt: number | null }, now: number) =>
  token.usedAt === null && (token.expiresAt === null || now < token.expiresAt)
