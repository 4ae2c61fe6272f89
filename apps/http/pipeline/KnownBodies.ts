import { Effect, type Fiber } from "effect"
import { sha256 } from "../../../adapters/crypto/Sha256.ts"

// The bodies this process has decoded under an Idempotency-Key, by client and key, each with what its decoding
// led to (the request's hash): a retry whose body has the same bytes is the same request, known without
// decoding it again. Only a digest of each body is kept, salted with a secret of this process, never the body,
// which holds card data. At most `capacity` keys are kept, the oldest given up first; a retry whose key is not
// here (another instance took it, or it was given up) is decoded as any request.
export interface KnownBodies<A> {
  // What the body of this retry is known as, or undefined. It remembers the digest for `learn`.
  readonly recall: (client: string, key: string, body: string) => Effect.Effect<A | undefined>
  // What the body `recall` saw in this request's fiber led to.
  readonly learn: (client: string, key: string, value: A) => Effect.Effect<void>
}

interface Known<A> {
  readonly digest: string
  readonly value: A
}

export const makeKnownBodies = <A>(capacity: number): KnownBodies<A> => {
  const salt = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url")
  const known = new Map<string, Known<A>>()
  // The digest of the body `recall` read, per request fiber, for `learn`.
  const read = new WeakMap<Fiber.RuntimeFiber<unknown, unknown>, string>()
  const slot = (client: string, key: string) => `${client} ${key}`
  return {
    recall: (client, key, body) =>
      Effect.withFiberRuntime((fiber) => {
        const digest = sha256(`${salt}${body}`, "base64url")
        read.set(fiber, digest)
        const found = known.get(slot(client, key))
        return Effect.succeed(found !== undefined && found.digest === digest ? found.value : undefined)
      }),
    learn: (client, key, value) =>
      Effect.withFiberRuntime((fiber) => {
        const digest = read.get(fiber)
        if (digest === undefined) return Effect.void
        const at = slot(client, key)
        known.delete(at)
        if (known.size >= capacity) known.delete(known.keys().next().value!)
        known.set(at, { digest, value })
        return Effect.void
      })
  }
}
