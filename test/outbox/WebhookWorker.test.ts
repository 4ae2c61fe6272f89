// The webhook worker over real SQLite storage (the app's SQLite webhook store) and a recording sender that
// fails while told to. Time is the TestClock's: every pass is a direct call of deliverDue.
import { SqlClient } from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import { DateTime, Duration, Effect, Fiber, Layer, Option, Random, Ref, TestClock } from "effect"
import { join } from "node:path"
import { runMigrations } from "../../adapters/sql/Migrations.ts"
import { layer as SqliteWebhookStore } from "../../adapters/sqlite/SqliteWebhookStore.ts"
import { DestinationBackoff } from "../../core/shared/DestinationBackoff.ts"
import { EndpointId, EventId, type SignedRequest, WebhookSender, WebhookStore } from "../../core/webhooks/Webhooks.ts"
import { WebhookWorker } from "../../core/webhooks/WebhookWorker.ts"
import { sqliteClient, tempDir } from "../storage/TempSqlite.ts"

const T0 = Date.UTC(2025, 0, 15, 12, 0, 0)
const owner = "cl_000000000000000000000001"

interface Recorder {
  readonly sent: Ref.Ref<ReadonlyArray<SignedRequest & { readonly ok: boolean }>>
  readonly failing: Ref.Ref<boolean>
  // Events the receiver answers 400 while it takes the others.
  readonly refused: Ref.Ref<ReadonlySet<string>>
  // While on, a send never answers and fails after the sender's 10 s time-out; `inFlight` counts such sends.
  readonly hung: Ref.Ref<boolean>
  readonly inFlight: Ref.Ref<{ readonly now: number; readonly peak: number }>
}
const recorder = Effect.all({
  sent: Ref.make<ReadonlyArray<SignedRequest & { ok: boolean }>>([]),
  failing: Ref.make(false),
  refused: Ref.make<ReadonlySet<string>>(new Set()),
  hung: Ref.make(false),
  inFlight: Ref.make({ now: 0, peak: 0 })
})
const hungSend = (r: Recorder, request: SignedRequest) =>
  Effect.acquireUseRelease(
    Ref.update(r.inFlight, ({ now, peak }) => ({ now: now + 1, peak: Math.max(peak, now + 1) })),
    () =>
      Ref.update(r.sent, (all) => [...all, { ...request, ok: false }]).pipe(
        Effect.zipRight(Effect.sleep(Duration.seconds(10))),
        Effect.zipRight(Effect.fail("no answer within 10 s"))
      ),
    () => Ref.update(r.inFlight, ({ now, peak }) => ({ now: now - 1, peak }))
  )

const testLayer = (r: Recorder) =>
  WebhookWorker.Default.pipe(
    Layer.provideMerge(SqliteWebhookStore),
    Layer.provideMerge(Layer.succeed(
      WebhookSender,
      WebhookSender.of({
        check: () => Effect.void,
        send: (requests) =>
          Effect.forEach(requests, (request) =>
            Effect.flatMap(Ref.get(r.hung), (hung) =>
              hung ? hungSend(r, request) : Effect.void).pipe(
                Effect.zipRight(Effect.all([Ref.get(r.failing), Ref.get(r.refused)])),
                Effect.flatMap(([failing, refused]) =>
                  Effect.as(
                    Ref.update(r.sent, (all) => [...all, { ...request, ok: !failing && !refused.has(request.id) }]),
                    failing ? 503 : refused.has(request.id) ? 400 : 200
                  )
                ),
                Effect.catchAll((reason) => Effect.succeed(reason))
              ), { concurrency: "unbounded" })
      })
    )),
    Layer.provide(Layer.effectDiscard(runMigrations)),
    Layer.provideMerge(Layer.unwrapScoped(Effect.map(tempDir, (dir) =>
      sqliteClient(join(dir, "paysub.db")))))
  )

const run = <A, E>(self: (r: Recorder) => Effect.Effect<A, E, WebhookWorker | WebhookStore | SqlClient>) =>
  Effect.gen(function*() {
    yield* TestClock.setTime(T0)
    const r = yield* recorder
    return yield* Effect.provide(self(r), testLayer(r))
  }).pipe(Effect.scoped)

const endpointId = EndpointId.make("we_000000000000000000000001")
// An endpoint of `owner` and `n` events for it, each with a delivery due now.
const setUp = (n: number) =>
  Effect.gen(function*() {
    const store = yield* WebhookStore
    const now = yield* DateTime.now
    yield* store.createEndpoint({
      id: endpointId,
      owner,
      url: "https://hooks.example/x",
      enabledEvents: ["*"],
      createdAt: now
    }, "whsec_AAAA")
    yield* moreEvents(0, n)
  })
// Events `from` to `from + n - 1` for the endpoint, each with a delivery due now.
const moreEvents = (from: number, n: number) =>
  Effect.gen(function*() {
    const store = yield* WebhookStore
    const sql = yield* SqlClient
    const now = yield* DateTime.now
    for (let i = from; i < from + n; i++) {
      const id = EventId.make(`evt_${String(i).padStart(24, "0")}`)
      yield* sql`INSERT INTO events (id, type, owner, created_at, body)
        VALUES (${id}, 'transfer.approved', ${owner}, ${DateTime.toEpochMillis(now)}, ${`{"id":"${id}"}`})`
      assert.isTrue(yield* store.resend(owner, id, endpointId, now))
    }
  })
const deliverDue = Effect.flatMap(WebhookWorker, (w) => w.deliverDue)
const endpoint = Effect.flatMap(WebhookStore, (s) => Effect.map(s.getEndpoint(owner, endpointId), Option.getOrThrow))

describe("WebhookWorker.deliverDue", () => {
  it.effect("delivers every due event once, signed with its own id as webhook-id", () =>
    run((r) =>
      Effect.gen(function*() {
        yield* setUp(100)
        yield* deliverDue
        const sent = yield* Ref.get(r.sent)
        assert.lengthOf(sent, 100)
        assert.strictEqual(new Set(sent.map((s) => s.id)).size, 100)
        assert.isTrue(sent.every((s) => s.body === `{"id":"${s.id}"}` && s.timestamp === T0 / 1000))
        yield* TestClock.adjust(Duration.days(1))
        yield* deliverDue
        assert.lengthOf(yield* Ref.get(r.sent), 100)
      })
    ))

  it.effect("a failing endpoint is probed by one delivery at a time; the first success sends the backlog", () =>
    run((r) =>
      Effect.gen(function*() {
        yield* setUp(30)
        yield* Ref.set(r.failing, true)
        yield* deliverDue
        // The first failure marks the endpoint failing; what had not started waits for the probe.
        const first = (yield* Ref.get(r.sent)).length
        assert.isAtLeast(first, 1)
        assert.isAtMost(first, 16, "at most the endpoint's attempts in flight, not the whole batch")
        assert.isDefined((yield* endpoint).failingSince)
        yield* deliverDue
        assert.lengthOf(yield* Ref.get(r.sent), first, "nothing before the backoff ends")
        yield* TestClock.adjust(Duration.seconds(10))
        yield* deliverDue
        assert.lengthOf(yield* Ref.get(r.sent), first + 1, "one probe")
        yield* Ref.set(r.failing, false)
        yield* TestClock.adjust(Duration.seconds(10))
        yield* deliverDue
        const sent = yield* Ref.get(r.sent)
        assert.strictEqual(new Set(sent.filter((s) => s.ok).map((s) => s.id)).size, 30, "every event, once")
        assert.lengthOf(sent, first + 1 + 30)
        const recovered = yield* endpoint
        assert.isUndefined(recovered.failingSince)
        assert.isUndefined(recovered.disabledAt)
        // Each attempt kept: the first round's 503s, the rest of that pass not sent, the probe's 503, then a
        // 200 for each delivery.
        const sql = yield* SqlClient
        const kept = yield* sql<{ outcome: string; n: number }>`SELECT COALESCE(CAST(status AS TEXT), failure)
          AS outcome, COUNT(*) AS n FROM webhook_attempts GROUP BY outcome ORDER BY outcome`
        assert.deepStrictEqual(kept.map((k) => [k.outcome, Number(k.n)]), [
          ["200", 30],
          ["503", first + 1],
          ["endpoint failing", 30 - first]
        ])
      }).pipe(Effect.withRandom(Random.fixed([0.9999])))
    ))

  it.effect("a delivery refused while the endpoint takes the others waits on its own, longer each time", () =>
    run((r) =>
      Effect.gen(function*() {
        yield* setUp(40)
        const refused = EventId.make(`evt_${"0".repeat(24)}`)
        yield* Ref.set(r.refused, new Set([refused]))
        const attemptsOf = Effect.map(Ref.get(r.sent), (sent) => sent.filter((s) => s.id === refused).length)
        yield* deliverDue
        assert.strictEqual((yield* Ref.get(r.sent)).filter((s) => s.ok).length, 39)
        assert.strictEqual(yield* attemptsOf, 1, "not sent again in the same run, pass after pass")
        assert.isUndefined((yield* endpoint).failingSince, "the endpoint takes the others: it is not failing")
        // Uniform in [c/2, c) with c = 10 s, then 20 s, 40 s ...: due again within c, never before c/2. New
        // events keep coming and are taken, so the endpoint is never failing (a receiver that refuses all it is
        // sent is, and waits as a whole).
        let next = 40
        for (const [attempt, ceiling] of [[2, 10], [3, 20], [4, 40]] as const) {
          yield* TestClock.adjust(Duration.seconds(ceiling / 2 - 1))
          yield* moreEvents(next, 3)
          next += 3
          yield* deliverDue
          assert.strictEqual(yield* attemptsOf, attempt - 1, `not before ${ceiling / 2} s`)
          yield* TestClock.adjust(Duration.seconds(ceiling / 2 + 1))
          yield* moreEvents(next, 3)
          next += 3
          yield* deliverDue
          assert.strictEqual(yield* attemptsOf, attempt, `within ${ceiling} s`)
        }
        assert.strictEqual((yield* Ref.get(r.sent)).filter((s) => s.ok).length, 39 + 18)
        assert.isUndefined((yield* endpoint).failingSince)
      })
    ))

  it.effect("a hung endpoint: at most 16 attempts in flight across passes, failing after one time-out", () =>
    run((r) =>
      Effect.gen(function*() {
        yield* setUp(100)
        yield* Ref.set(r.hung, true)
        const worker = yield* Effect.fork(deliverDue)
        // The test clock moves in steps of 100 ms, each after a few real milliseconds for SQLite's group commits.
        for (let i = 0; i < 300 && Option.isNone(yield* Fiber.poll(worker)); i++) {
          yield* Effect.promise(() => new Promise((ok) => setTimeout(ok, 5)))
          yield* TestClock.adjust(Duration.millis(100))
        }
        yield* Fiber.join(worker)
        const { peak } = yield* Ref.get(r.inFlight)
        assert.isAtLeast(peak, 1)
        assert.isAtMost(peak, 16)
        const failing = yield* endpoint
        assert.isDefined(failing.failingSince)
        assert.isAtMost(DateTime.toEpochMillis(failing.failingSince!) - T0, 10_000 + 100)
        assert.isAtMost((yield* Ref.get(r.sent)).length, 16, "the attempts not started wait for the probe")
      })
    ))

  it.effect("an endpoint failing for 3 days is disabled, with the reason, and gets nothing more", () =>
    run((r) =>
      Effect.gen(function*() {
        yield* setUp(3)
        yield* Ref.set(r.failing, true)
        let probes = 0
        while ((yield* endpoint).disabledAt === undefined) {
          yield* deliverDue
          yield* TestClock.adjust(DestinationBackoff.cap)
          probes++
          assert.isBelow(probes, 100)
        }
        const disabled = yield* endpoint
        assert.match(disabled.disabledReason!, /^Disabled after failing since 2025-01-15T12:00:00.000Z: HTTP 503$/)
        assert.isAtLeast(DateTime.toEpochMillis(disabled.disabledAt!) - T0, Duration.toMillis(Duration.days(3)))
        const attempts = (yield* Ref.get(r.sent)).length
        yield* Ref.set(r.failing, false)
        yield* TestClock.adjust(Duration.days(1))
        yield* deliverDue
        assert.lengthOf(yield* Ref.get(r.sent), attempts)
      }).pipe(Effect.withRandom(Random.fixed([0.5])))
    ))
})
