// The use cases' world for property tests: the core's stores over the in-memory storage adapter, plain
// stand-ins for the event views and the card fingerprints. Nothing here is node-only: these tests run under
// Deno too. Not a test file itself.
import { Effect, Layer, Redacted } from "effect"
import * as MemoryDatabase from "../../../adapters/memory/MemoryDatabase.ts"
import * as MemorySubscriptionStore from "../../../adapters/memory/MemorySubscriptionStore.ts"
import * as MemoryTransferStore from "../../../adapters/memory/MemoryTransferStore.ts"
import { CardFingerprints } from "../../../core/payments/CardFingerprints.ts"
import { TransferStorage } from "../../../core/payments/TransferStorage.ts"
import { storesOver } from "../../../core/shared/Stores.ts"
import { SubscriptionStorage } from "../../../core/subscriptions/SubscriptionStorage.ts"
import { EventViews } from "../../../core/webhooks/EventViews.ts"

// FNV-1a, twice with different offsets: a stand-in for the keyed hash that keeps no digit of its input.
const fnv = (text: string, offset: number) => {
  let h = offset
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619) >>> 0
  return h.toString(36)
}
export const Fingerprints = Layer.succeed(CardFingerprints, {
  of: (value) => `fp-${fnv(Redacted.value(value), 2166136261)}-${fnv(Redacted.value(value), 16777619)}`
})

export const Views = Layer.succeed(EventViews, {
  transfer: (t) => ({ id: t.id, status: t.status }),
  refund: (r) => ({ id: r.id, status: r.status, amount: String(r.amount) }),
  subscription: (s) => ({ id: s.id, status: s.status })
})

// Every operation of a port (and every transaction, as a whole) waits for `turn` first: with a scheduler's
// promise there, the test picks the order in which concurrent requests reach the storage.
const interleaved = <S extends object>(port: S, turn: Effect.Effect<void>): S =>
  Object.fromEntries(
    Object.entries(port).map(([name, value]) => [
      name,
      Effect.isEffect(value)
        ? Effect.zipRight(turn, value)
        : typeof value === "function"
        ? (...args: Array<unknown>) => Effect.zipRight(turn, (value as any)(...args))
        : value
    ])
  ) as S

// A new in-memory database with the stores over it, and MemoryDatabase itself for the checks to read.
export const memoryWorld = (turn: Effect.Effect<void> = Effect.void) => {
  const storage = Layer.merge(
    Layer.effect(TransferStorage, Effect.map(TransferStorage, (port) => interleaved(port, turn))).pipe(
      Layer.provide(MemoryTransferStore.layer)
    ),
    Layer.effect(SubscriptionStorage, Effect.map(SubscriptionStorage, (port) => interleaved(port, turn))).pipe(
      Layer.provide(MemorySubscriptionStore.layer)
    )
  )
  return storesOver(storage).pipe(Layer.provide(Views), Layer.provideMerge(MemoryDatabase.layer))
}
