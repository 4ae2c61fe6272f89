import { Context, type Effect } from "effect"
import type { Token, TokenHash } from "../subscriptions/Token.ts"

// Effect's Random is not a cryptographic generator, so unguessable tokens come through this port.
export interface TokensShape {
  readonly issue: Effect.Effect<Token>
  // `count` tokens in one step: the outbox issues two per mail of a batch.
  readonly issueMany: (count: number) => Effect.Effect<ReadonlyArray<Token>>
  readonly hash: (secret: string) => TokenHash
}

export class Tokens extends Context.Tag("Tokens")<Tokens, TokensShape>() {}
