// What every RefundStore must do, whatever storage is behind it (core's store over each adapter's
// TransferStorage port, with the TransferStore beside it to make clients and transfers). The checks use the
// ports only, plus RawRows to count rows and read them as stored; `makeLayer` must give a new, migrated
// database each time.
import { assert, describe, it } from "@effect/vitest"
import { DateTime, Duration, Effect, type Layer, Option } from "effect"
import { CurrencyCode } from "../../core/payments/Currency.ts"
import {
  IdempotencyKey,
  IdempotencyKeyTtl,
  IdempotencyLease,
  IdempotencyStart,
  KeptAnswer,
  type KeyClaim,
  RequestHash
} from "../../core/payments/Idempotency.ts"
import {
  type Refund,
  RefundId,
  refundOutcomeUnknown,
  type RefundReason,
  settledRefund
} from "../../core/payments/Refund.ts"
import { Opening, type OpenRefund, RefundStore } from "../../core/payments/RefundStore.ts"
import { ClientId, Reference, Transfer, TransferId } from "../../core/payments/Transfer.ts"
import { TransferStore } from "../../core/payments/TransferStore.ts"
import { count, RawRows } from "./RawRows.ts"

const T0 = Date.UTC(2025, 0, 15, 12, 0, 0)
const at = (ms: number) => DateTime.unsafeMake(T0 + ms)
const ms = DateTime.toEpochMillis
const valueOf = <A>(option: Option.Option<A>): A | undefined => Option.getOrUndefined(option)

const padded = (prefix: string, label: string) => `${prefix}${label.padEnd(24, "x")}`
const clientId = (label: string) => ClientId.make(padded("cl_", label))
const transferId = (label: string) => TransferId.make(padded("tr_", label))
const refundId = (label: string) => RefundId.make(padded("re_", label))
const USD = CurrencyCode.make("USD")
const JPY = CurrencyCode.make("JPY")

type TransferFields = ConstructorParameters<typeof Transfer>[0]
// An approved transfer of 10.00 USD unless told otherwise.
const transfer = (client: ClientId, label: string, overrides: Partial<TransferFields> = {}) =>
  new Transfer({
    id: transferId(label),
    clientId: client,
    reference: Reference.make(`ref-${label}`),
    amount: 1000n,
    currency: USD,
    status: "approved",
    sender: {
      first_name: "Ann",
      email: "ann@example.com",
      card: { brand: "visa", last4: "4242", exp_month: 12, exp_year: 2030, fingerprint: "fp-ann-visa" }
    },
    recipient: { first_name: "Bob", email: "bob@example.com", merchant_id: "merchant-a" },
    ...(overrides.status === undefined || overrides.status === "approved" ? { authorizationCode: `AUTH${label}` } : {}),
    createdAt: at(0),
    ...overrides
  })

const claim = (key: string, hash = "hash-refund", requestId = "req-1"): KeyClaim => ({
  key: IdempotencyKey.make(key),
  requestHash: RequestHash.make(hash),
  requestId
})

// Every field of a refund as plain data: own keys only, so an absent optional field and one set to undefined differ.
const plain = (r: Refund) => ({
  ...r,
  createdAt: ms(r.createdAt),
  ...(r.reconciledAt === undefined ? {} : { reconciledAt: ms(r.reconciledAt) })
})

export const refundStoreContract = (
  name: string,
  makeLayer: () => Layer.Layer<TransferStore | RefundStore | RawRows, unknown>
): void => {
  describe(`RefundStore contract: ${name}`, () => {
    const run = <A, E>(self: Effect.Effect<A, E, TransferStore | RefundStore | RawRows>) =>
      Effect.provide(self, makeLayer())

    const newClient = (label: string) =>
      Effect.gen(function*() {
        const store = yield* TransferStore
        const id = clientId(label)
        yield* store.createClient({ id, name: `Client ${label}` }, `hash-${label}`, at(0))
        return id
      })
    const recorded = (client: ClientId, label: string, overrides: Partial<TransferFields> = {}) =>
      Effect.flatMap(
        TransferStore,
        (store) => Effect.as(store.record(transfer(client, label, overrides)), transfer(client, label, overrides))
      )
    // Client "a" and its transfer "ta".
    const setUp = (overrides: Partial<TransferFields> = {}) =>
      Effect.gen(function*() {
        const client = yield* newClient("a")
        return { client, transfer: yield* recorded(client, "ta", overrides) }
      })

    const request = (
      t: Transfer,
      label: string,
      amount: string | undefined,
      options: { readonly claim?: KeyClaim; readonly reason?: RefundReason; readonly client?: ClientId } = {}
    ): OpenRefund => ({
      client: options.client ?? t.clientId,
      transfer: t.id,
      id: refundId(label),
      amount,
      reason: options.reason,
      claim: options.claim
    })

    const open = (r: OpenRefund, now = at(1000)) => Effect.flatMap(RefundStore, (store) => store.open(r, now))
    // Opens a refund that must be made.
    const opened = (r: OpenRefund, now = at(1000)) =>
      Effect.flatMap(open(r, now), (opening) => {
        assert.strictEqual(opening._tag === "Refused" ? opening.reason._tag : opening._tag, "Opened")
        return Effect.succeed((opening as Extract<typeof opening, { _tag: "Opened" }>).refund)
      })
    const refundedOf = (t: Transfer) =>
      Effect.map(
        Effect.flatMap(TransferStore, (store) => store.get(t.clientId, t.id)),
        (found) => Option.getOrThrow(found).amountRefunded
      )
    // The refunds' events (recording a transfer has its own), as stored: a column each, or the in-memory row's fields.
    const refundEvents = Effect.flatMap(
      RawRows,
      (raw) =>
        Effect.map(
          raw.rows("events"),
          (rows) =>
            rows.map((r) => ({ type: String(r["type"] ?? r["row.type"]), body: String(r["body"] ?? r["row.body"]) }))
              .filter((e) => e.type.startsWith("refund."))
        )
    )
    const eventTypes = Effect.map(refundEvents, (events) => events.map((e) => e.type).sort())
    const countRefunds = count("refunds")

    describe("open", () => {
      it.effect("a refund of an approved transfer is pending, counts against it, and round-trips every field", () =>
        run(Effect.gen(function*() {
          const refunds = yield* RefundStore
          const { client, transfer: t } = yield* setUp()
          const opening = yield* open(request(t, "one", "2.50", { reason: "requested_by_customer" }))
          assert.strictEqual(opening._tag, "Opened")
          if (opening._tag !== "Opened") return
          assert.strictEqual(opening.authorizationCode, "AUTHta")
          const made = opening.refund
          assert.deepStrictEqual(
            [made.id, made.transferId, made.clientId, made.amount, made.currency, made.status, made.reason],
            [refundId("one"), t.id, client, 250n, USD, "pending", "requested_by_customer"]
          )
          assert.strictEqual(yield* refundedOf(t), 250n)
          const stored = Option.getOrThrow(yield* refunds.get(client, refundId("one")))
          assert.strictEqual(typeof stored.amount, "bigint")
          assert.deepStrictEqual(plain(stored), plain(made))
          assert.strictEqual(ms(stored.createdAt), T0 + 1000)
          assert.isFalse("idempotencyKey" in stored)
          assert.isFalse("failureReason" in stored)
          assert.isFalse("reconciledAt" in stored)
          // Without an amount, all that is left; without a reason, none.
          const rest = yield* opened(request(t, "two", undefined))
          assert.strictEqual(rest.amount, 750n)
          assert.isFalse("reason" in Option.getOrThrow(yield* refunds.get(client, refundId("two"))))
          assert.strictEqual(yield* refundedOf(t), 1000n)
          assert.strictEqual(yield* countRefunds, 2)
        })))

      it.effect("amounts above 2^53 are exact, in the refund and in the transfer's amount refunded", () =>
        run(Effect.gen(function*() {
          const refunds = yield* RefundStore
          const { client, transfer: t } = yield* setUp({ amount: 2n ** 62n, currency: JPY })
          const made = yield* opened(request(t, "big", "999999999999999"))
          assert.strictEqual(yield* refundedOf(t), 999_999_999_999_999n)
          // All that is left, above 2^53.
          const rest = yield* opened(request(t, "rest", undefined))
          assert.strictEqual(rest.amount, 2n ** 62n - 999_999_999_999_999n)
          assert.strictEqual(Option.getOrThrow(yield* refunds.get(client, rest.id)).amount, rest.amount)
          assert.strictEqual(Option.getOrThrow(yield* refunds.get(client, made.id)).amount, 999_999_999_999_999n)
          assert.strictEqual(yield* refundedOf(t), 2n ** 62n)
        })))

      it.effect("refusals write nothing and release the key: not approved, refunded, too large, bad amount", () =>
        run(Effect.gen(function*() {
          const store = yield* TransferStore
          const { client, transfer: t } = yield* setUp()
          const refusal = (r: OpenRefund) =>
            Effect.map(open(r), (opening) => opening._tag === "Refused" ? opening.reason._tag : opening._tag)
          const keyed = (label: string, amount: string | undefined, of = t) =>
            request(of, label, amount, { claim: claim(`key-${label}`, `hash-${label}`) })
          const pending = transfer(client, "pending", { status: "pending" })
          yield* store.reserve(pending)
          const declined = yield* recorded(client, "declined", {
            status: "declined",
            failure: { code: "card_declined" }
          })
          assert.strictEqual(yield* refusal(keyed("p", "1.00", pending)), "TransferNotRefundable")
          assert.strictEqual(yield* refusal(keyed("d", "1.00", declined)), "TransferNotRefundable")
          assert.strictEqual(yield* refusal(keyed("large", "10.01")), "AmountTooLarge")
          for (const amount of ["1.001", "0", "0.00", "-1", "1e3", ""]) {
            assert.strictEqual(yield* refusal(keyed(`bad${amount.length}`, amount)), "InvalidRefund", amount)
          }
          yield* opened(request(t, "all", undefined))
          assert.strictEqual(yield* refusal(keyed("again", "0.01")), "TransferAlreadyRefunded")
          assert.strictEqual(yield* refusal(keyed("whole", undefined)), "TransferAlreadyRefunded")
          assert.strictEqual(yield* countRefunds, 1)
          assert.strictEqual(yield* refundedOf(t), 1000n)
          // The keys were released: none is kept.
          assert.strictEqual(yield* count("idempotency_keys"), 0)
        })))

      it.effect("no transfer, or another client's, is NoTransfer; the key is released", () =>
        run(Effect.gen(function*() {
          const store = yield* TransferStore
          const { transfer: t } = yield* setUp()
          const b = yield* newClient("b")
          const ofB = request(t, "theirs", "1.00", { client: b, claim: claim("key-theirs") })
          assert.strictEqual((yield* open(ofB))._tag, "NoTransfer")
          const missing = { ...request(t, "missing", "1.00"), transfer: transferId("nosuch") }
          assert.strictEqual((yield* open(missing))._tag, "NoTransfer")
          assert.strictEqual(yield* countRefunds, 0)
          assert.strictEqual(yield* refundedOf(t), 0n)
          assert.isUndefined(valueOf(yield* store.keyRecord(b, IdempotencyKey.make("key-theirs"))))
        })))

      it.effect("a key that did not start opens nothing: in progress, then replayed with the refund made", () =>
        run(Effect.gen(function*() {
          const refunds = yield* RefundStore
          const store = yield* TransferStore
          const { client, transfer: t } = yield* setUp()
          const first = yield* opened(request(t, "first", "1.00", { claim: claim("key-1") }))
          const again = yield* open(request(t, "second", "1.00", { claim: claim("key-1", "hash-refund", "req-2") }))
          assert.deepStrictEqual(again, Opening.KeyNotStarted({ start: IdempotencyStart.InProgress() }))
          yield* refunds.settle(settledRefund(first, { _tag: "Succeeded" }), "pending")
          const record = Option.getOrThrow(yield* store.keyRecord(client, claim("key-1").key))
          assert.deepStrictEqual(record.answer, KeptAnswer.RefundMade({ refundId: first.id }))
          assert.strictEqual(record.requestId, "req-1")
          const replay = yield* open(request(t, "third", "1.00", { claim: claim("key-1", "hash-refund", "req-3") }))
          assert.strictEqual(replay._tag, "KeyNotStarted")
          if (replay._tag === "KeyNotStarted") {
            assert.deepStrictEqual(
              replay.start,
              IdempotencyStart.Replay({ answer: KeptAnswer.RefundMade({ refundId: first.id }), requestId: "req-1" })
            )
          }
          const mismatch = yield* open(request(t, "fourth", "1.00", { claim: claim("key-1", "hash-other") }))
          assert.deepStrictEqual(mismatch, Opening.KeyNotStarted({ start: IdempotencyStart.Mismatch() }))
          assert.strictEqual(yield* countRefunds, 1)
          assert.strictEqual(yield* refundedOf(t), 100n)
        })))
    })

    describe("settle and cancel", () => {
      it.effect("succeeded once: one refund.created event; a second settle from pending changes nothing", () =>
        run(Effect.gen(function*() {
          const refunds = yield* RefundStore
          const { client, transfer: t } = yield* setUp()
          const made = yield* opened(request(t, "one", "4.00"))
          yield* refunds.settle(settledRefund(made, { _tag: "Succeeded" }), "pending")
          assert.strictEqual(Option.getOrThrow(yield* refunds.get(client, made.id)).status, "succeeded")
          assert.deepStrictEqual(yield* eventTypes, ["refund.created"])
          yield* refunds.settle(settledRefund(made, { _tag: "Failed", reason: "declined" }), "pending")
          yield* refunds.settle(refundOutcomeUnknown(made), "pending")
          assert.strictEqual(Option.getOrThrow(yield* refunds.get(client, made.id)).status, "succeeded")
          assert.deepStrictEqual(yield* eventTypes, ["refund.created"])
          assert.strictEqual(yield* refundedOf(t), 400n)
          // A final refund is not cancelled.
          yield* refunds.cancel(made)
          assert.isTrue(Option.isSome(yield* refunds.get(client, made.id)))
          assert.strictEqual(yield* refundedOf(t), 400n)
        })))

      it.effect("failed gives its amount back, once; the event's body is the refund's view", () =>
        run(Effect.gen(function*() {
          const refunds = yield* RefundStore
          const { client, transfer: t } = yield* setUp()
          const made = yield* opened(request(t, "one", "4.00"))
          yield* opened(request(t, "two", "1.00"))
          assert.strictEqual(yield* refundedOf(t), 500n)
          const failed = settledRefund(made, { _tag: "Failed", reason: "expired_or_canceled_card" })
          yield* refunds.settle(failed, "pending")
          yield* refunds.settle(failed, "pending")
          assert.strictEqual(yield* refundedOf(t), 100n)
          const stored = Option.getOrThrow(yield* refunds.get(client, made.id))
          assert.deepStrictEqual(plain(stored), plain(failed))
          assert.strictEqual(stored.failureReason, "expired_or_canceled_card")
          assert.deepStrictEqual(yield* eventTypes, ["refund.created"])
          const [event] = yield* refundEvents
          const body = JSON.parse(event!.body)
          assert.strictEqual(body.type, "refund.created")
          assert.strictEqual(body.data.object.id, made.id)
          assert.strictEqual(body.data.object.status, "failed")
          // What it gave back may be refunded again.
          yield* opened(request(t, "three", "9.00"))
          assert.strictEqual(yield* refundedOf(t), 1000n)
        })))

      it.effect("unknown, then reconciled: refund.created then refund.updated, and its own key answered, no other", () =>
        run(Effect.gen(function*() {
          const refunds = yield* RefundStore
          const store = yield* TransferStore
          const { client, transfer: t } = yield* setUp()
          const made = yield* opened(request(t, "one", "3.00", { claim: claim("key-1", "hash-one") }))
          assert.strictEqual(Option.getOrThrow(yield* refunds.get(client, made.id)).idempotencyKey, "key-1")
          // Another key waiting with the same request hash: a hash does not name a refund (two refunds with one
          // body are two refunds), so it is not this refund's answer.
          yield* store.reserve(transfer(client, "other", { status: "pending" }), claim("key-2", "hash-one", "req-2"))
          const unknown = refundOutcomeUnknown(made)
          yield* refunds.settle(unknown, "pending")
          assert.strictEqual(Option.getOrThrow(yield* refunds.get(client, made.id)).status, "unknown")
          assert.strictEqual(yield* refundedOf(t), 300n)
          assert.deepStrictEqual(
            Option.getOrThrow(yield* store.keyRecord(client, IdempotencyKey.make("key-1"))).answer,
            KeptAnswer.RefundMade({ refundId: made.id })
          )
          assert.isUndefined(Option.getOrThrow(yield* store.keyRecord(client, IdempotencyKey.make("key-2"))).answer)
          const reconciled = settledRefund(unknown, { _tag: "Succeeded" }, at(9_000))
          yield* refunds.settle(reconciled, "unknown")
          yield* refunds.settle(settledRefund(unknown, { _tag: "Failed", reason: "unknown" }, at(9_500)), "unknown")
          const stored = Option.getOrThrow(yield* refunds.get(client, made.id))
          assert.deepStrictEqual(plain(stored), plain(reconciled))
          assert.strictEqual(ms(stored.reconciledAt!), T0 + 9_000)
          assert.deepStrictEqual(yield* eventTypes, ["refund.created", "refund.updated"])
          assert.strictEqual(yield* refundedOf(t), 300n)
        })))

      it.effect("a key taken over after its request died answers with that request's refund, and makes none", () =>
        run(Effect.gen(function*() {
          const store = yield* TransferStore
          const { client, transfer: t } = yield* setUp()
          const made = yield* opened(request(t, "one", "3.00", { claim: claim("key-1") }))
          // Past the key's lease, before the reconciler settled the refund: the retry restarts the key.
          const later = at(1000 + Duration.toMillis(IdempotencyLease) + 1)
          const retry = yield* open(
            request(t, "retry", "3.00", { claim: claim("key-1", "hash-refund", "req-2") }),
            later
          )
          assert.deepStrictEqual(
            retry,
            Opening.KeyNotStarted({
              start: IdempotencyStart.Replay({
                answer: KeptAnswer.RefundMade({ refundId: made.id }),
                requestId: "req-2"
              })
            })
          )
          assert.strictEqual(yield* countRefunds, 1)
          assert.strictEqual(yield* refundedOf(t), 300n)
          assert.deepStrictEqual(
            Option.getOrThrow(yield* store.keyRecord(client, IdempotencyKey.make("key-1"))).answer,
            KeptAnswer.RefundMade({ refundId: made.id })
          )
          // Past the key's time to live (counted from the retry's restart of it) it is no key: a new refund.
          const expired = DateTime.addDuration(later, Duration.sum(IdempotencyKeyTtl, Duration.millis(1)))
          const fresh = yield* open(
            request(t, "fresh", "1.00", { claim: claim("key-1", "hash-refund", "req-3") }),
            expired
          )
          assert.strictEqual(fresh._tag, "Opened")
          assert.strictEqual(yield* countRefunds, 2)
        })))

      it.effect("an unknown one that failed when reconciled gives its amount back", () =>
        run(Effect.gen(function*() {
          const refunds = yield* RefundStore
          const { transfer: t } = yield* setUp()
          const unknown = refundOutcomeUnknown(yield* opened(request(t, "one", "3.00")))
          yield* refunds.settle(unknown, "pending")
          yield* refunds.settle(settledRefund(unknown, { _tag: "Failed", reason: "unknown" }, at(9_000)), "unknown")
          assert.strictEqual(yield* refundedOf(t), 0n)
        })))

      it.effect("cancel deletes a pending refund and gives its amount back, once", () =>
        run(Effect.gen(function*() {
          const refunds = yield* RefundStore
          const { client, transfer: t } = yield* setUp()
          const made = yield* opened(request(t, "one", "6.00"))
          yield* opened(request(t, "two", "1.00"))
          yield* refunds.cancel(made)
          yield* refunds.cancel(made)
          assert.isUndefined(valueOf(yield* refunds.get(client, made.id)))
          assert.strictEqual(yield* refundedOf(t), 100n)
          assert.strictEqual(yield* countRefunds, 1)
          assert.deepStrictEqual(yield* eventTypes, [])
        })))
    })

    describe("get and list", () => {
      it.effect("get sees the client's own refunds only", () =>
        run(Effect.gen(function*() {
          const refunds = yield* RefundStore
          const { client, transfer: t } = yield* setUp()
          const made = yield* opened(request(t, "one", "1.00"))
          const b = yield* newClient("b")
          assert.isTrue(Option.isSome(yield* refunds.get(client, made.id)))
          assert.isUndefined(valueOf(yield* refunds.get(b, made.id)))
          assert.isUndefined(valueOf(yield* refunds.get(client, refundId("nosuch"))))
          const listed = yield* refunds.list(b, t.id, { limit: 10 })
          assert.deepStrictEqual([listed.data, listed.hasMore], [[], false])
        })))

      it.effect("a transfer's refunds, newest first by created then id, paged as transfers are", () =>
        run(Effect.gen(function*() {
          const refunds = yield* RefundStore
          const { client, transfer: t } = yield* setUp()
          const other = yield* recorded(client, "other")
          const made = [["a3", 100], ["a7", 100], ["b10", 200], ["b5", 200], ["b9", 200], ["c0", 300]] as const
          for (const [label, time] of made) yield* opened(request(t, label, "0.10"), at(time))
          yield* opened(request(other, "o1", "0.10"), at(250))
          const order = ["c0", "b9", "b5", "b10", "a7", "a3"].map(refundId)
          const all = yield* refunds.list(client, t.id, { limit: 100 })
          assert.deepStrictEqual(all.data.map((r) => r.id), order)
          assert.isFalse(all.hasMore)
          for (const r of all.data) assert.strictEqual(r.transferId, t.id)
          const exact = yield* refunds.list(client, t.id, { limit: 6 })
          assert.isFalse(exact.hasMore)
          const three = yield* refunds.list(client, t.id, { limit: 3 })
          assert.deepStrictEqual([three.data.map((r) => r.id), three.hasMore], [order.slice(0, 3), true])
          const after = yield* refunds.list(client, t.id, { limit: 2, startingAfter: refundId("b5") })
          assert.deepStrictEqual([after.data.map((r) => r.id), after.hasMore], [
            [refundId("b10"), refundId("a7")],
            true
          ])
          const afterLast = yield* refunds.list(client, t.id, { limit: 10, startingAfter: refundId("a3") })
          assert.deepStrictEqual([afterLast.data, afterLast.hasMore], [[], false])
          // A cursor of another transfer's refund is no cursor; the other transfer's refunds never appear.
          const foreign = yield* refunds.list(client, t.id, { limit: 10, startingAfter: refundId("o1") })
          for (const r of foreign.data) assert.strictEqual(r.transferId, t.id)
          const ofOther = yield* refunds.list(client, other.id, { limit: 10 })
          assert.deepStrictEqual(ofOther.data.map((r) => r.id), [refundId("o1")])
          // A walk a page at a time gives every refund once.
          for (const size of [1, 2, 4, 5]) {
            const walked: Array<RefundId> = []
            let cursor: RefundId | undefined
            while (true) {
              const page = yield* refunds.list(client, t.id, {
                limit: size,
                ...(cursor === undefined ? {} : { startingAfter: cursor })
              })
              walked.push(...page.data.map((r) => r.id))
              if (!page.hasMore) break
              cursor = page.data[page.data.length - 1]!.id
              assert.isAtMost(walked.length, 6)
            }
            assert.deepStrictEqual(walked, order, `page size ${size}`)
          }
        })))
    })

    describe("reconciliation", () => {
      const claimed = (now: number, pendingBefore: number, leaseUntil: number, limit = 10) =>
        Effect.flatMap(RefundStore, (store) => store.claimUnsettled(at(now), at(pendingBefore), at(leaseUntil), limit))
          .pipe(
            Effect.map((rows) =>
              rows.map((r) => [r.refund.id, r.refund.status, r.attempts] as const).sort(([a], [b]) =>
                a.localeCompare(b)
              )
            )
          )

      it.effect("claims unknown refunds at once, pending ones past the lease, each under a lease of its own", () =>
        run(Effect.gen(function*() {
          const refunds = yield* RefundStore
          const { transfer: t } = yield* setUp()
          const c1 = yield* opened(request(t, "c1", "1.00"), at(0))
          yield* refunds.settle(refundOutcomeUnknown(c1), "pending")
          yield* opened(request(t, "c2", "1.00"), at(1_000))
          yield* opened(request(t, "c3", "1.00"), at(20_000))
          const c4 = yield* opened(request(t, "c4", "1.00"), at(0))
          yield* refunds.settle(settledRefund(c4, { _tag: "Succeeded" }), "pending")
          assert.deepStrictEqual(yield* claimed(25_000, 15_000, 85_000), [
            [refundId("c1"), "unknown", 0],
            [refundId("c2"), "pending", 0]
          ])
          assert.deepStrictEqual(yield* claimed(26_000, 16_000, 86_000), [])
          yield* refunds.reconcileLater(refundId("c1"), 1, at(30_000))
          assert.deepStrictEqual(yield* claimed(29_999, 19_999, 89_999), [])
          assert.deepStrictEqual(yield* claimed(30_000, 20_000, 90_000), [
            [refundId("c1"), "unknown", 1],
            [refundId("c3"), "pending", 0]
          ])
          yield* refunds.settle(
            settledRefund(refundOutcomeUnknown(c1), { _tag: "Succeeded" }, at(30_001)),
            "unknown"
          )
          // A settled refund is reconciled no more, and reconcileLater leaves it alone.
          yield* refunds.reconcileLater(refundId("c1"), 2, at(0))
          assert.deepStrictEqual(yield* claimed(90_000, 80_000, 150_000), [
            [refundId("c2"), "pending", 0],
            [refundId("c3"), "pending", 0]
          ])
          assert.lengthOf(yield* claimed(150_000, 140_000, 210_000, 1), 1)
        })))

      it.effect("20 concurrent claims take each unsettled refund once", () =>
        run(Effect.gen(function*() {
          const refunds = yield* RefundStore
          const { transfer: t } = yield* setUp({ amount: 100_000n })
          for (let i = 0; i < 30; i++) {
            yield* refunds.settle(refundOutcomeUnknown(yield* opened(request(t, `many${i}`, "1.00"), at(i))), "pending")
          }
          const claims = yield* Effect.all(
            Array.from({ length: 20 }, () => claimed(60_000, 0, 120_000, 4)),
            { concurrency: "unbounded" }
          )
          const ids = claims.flat().map(([id]) => id)
          assert.strictEqual(ids.length, 30)
          assert.strictEqual(new Set(ids).size, 30)
        })))
    })

    describe("amounts", () => {
      it.effect("balances are net of the refunds that count: pending, unknown and succeeded", () =>
        run(Effect.gen(function*() {
          const refunds = yield* RefundStore
          const store = yield* TransferStore
          const { client, transfer: t } = yield* setUp()
          yield* recorded(client, "second", { amount: 500n })
          const balance = Effect.map(store.balance(client), (rows) => rows.map((r) => r.amount))
          assert.deepStrictEqual(yield* balance, [1500n])
          const one = yield* opened(request(t, "one", "3.00"))
          const two = yield* opened(request(t, "two", "2.00"))
          assert.deepStrictEqual(yield* balance, [1000n])
          yield* refunds.settle(settledRefund(one, { _tag: "Succeeded" }), "pending")
          yield* refunds.settle(refundOutcomeUnknown(two), "pending")
          assert.deepStrictEqual(yield* balance, [1000n])
          yield* refunds.settle(
            settledRefund(refundOutcomeUnknown(two), { _tag: "Failed", reason: "declined" }),
            "unknown"
          )
          assert.deepStrictEqual(yield* balance, [1200n])
        })))

      it.effect("a cancelled refund gives its amount back to the balance; racing refunds leave what they left", () =>
        run(Effect.gen(function*() {
          const refunds = yield* RefundStore
          const store = yield* TransferStore
          const { client, transfer: t } = yield* setUp()
          const balance = Effect.map(store.balance(client), (rows) => rows.map((r) => r.amount))
          const one = yield* opened(request(t, "cancelled", "4.00"))
          assert.deepStrictEqual(yield* balance, [600n])
          yield* refunds.cancel(one)
          yield* refunds.cancel(one)
          assert.deepStrictEqual(yield* balance, [1000n])
          const openings = yield* Effect.all(
            Array.from({ length: 20 }, (_, i) => open(request(t, `balance${i}`, `${(i % 3) + 1}.00`))),
            { concurrency: "unbounded" }
          )
          const made = openings.flatMap((o) => (o._tag === "Opened" ? [o.refund.amount] : []))
          assert.deepStrictEqual(yield* balance, [1000n - made.reduce((x, y) => x + y, 0n)])
        })))

      it.effect("20 refunds racing on one transfer never together exceed its amount", () =>
        run(Effect.gen(function*() {
          const { client, transfer: t } = yield* setUp()
          const openings = yield* Effect.all(
            Array.from({ length: 20 }, (_, i) => open(request(t, `race${i}`, `${(i % 5) + 1}.00`))),
            { concurrency: "unbounded" }
          )
          const made = openings.flatMap((o) => (o._tag === "Opened" ? [o.refund.amount] : []))
          const sum = made.reduce((x, y) => x + y, 0n)
          assert.isAtMost(Number(sum), 1000)
          assert.isAbove(made.length, 0)
          for (const o of openings) {
            if (o._tag === "Refused") assert.oneOf(o.reason._tag, ["AmountTooLarge", "TransferAlreadyRefunded"])
          }
          assert.strictEqual(yield* refundedOf(t), sum)
          assert.strictEqual(yield* countRefunds, made.length)
          const listed = yield* Effect.flatMap(RefundStore, (store) => store.list(client, t.id, { limit: 100 }))
          assert.strictEqual(listed.data.reduce((x, r) => x + r.amount, 0n), sum)
        })))
    })

    describe("card data", () => {
      it.effect("no refund, key or event holds a card-number-like run of 12 or more digits", () =>
        run(Effect.gen(function*() {
          const refunds = yield* RefundStore
          const raw = yield* RawRows
          const { transfer: t } = yield* setUp({ amount: 123_456_789n })
          const one = yield* opened(request(t, "one", "1234.56", { claim: claim("key-1") }))
          yield* refunds.settle(settledRefund(one, { _tag: "Succeeded" }), "pending")
          const two = yield* opened(request(t, "two", "12.34", { reason: "fraudulent" }))
          yield* refunds.settle(settledRefund(two, { _tag: "Failed", reason: "lost_or_stolen_card" }), "pending")
          for (const table of ["refunds", "idempotency_keys", "events"] as const) {
            const rows = yield* raw.rows(table)
            assert.isNotEmpty(rows, table)
            for (const row of rows) {
              for (const [column, value] of Object.entries(row)) {
                assert.notMatch(column, /pan|card_?number|cvc|cvv|authentication/i, `${table}.${column}`)
                // Times are milliseconds on SQLite and MariaDB (13 digits): checked as times, not as text.
                if (value === null || /(^|\.|_)(created_?at|started_?at|reconciled_?at|reconcile_?at)$/i.test(column)) {
                  continue
                }
                const text = value instanceof Uint8Array ? Buffer.from(value).toString("latin1") : String(value)
                assert.notMatch(text, /\d{12,}/, `${table}.${column} holds a long digit run: ${text}`)
              }
            }
          }
        })))
    })

    it.effect("refundDays counts and sums a client's refunds per UTC day, currency and status, in [from, before)", () =>
      run(Effect.gen(function*() {
        const refunds = yield* RefundStore
        const store = yield* TransferStore
        const Day = 86_400_000
        const day = Math.floor(T0 / Day)
        const noon = T0 - day * Day
        const startOf = (d: number) => DateTime.unsafeMake(d * Day)
        const { client, transfer: usd } = yield* setUp()
        const yen = yield* recorded(client, "tb", { currency: JPY, amount: 5000n })
        const other = yield* recorded(yield* newClient("b"), "tc")
        const r1 = yield* opened(request(usd, "r1", "1.00"), at(1000))
        const r2 = yield* opened(request(usd, "r2", "2.00"), at(2000))
        const r3 = yield* opened(request(usd, "r3", "0.50"), at(noon - 1))
        yield* opened(request(yen, "r4", "300"), at(noon))
        yield* opened(request(usd, "r5", "0.10"), at(-noon - 1))
        yield* opened(request(other, "r6", "1.00"), at(1000))
        yield* refunds.settle(settledRefund(r1, { _tag: "Succeeded" }), "pending")
        yield* refunds.settle(settledRefund(r2, { _tag: "Succeeded" }), "pending")
        yield* refunds.settle(settledRefund(r3, { _tag: "Failed", reason: "declined" }), "pending")
        const rows = [...yield* store.refundDays(client, startOf(day), startOf(day + 2))].sort((x, y) =>
          x.day - y.day || x.currency.localeCompare(y.currency) || x.status.localeCompare(y.status)
        )
        assert.deepStrictEqual(rows, [
          { day, currency: USD, status: "failed", count: 1, amount: 50n },
          { day, currency: USD, status: "succeeded", count: 2, amount: 300n },
          { day: day + 1, currency: JPY, status: "pending", count: 1, amount: 300n }
        ])
        assert.deepStrictEqual(yield* store.refundDays(client, startOf(day + 2), startOf(day + 3)), [])
      })))
  })
}
