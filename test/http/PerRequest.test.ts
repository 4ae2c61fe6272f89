import { HttpServerResponse } from "@effect/platform"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Equal, FiberRef, FiberRefs, Logger, LogLevel, Runtime, Schema } from "effect"
import * as fc from "fast-check"
import { Health } from "../../apps/http/Api.ts"
import { CurrentRequestId, currentRequestId } from "../../apps/http/pipeline/Edge.ts"
import { successEncoder } from "../../apps/http/pipeline/Endpoint.ts"
import { forkedRefs, withRequestId } from "../../apps/http/pipeline/Pipeline.ts"
import { jsonAnswer, textAnswer } from "../../apps/http/pipeline/TextBody.ts"

// What the pipeline keeps from one request to the next, or skips, to allocate less per request
// (docs/decisions/0057): each answers as the plain way does.
const bytes = (response: { readonly body: unknown }) => {
  const body = (response.body as { readonly body: Uint8Array | string }).body
  return typeof body === "string" ? body : new TextDecoder().decode(body)
}

class Item extends Schema.Class<Item>("Item")({ name: Schema.String, count: Schema.NumberFromString }) {}

describe("per request", () => {
  // apps/http/pipeline/TextBody.ts (docs/decisions/0070): the text itself as the body, answered as
  // @effect/platform's text and unsafeJson answer it.
  it("a text or JSON answer has the status, headers and UTF-8 bytes the platform's own would have", () =>
    fc.assert(fc.property(
      fc.jsonValue(),
      fc.string({ unit: "grapheme" }),
      fc.constantFrom(undefined, 201, 402),
      fc.constantFrom(undefined, "application/json", "text/csv; charset=utf-8"),
      fc.dictionary(fc.constantFrom("location", "etag", "x-a"), fc.string({ unit: "grapheme-ascii", minLength: 1 })),
      (value, text, status, contentType, headers) => {
        const options = { status, contentType, headers }
        const same = (
          ours: HttpServerResponse.HttpServerResponse,
          theirs: HttpServerResponse.HttpServerResponse
        ) => {
          assert.strictEqual(ours.status, theirs.status)
          assert.deepStrictEqual({ ...ours.headers }, { ...theirs.headers })
          const body = (ours.body as { readonly body: string }).body
          assert.deepStrictEqual(
            new TextEncoder().encode(body),
            (theirs.body as { readonly body: Uint8Array }).body
          )
        }
        same(jsonAnswer(value, options), HttpServerResponse.unsafeJson(value, options))
        same(textAnswer(text, options), HttpServerResponse.text(text, options))
      }
    )))

  it("the same value answers the same response, equal to a fresh encoding; another value its own", () => {
    const encode = successEncoder(Health)
    const healthy = new Health({ status: "ok" })
    const first = encode(healthy)
    assert.strictEqual(encode(healthy), first)
    assert.strictEqual(bytes(first), bytes(successEncoder(Health)(healthy)))
    assert.strictEqual(bytes(first), `{"status":"ok"}`)

    const items = successEncoder(Item)
    const [a, b] = [new Item({ name: "a", count: 1 }), new Item({ name: "b", count: 2 })]
    const fresh = (item: Item) => bytes(successEncoder(Item)(item))
    for (const item of [a, a, b, a, b, b]) assert.strictEqual(bytes(items(item)), fresh(item))
    assert.strictEqual(bytes(items(b)), `{"name":"b","count":"2"}`)
  })

  it("each request's fiber reads its own request id; the runtime's refs keep none", () =>
    Effect.gen(function*() {
      const runtime = yield* Effect.runtime<never>()
      const read = (id: string) =>
        new Promise<string>((ok) =>
          Runtime.runFork(runtime)(currentRequestId, {
            updateRefs: (refs, fiberId) => withRequestId(refs, fiberId, id)
          }).addObserver((exit) => ok(exit._tag === "Success" ? exit.value : "failed"))
        )
      assert.deepStrictEqual(yield* Effect.promise(() => Promise.all([read("req_a"), read("req_b")])), [
        "req_a",
        "req_b"
      ])
      assert.isFalse(runtime.fiberRefs.locals.has(CurrentRequestId))
      assert.strictEqual(yield* currentRequestId, "")
    }))

  it("a fiber forked from the kept refs reads every ref as one forked from all the app's", () =>
    Effect.gen(function*() {
      const custom = FiberRef.unsafeMake("initial")
      const app = yield* Effect.runtime<never>().pipe(
        Effect.locally(custom, "set"),
        Effect.locally(FiberRef.currentSchedulingPriority, 0),
        Logger.withMinimumLogLevel(LogLevel.Warning),
        Effect.withTracerEnabled(false)
      )
      const lean = Runtime.make({ ...app, fiberRefs: forkedRefs(app.fiberRefs) })
      assert.isBelow(lean.fiberRefs.locals.size, app.fiberRefs.locals.size)
      const refsOf = (runtime: Runtime.Runtime<never>) =>
        new Promise<FiberRefs.FiberRefs>((ok) =>
          Runtime.runFork(runtime)(
            Effect.withFiberRuntime<FiberRefs.FiberRefs>((fiber) => Effect.succeed(fiber.getFiberRefs()))
          )
            .addObserver((exit) => exit._tag === "Success" && ok(exit.value))
        )
      const [all, kept] = yield* Effect.promise(() => Promise.all([refsOf(app), refsOf(lean)]))
      for (const ref of [...FiberRefs.fiberRefs(app.fiberRefs), ...FiberRefs.fiberRefs(all)]) {
        assert.isTrue(Equal.equals(FiberRefs.getOrDefault(kept, ref), FiberRefs.getOrDefault(all, ref)))
      }
      assert.strictEqual(FiberRefs.getOrDefault(kept, custom), "set")
    }))
})
