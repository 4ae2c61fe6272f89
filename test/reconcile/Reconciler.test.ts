// The reconciler and the key pruner as use cases, over real SQLite storage and the sandbox card network. Time
// is the TestClock's: leases, backoff and key expiry are decided by the clock alone.
import { SqlClient } from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import { DateTime, Duration, Effect, Fiber, Layer, Option, Redacted, Schema, TestClock } from "effect"
import { SandboxCardNetwork, sandboxTimeoutCards } from "../../adapters/cardnetwork/SandboxCardNetwork.ts"
import { layer as HmacFingerprints } from "../../adapters/crypto/HmacFingerprints.ts"
import { CardFingerprints } from "../../core/payments/CardFingerprints.ts"
import { IdempotencyKey, IdempotencyKeyTtl, requestHash } from "../../core/payments/Idempotency.ts"
import { KeyPruner, PruneBatch, PruneInterval } from "../../core/payments/KeyPruner.ts"
import { Reconciler } from "../../core/payments/Reconciler.ts"
import { ReconcileSettings } from "../../core/payments/ReconcileSettings.ts"
import { ClientId, PaymentTransferRequest, pendingTransfer, TransferId } from "../../core/payments/Transfer.ts"
import { randomId, type Submitted, Transfers } from "../../core/payments/Transfers.ts"
import { TransferStore } from "../../core/payments/TransferStore.ts"
import { tempSqliteTransferStore } from "../storage/TempSqlite.ts"

const T0 = Date.UTC(2026, 0, 15, 12, 0, 0)
const client = ClientId.make(`cl_${"reconcile".padEnd(24, "x")}`)

const testLayer = () =>
  Layer.mergeAll(Transfers.Default, Reconciler.Default, KeyPruner.Default).pipe(
    Layer.provideMerge(
      Layer.mergeAll(
        tempSqliteTransferStore(),
        SandboxCardNetwork.layer,
        HmacFingerprints(Redacted.make("reconciler-test-key"))
      )
    )
  )

const run = <A, E>(
  self: Effect.Effect<A, E, Transfers | Reconciler | KeyPruner | TransferStore | SqlClient | CardFingerprints>
) =>
  Effect.gen(function*() {
    yield* TestClock.setTime(T0)
    const store = yield* TransferStore
    yield* store.createClient({ id: client, name: "Reconcile" }, "hash-reconcile", yield* DateTime.now)
    return yield* self
  }).pipe(Effect.provide(testLayer()))

const request = (reference: string, pan: string) =>
  Schema.decodeUnknownSync(PaymentTransferRequest)({
    reference,
    amount: "12.30",
    currency: "USD",
    sender_account_uri: `pan:${pan};exp=2031-07;cvc=123`,
    sender: { first_name: "Ann", email: "ann@example.com" },
    recipient: { first_name: "Bob", email: "bob@example.com", merchant_id: "merchant_1" }
  })

const statusOf = ({ answer }: Submitted) => answer._tag === "Made" ? answer.transfer.status : answer._tag
const idOf = ({ answer }: Submitted) => answer._tag === "Made" ? answer.transfer.id : answer.existing

describe("Reconciler", () => {
  it.effect("a time-out is recorded unknown, its key replays it, and it reconciles to the network's outcome", () =>
    run(Effect.gen(function*() {
      const transfers = yield* Transfers
      const reconciler = yield* Reconciler
      const [approves, declines] = sandboxTimeoutCards
      const key = IdempotencyKey.make("key-unknown-1")
      const first = yield* transfers.submit(client, request("unknown-1", approves!.pan), "req-1", key)
      assert.strictEqual(statusOf(first), "unknown")
      const replay = yield* transfers.submit(client, request("unknown-1", approves!.pan), "req-2", key)
      assert.isTrue(replay.replayed)
      assert.strictEqual(statusOf(replay), "unknown")
      const other = yield* transfers.submit(client, request("unknown-2", declines!.pan), "req-3")
      assert.strictEqual(statusOf(other), "unknown")
      assert.deepStrictEqual(yield* transfers.balance(client), [])

      assert.strictEqual(yield* reconciler.reconcileDue, 2)
      const approved = Option.getOrThrow(yield* transfers.get(client, idOf(first)))
      assert.strictEqual(approved.status, "approved")
      assert.isDefined(approved.reconciledAt)
      const declined = Option.getOrThrow(yield* transfers.get(client, idOf(other)))
      assert.deepStrictEqual(declined.failure, { code: "card_declined", decline_code: "generic_decline" })
      // The key now replays the final answer; a retry without a key gets it too.
      assert.strictEqual(
        statusOf(yield* transfers.submit(client, request("unknown-1", approves!.pan), "r", key)),
        "approved"
      )
      const keyless = yield* transfers.submit(client, request("unknown-2", declines!.pan), "req-4")
      assert.strictEqual(statusOf(keyless), "declined")
      assert.strictEqual(idOf(keyless), idOf(other))
      assert.deepStrictEqual((yield* transfers.balance(client)).map((b) => b.amount), [1230n])
      assert.strictEqual(yield* reconciler.reconcileDue, 0)
    })))

  it.effect("a reservation whose request died is reconciled after the lease; its retries get the real outcome", () =>
    run(Effect.gen(function*() {
      const transfers = yield* Transfers
      const reconciler = yield* Reconciler
      const store = yield* TransferStore
      const fingerprints = yield* CardFingerprints
      const { pendingLease } = yield* ReconcileSettings
      // What two requests (one with a key) leave behind when their process dies between reserving and settling.
      const reservation = (reference: string, key?: string) =>
        Effect.gen(function*() {
          const died = request(reference, "4242424242424242")
          const hash = requestHash(fingerprints, died)
          const id = TransferId.make(yield* randomId("tr_"))
          const fingerprint = fingerprints.of(died.sender_account_uri.pan)
          const pending = pendingTransfer(client, id, died, 1230n, fingerprint, yield* DateTime.now, hash)
          const claim = key === undefined
            ? undefined
            : { key: IdempotencyKey.make(key), requestHash: hash, requestId: "req-died" }
          assert.strictEqual((yield* store.reserve(pending, claim))._tag, "Started")
          return { died, id }
        })
      const plain = yield* reservation("died-1")
      const keyed = yield* reservation("died-2", "key-died-2")
      const key = IdempotencyKey.make("key-died-2")

      // Within the lease the request may still be running: its reference is taken, its key in use.
      assert.strictEqual(statusOf(yield* transfers.submit(client, plain.died, "req-a")), "ReferenceTaken")
      assert.strictEqual(
        (yield* Effect.flip(transfers.submit(client, keyed.died, "req-b", key)))._tag,
        "IdempotencyKeyInUse"
      )
      assert.strictEqual(yield* reconciler.reconcileDue, 0)

      yield* TestClock.adjust(pendingLease)
      // Past the lease: the same request again, without its key, is answered with its transfer, not a conflict.
      const retried = yield* transfers.submit(client, plain.died, "req-c")
      assert.strictEqual(statusOf(retried), "pending")
      assert.strictEqual(idOf(retried), plain.id)
      // Another request with the reference is still a conflict.
      const other = yield* transfers.submit(client, request("died-1", "5555555555554444"), "req-d")
      assert.strictEqual(statusOf(other), "ReferenceTaken")

      // The sandbox never answered them (a restart forgets): never received, declined as a processing error.
      assert.strictEqual(yield* reconciler.reconcileDue, 2)
      for (const { died, id } of [plain, keyed]) {
        const t = Option.getOrThrow(yield* transfers.get(client, id))
        assert.strictEqual(t.status, "declined")
        assert.deepStrictEqual(t.failure, { code: "processing_error" })
        const again = yield* transfers.submit(client, died, "req-e", died === keyed.died ? key : undefined)
        assert.strictEqual(statusOf(again), "declined")
        assert.strictEqual(idOf(again), id)
      }
      assert.deepStrictEqual(yield* transfers.balance(client), [])
    })))
})

describe("KeyPruner", () => {
  it.effect("prunes keys older than 24 h, in batches, once an interval; a request with an expired key runs anew", () =>
    run(Effect.gen(function*() {
      const transfers = yield* Transfers
      const pruner = yield* KeyPruner
      const sql = yield* SqlClient
      const keys = () =>
        Effect.map(sql<{ n: unknown }>`SELECT count(*) AS n FROM idempotency_keys`, (rows) => Number(rows[0]!.n))
      const old = PruneBatch + 3
      for (let i = 0; i < old; i++) {
        yield* transfers.submit(
          client,
          request(`old-${i}`, "4000000000000002"),
          `req-${i}`,
          IdempotencyKey.make(`k-${i}`)
        )
      }
      const fiber = yield* Effect.fork(pruner.run)
      yield* TestClock.adjust(Duration.hours(12))
      yield* transfers.submit(client, request("young", "4000000000000002"), "req-y", IdempotencyKey.make("k-young"))
      assert.strictEqual(yield* keys(), old + 1)
      // The first pass ran at the start, the second 1 h later: nothing was old enough.
      yield* TestClock.adjust(Duration.sum(Duration.subtract(IdempotencyKeyTtl, Duration.hours(12)), PruneInterval))
      assert.strictEqual(yield* keys(), 1)
      // The expired key, used again with another request, runs as a new one.
      const reused = yield* transfers.submit(
        client,
        request("reused", "4242424242424242"),
        "req-r",
        IdempotencyKey.make("k-0")
      )
      assert.isFalse(reused.replayed)
      assert.strictEqual(statusOf(reused), "approved")
      yield* Fiber.interrupt(fiber)
    })))
})
