import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { makeKnownBodies } from "../../apps/http/pipeline/KnownBodies.ts"

// Each request runs in a fiber of its own, as in the pipeline: recall and then learn, in that fiber.
const request = <A>(
  bodies: ReturnType<typeof makeKnownBodies<A>>,
  client: string,
  key: string,
  body: string,
  learned?: A
) =>
  Effect.gen(function*() {
    const known = yield* bodies.recall(client, key, body)
    if (learned !== undefined) yield* bodies.learn(client, key, learned)
    return known
  })

describe("KnownBodies", () => {
  it.effect("knows a body by its bytes, per client and key, once a request with it learned its value", () =>
    Effect.gen(function*() {
      const bodies = makeKnownBodies<string>(8)
      const body = `{"payment_transfer":{"reference":"r1"}}`
      assert.isUndefined(yield* request(bodies, "cl_a", "k1", body, "hash-1"))
      assert.strictEqual(yield* request(bodies, "cl_a", "k1", body), "hash-1")
      // Another byte, another key, another client: not known.
      assert.isUndefined(yield* request(bodies, "cl_a", "k1", `${body} `))
      assert.isUndefined(yield* request(bodies, "cl_a", "k2", body))
      assert.isUndefined(yield* request(bodies, "cl_b", "k1", body))
      // A request that did not recall first (its body never read here) learns nothing.
      yield* Effect.fork(bodies.learn("cl_a", "k3", "hash-3")).pipe(Effect.flatMap((f) => f.await))
      assert.isUndefined(yield* request(bodies, "cl_a", "k3", body))
      // The last body learned under a key is the one known.
      yield* request(bodies, "cl_a", "k1", `${body}\n`, "hash-1b")
      assert.strictEqual(yield* request(bodies, "cl_a", "k1", `${body}\n`), "hash-1b")
      assert.isUndefined(yield* request(bodies, "cl_a", "k1", body))
    }))

  it.effect("keeps at most its capacity, giving up the key learned longest ago", () =>
    Effect.gen(function*() {
      const bodies = makeKnownBodies<number>(3)
      for (let i = 0; i < 4; i++) yield* request(bodies, "cl", `k${i}`, `body ${i}`, i)
      assert.isUndefined(yield* request(bodies, "cl", "k0", "body 0"))
      for (let i = 1; i < 4; i++) assert.strictEqual(yield* request(bodies, "cl", `k${i}`, `body ${i}`), i)
    }))
})
