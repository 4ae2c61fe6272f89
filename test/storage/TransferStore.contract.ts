// What every TransferStore must do, whatever storage is behind it (the core's store over each adapter's
// TransferStorage port). The checks use the port only, plus RawRows to count rows and read them as stored;
// `makeLayer` must give a new, migrated database each time. Every check runs on every implementation, the
// in-memory one included: its RawRows reads its tables (column names are then field paths).
import { assert, describe, it } from "@effect/vitest"
import { DateTime, Duration, Effect, Either, FastCheck as fc, type Layer, Option } from "effect"
import { CurrencyCode } from "../../core/payments/Currency.ts"
import {
  IdempotencyKey,
  IdempotencyLease,
  IdempotencyStart,
  KeptAnswer,
  type KeyClaim,
  RequestHash
} from "../../core/payments/Idempotency.ts"
import {
  ClientId,
  DuplicateReference,
  Reference,
  Transfer,
  TransferId,
  type TransferStatus
} from "../../core/payments/Transfer.ts"
import { randomId } from "../../core/payments/Transfers.ts"
import type { TransferQuery } from "../../core/payments/TransferStorage.ts"
import { TransferStore } from "../../core/payments/TransferStore.ts"
import { count, RawRows } from "./RawRows.ts"

const T0 = Date.UTC(2025, 0, 15, 12, 0, 0)
const at = (ms: number) => DateTime.unsafeMake(T0 + ms)
const t0 = at(0)
const ms = DateTime.toEpochMillis
// chai's deep equality treats every Option as equal to every other (their fields live on prototypes), so
// Options are compared through their values.
const valueOf = <A>(option: Option.Option<A>): A | undefined => Option.getOrUndefined(option)

// Ids from a label of at most 24 letters and digits, padded with "x" (never with digits: the card-data check
// below looks for long digit runs).
const padded = (prefix: string, label: string) => {
  assert.match(label, /^[0-9A-Za-z]{1,24}$/)
  return `${prefix}${label.padEnd(24, "x")}`
}
const clientId = (label: string) => ClientId.make(padded("cl_", label))
const transferId = (label: string) => TransferId.make(padded("tr_", label))
const ref = (label: string) => Reference.make(`ref-${label}`)

const USD = CurrencyCode.make("USD")
const EUR = CurrencyCode.make("EUR")
const JPY = CurrencyCode.make("JPY")

type TransferFields = ConstructorParameters<typeof Transfer>[0]

const base = (client: ClientId, label: string) => ({
  id: transferId(label),
  clientId: client,
  reference: ref(label),
  amount: 1234n,
  currency: USD,
  sender: {
    first_name: "Ann",
    middle_name: "Marie",
    email: "ann@example.com",
    card: { brand: "visa" as const, last4: "4242", exp_month: 12, exp_year: 2030, fingerprint: "fp-ann-visa" }
  },
  recipient: { first_name: "Bob", middle_name: "Quincy", email: "bob@example.com", merchant_id: "merchant-a" },
  createdAt: t0
})

const approved = (client: ClientId, label: string, overrides: Partial<TransferFields> = {}) =>
  new Transfer({ ...base(client, label), status: "approved", authorizationCode: `AUTH${label}`, ...overrides })

const declined = (client: ClientId, label: string, overrides: Partial<TransferFields> = {}) =>
  new Transfer({
    ...base(client, label),
    status: "declined",
    failure: { code: "card_declined", decline_code: "do_not_honor" },
    ...overrides
  })

// Every field of a transfer as plain data: own keys only, so an absent optional field and one set to
// undefined differ.
const plain = (t: Transfer) => ({ ...t, createdAt: ms(t.createdAt) })

const countTransfers = (where: { readonly client?: ClientId; readonly reference?: Reference } = {}) =>
  count("transfers", where)

const countIdempotencyKeys = count("idempotency_keys")

const pending = (client: ClientId, label: string, overrides: Partial<TransferFields> = {}) =>
  new Transfer({ ...base(client, label), status: "pending", ...overrides })
const unknownOf = (client: ClientId, label: string, amount: bigint) =>
  new Transfer({ ...base(client, label), status: "unknown", amount })

// Records a transfer that is already final, answering it.
const record = (t: Transfer) => Effect.flatMap(TransferStore, (store) => Effect.as(store.record(t), t))

const claim = (key: string, hash = "hash-one", requestId = "req-1"): KeyClaim => ({
  key: IdempotencyKey.make(key),
  requestHash: RequestHash.make(hash),
  requestId
})
const Started = IdempotencyStart.Started()
const InProgress = IdempotencyStart.InProgress()
const Mismatch = IdempotencyStart.Mismatch()
const made = (t: Transfer, requestId = "req-1") =>
  IdempotencyStart.Replay({ answer: KeptAnswer.TransferMade({ transferId: t.id }), requestId })

export const transferStoreContract = (
  name: string,
  makeLayer: () => Layer.Layer<TransferStore | RawRows, unknown>
): void => {
  describe(`TransferStore contract: ${name}`, () => {
    const run = <A, E>(self: Effect.Effect<A, E, TransferStore | RawRows>) => Effect.provide(self, makeLayer())

    // Creates an API client whose key hash is "hash-<label>".
    const newClient = (label: string, now = t0) =>
      Effect.gen(function*() {
        const store = yield* TransferStore
        const id = clientId(label)
        yield* store.createClient({ id, name: `Client ${label}` }, `hash-${label}`, now)
        return id
      })

    describe("clients", () => {
      it.effect("a fresh database has no clients; createClient makes one findable by its key hash only", () =>
        run(Effect.gen(function*() {
          const store = yield* TransferStore
          assert.isFalse(yield* store.hasClients)
          assert.isUndefined(valueOf(yield* store.clientByKeyHash("hash-shop")))
          const shop = clientId("shop")
          yield* store.createClient({ id: shop, name: "Zoë's Shop — ünïcode" }, "hash-shop", t0)
          assert.isTrue(yield* store.hasClients)
          assert.deepStrictEqual(valueOf(yield* store.clientByKeyHash("hash-shop")), {
            id: shop,
            name: "Zoë's Shop — ünïcode"
          })
          // The hash matches exactly: no prefix, no case folding.
          assert.isUndefined(valueOf(yield* store.clientByKeyHash("HASH-SHOP")))
          assert.isUndefined(valueOf(yield* store.clientByKeyHash("hash-sho")))
          assert.isUndefined(valueOf(yield* store.clientByKeyHash("")))
        })))

      it.effect("each key hash finds its own client", () =>
        run(Effect.gen(function*() {
          const store = yield* TransferStore
          const a = yield* newClient("a")
          const b = yield* newClient("b", at(1000))
          assert.isTrue(yield* store.hasClients)
          assert.deepStrictEqual(valueOf(yield* store.clientByKeyHash("hash-a")), { id: a, name: "Client a" })
          assert.deepStrictEqual(valueOf(yield* store.clientByKeyHash("hash-b")), { id: b, name: "Client b" })
        })))
    })

    describe("record and get", () => {
      it.effect("an approved transfer with middle names and an authorization code round-trips every field", () =>
        run(Effect.gen(function*() {
          const store = yield* TransferStore
          const client = yield* newClient("a")
          const transfer = approved(client, "one", {
            amount: 9_007_199_254_740_991n, // 2^53 - 1: the largest amount a JS number still holds exactly
            currency: JPY,
            sender: {
              first_name: "Zoë",
              middle_name: "Ünïcode Ø",
              email: "zoe+tag@example.co.uk",
              card: { brand: "mastercard", last4: "0004", exp_month: 1, exp_year: 2031, fingerprint: "fp/+=_abc" }
            },
            recipient: { first_name: "李", middle_name: "小龙", email: "li@example.cn", merchant_id: "m.1:x-y_z" },
            authorizationCode: "A1B2C3",
            createdAt: at(123)
          })
          const recorded = yield* record(transfer)
          assert.deepStrictEqual(plain(recorded), plain(transfer))
          const got = yield* store.get(client, transfer.id)
          assert.isTrue(Option.isSome(got))
          const stored = Option.getOrThrow(got)
          assert.instanceOf(stored, Transfer)
          assert.strictEqual(typeof stored.amount, "bigint")
          assert.deepStrictEqual(plain(stored), plain(transfer))
          assert.strictEqual(stored.amount, 9_007_199_254_740_991n)
          assert.strictEqual(ms(stored.createdAt), T0 + 123)
          assert.isFalse("failure" in stored)
          assert.deepStrictEqual(
            valueOf(Option.map(yield* store.byReference(client, transfer.reference), plain)),
            plain(transfer)
          )
          assert.strictEqual(yield* countTransfers(), 1)
        })))

      it.effect("a declined transfer without middle names round-trips its failure code and decline code", () =>
        run(Effect.gen(function*() {
          const store = yield* TransferStore
          const client = yield* newClient("a")
          const transfer = declined(client, "two", {
            amount: 1n,
            currency: EUR,
            sender: {
              first_name: "Ann",
              email: "ann@example.com",
              card: { brand: "amex", last4: "0005", exp_month: 7, exp_year: 2027, fingerprint: "fp-amex" }
            },
            recipient: { first_name: "Bob", email: "bob@example.com", merchant_id: "merchant-b" },
            failure: { code: "insufficient_funds", decline_code: "do_not_honor" },
            createdAt: at(999)
          })
          yield* store.record(transfer)
          const stored = Option.getOrThrow(yield* store.get(client, transfer.id))
          assert.deepStrictEqual(plain(stored), plain(transfer))
          assert.strictEqual(stored.status, "declined")
          assert.deepStrictEqual(stored.failure, { code: "insufficient_funds", decline_code: "do_not_honor" })
          assert.isFalse("middle_name" in stored.sender, "sender.middle_name came back although none was stored")
          assert.isFalse("middle_name" in stored.recipient, "recipient.middle_name came back although none was stored")
          assert.isFalse("authorizationCode" in stored)
        })))

      it.effect("a declined transfer with a failure code only has no decline_code", () =>
        run(Effect.gen(function*() {
          const store = yield* TransferStore
          const client = yield* newClient("a")
          const transfer = declined(client, "three", { failure: { code: "expired_card" } })
          yield* store.record(transfer)
          const stored = Option.getOrThrow(yield* store.get(client, transfer.id))
          assert.deepStrictEqual(plain(stored), plain(transfer))
          assert.deepStrictEqual(stored.failure, { code: "expired_card" })
          assert.isFalse("decline_code" in stored.failure!)
        })))

      // SQLite drivers read an INTEGER column as a JS number, exact only up to 2^53: the adapter must not let
      // the amount pass through one.
      it.effect("amounts above 2^53 come back exactly from get, byReference and list", () =>
        run(Effect.gen(function*() {
          const store = yield* TransferStore
          const client = yield* newClient("a")
          const amounts = [9_007_199_254_740_993n, 2n ** 63n - 1n]
          for (const [i, amount] of amounts.entries()) {
            yield* store.record(approved(client, `big${i}`, { amount, createdAt: at(i) }))
          }
          for (const [i, amount] of amounts.entries()) {
            assert.strictEqual(Option.getOrThrow(yield* store.get(client, transferId(`big${i}`))).amount, amount)
            assert.strictEqual(Option.getOrThrow(yield* store.byReference(client, ref(`big${i}`))).amount, amount)
          }
          const listed = yield* store.list(client, { limit: 10 })
          assert.deepStrictEqual(listed.data.map((t) => t.amount), [...amounts].reverse())
        })))

      it.effect("get and byReference see only the client's own transfers", () =>
        run(Effect.gen(function*() {
          const store = yield* TransferStore
          const a = yield* newClient("a")
          const b = yield* newClient("b")
          const transfer = yield* record(approved(a, "mine"))
          assert.isTrue(Option.isSome(yield* store.get(a, transfer.id)))
          assert.isUndefined(valueOf(yield* store.get(b, transfer.id)))
          assert.isUndefined(valueOf(yield* store.byReference(b, transfer.reference)))
          assert.isUndefined(valueOf(yield* store.get(a, transferId("nosuch"))))
          assert.isUndefined(valueOf(yield* store.byReference(a, ref("nosuch"))))
        })))
    })

    describe("references", () => {
      it.effect("a second transfer with the same reference fails with DuplicateReference naming the first", () =>
        run(Effect.gen(function*() {
          const store = yield* TransferStore
          const client = yield* newClient("a")
          const first = yield* record(approved(client, "first", { reference: ref("shared") }))
          const error = yield* Effect.flip(
            store.record(declined(client, "second", { reference: ref("shared"), createdAt: at(1000) }))
          )
          assert.instanceOf(error, DuplicateReference)
          assert.strictEqual(error._tag, "DuplicateReference")
          assert.strictEqual(error.existing, first.id)
          assert.strictEqual(yield* countTransfers(), 1)
          assert.isUndefined(valueOf(yield* store.get(client, transferId("second"))))
          // The first transfer is untouched.
          assert.deepStrictEqual(
            valueOf(Option.map(yield* store.byReference(client, ref("shared")), plain)),
            plain(first)
          )
        })))

      it.effect("the same reference for another client is another transfer", () =>
        run(Effect.gen(function*() {
          const store = yield* TransferStore
          const a = yield* newClient("a")
          const b = yield* newClient("b")
          yield* store.record(approved(a, "ofa", { reference: ref("shared") }))
          yield* store.record(approved(b, "ofb", { reference: ref("shared") }))
          assert.strictEqual(yield* countTransfers(), 2)
          assert.strictEqual(Option.getOrThrow(yield* store.byReference(a, ref("shared"))).id, transferId("ofa"))
          assert.strictEqual(Option.getOrThrow(yield* store.byReference(b, ref("shared"))).id, transferId("ofb"))
        })))

      it.effect("20 concurrent records with one reference: one succeeds, 19 name it as the duplicate, one row", () =>
        run(Effect.gen(function*() {
          const store = yield* TransferStore
          const client = yield* newClient("a")
          const results = yield* Effect.all(
            Array.from(
              { length: 20 },
              (_, i) => Effect.either(record(approved(client, `race${i}`, { reference: ref("race") })))
            ),
            { concurrency: "unbounded" }
          )
          const winners = results.filter(Either.isRight).map((r) => r.right.id)
          assert.lengthOf(winners, 1)
          const losers = results.filter(Either.isLeft).map((r) => r.left)
          assert.lengthOf(losers, 19)
          for (const loser of losers) {
            assert.strictEqual(loser._tag, "DuplicateReference")
            assert.strictEqual(loser.existing, winners[0])
          }
          assert.strictEqual(yield* countTransfers({ reference: ref("race") }), 1)
          assert.strictEqual(Option.getOrThrow(yield* store.byReference(client, ref("race"))).id, winners[0])
        })))
    })

    describe("reserve, settle and cancel", () => {
      it.effect("a reservation is pending until settled; a cancelled one frees its reference", () =>
        run(Effect.gen(function*() {
          const store = yield* TransferStore
          const client = yield* newClient("a")
          assert.deepStrictEqual(yield* store.reserve(pending(client, "one")), Started)
          assert.strictEqual(Option.getOrThrow(yield* store.get(client, transferId("one"))).status, "pending")
          const error = yield* Effect.flip(store.reserve(pending(client, "two", { reference: ref("one") })))
          assert.strictEqual(error.existing, transferId("one"))
          yield* store.settle(declined(client, "one", { failure: { code: "insufficient_funds" } }))
          const settled = Option.getOrThrow(yield* store.get(client, transferId("one")))
          assert.deepStrictEqual(
            plain(settled),
            plain(declined(client, "one", { failure: { code: "insufficient_funds" } }))
          )
          // A settled transfer is not cancelled, nor settled again.
          yield* store.cancel(settled)
          yield* store.settle(approved(client, "one"))
          assert.strictEqual(Option.getOrThrow(yield* store.get(client, transferId("one"))).status, "declined")
          yield* store.reserve(pending(client, "three"))
          yield* store.cancel(pending(client, "three"))
          assert.isUndefined(valueOf(yield* store.get(client, transferId("three"))))
          assert.deepStrictEqual(yield* store.reserve(pending(client, "four", { reference: ref("three") })), Started)
        })))
    })

    describe("unknown outcomes and reconciliation", () => {
      const unknown = (client: ClientId, label: string, overrides: Partial<TransferFields> = {}) =>
        pending(client, label, { status: "unknown", ...overrides })
      const claimed = (now: number, pendingBefore: number, leaseUntil: number, limit = 10) =>
        Effect.flatMap(
          TransferStore,
          (store) => store.claimUnsettled(at(now), at(pendingBefore), at(leaseUntil), limit)
        ).pipe(
          // In no particular order (UPDATE ... RETURNING on PostgreSQL).
          Effect.map((rows) =>
            rows.map((r) => [r.transfer.id, r.transfer.status, r.attempts] as const).sort(([a], [b]) =>
              a.localeCompare(b)
            )
          )
        )

      it.effect("pending -> unknown -> reconciled once; only approved counts in the balance; fields round-trip", () =>
        run(Effect.gen(function*() {
          const store = yield* TransferStore
          const client = yield* newClient("a")
          yield* store.reserve(pending(client, "u1", { requestHash: "hash-u1" }))
          yield* store.settle(unknown(client, "u1", { requestHash: "hash-u1" }))
          const shown = Option.getOrThrow(yield* store.get(client, transferId("u1")))
          assert.strictEqual(shown.status, "unknown")
          assert.strictEqual(shown.requestHash, "hash-u1")
          assert.isUndefined(shown.reconciledAt)
          assert.deepStrictEqual(yield* store.balance(client), [])
          const final = approved(client, "u1", { requestHash: "hash-u1", reconciledAt: at(5_000) })
          yield* store.settle(final)
          assert.deepStrictEqual(plain(Option.getOrThrow(yield* store.get(client, transferId("u1")))), {
            ...plain(final),
            reconciledAt: at(5_000)
          })
          // A second reconciler, or a late request, changes nothing.
          yield* store.settle(declined(client, "u1", { reconciledAt: at(6_000) }))
          yield* store.settle(unknown(client, "u1"))
          assert.strictEqual(Option.getOrThrow(yield* store.get(client, transferId("u1"))).status, "approved")
          yield* store.reserve(pending(client, "u2"))
          yield* store.settle(unknown(client, "u2"))
          assert.deepStrictEqual(yield* store.balance(client), [{
            merchantId: "merchant-a",
            currency: USD,
            amount: 1234n
          }])
        })))

      it.effect("an unknown or reconciled transfer answers the unanswered keys of its request hash", () =>
        run(Effect.gen(function*() {
          const store = yield* TransferStore
          const client = yield* newClient("a")
          assert.deepStrictEqual(
            yield* store.reserve(pending(client, "k1", { requestHash: "hash-one" }), claim("key-1")),
            Started
          )
          // Another client's key with the same hash is not answered.
          const other = yield* newClient("b")
          yield* store.reserve(pending(other, "k2", { requestHash: "hash-one" }), claim("key-1"))
          yield* store.settle(unknown(client, "k1", { requestHash: "hash-one" }))
          assert.deepStrictEqual(
            yield* store.reserve(pending(client, "k3", { createdAt: at(1) }), claim("key-1", "hash-one", "req-3")),
            made(pending(client, "k1"))
          )
          assert.deepStrictEqual(
            yield* store.reserve(pending(other, "k4", { createdAt: at(1) }), claim("key-1", "hash-one", "req-3")),
            InProgress
          )
          // An approval by the request itself (not reconciled) answers no other key.
          yield* store.reserve(pending(client, "k5", { requestHash: "hash-five" }), claim("key-5", "hash-five"))
          yield* store.settle(approved(client, "k5", { requestHash: "hash-five" }))
          assert.deepStrictEqual(
            yield* store.reserve(pending(client, "k6", { createdAt: at(2) }), claim("key-5", "hash-five")),
            InProgress
          )
        })))

      it.effect("claims unknown transfers at once, pending ones past the lease, each under a lease of its own", () =>
        run(Effect.gen(function*() {
          const store = yield* TransferStore
          const client = yield* newClient("a")
          yield* store.reserve(pending(client, "c1"))
          yield* store.settle(unknown(client, "c1"))
          yield* store.reserve(pending(client, "c2", { createdAt: at(1_000) }))
          yield* store.reserve(pending(client, "c3", { createdAt: at(20_000) }))
          yield* store.record(approved(client, "c4"))
          // At 25 s with a 10 s pending lease: c1 (unknown) and c2 (pending since 1 s); not c3, not c4.
          assert.deepStrictEqual(yield* claimed(25_000, 15_000, 85_000), [
            [transferId("c1"), "unknown", 0],
            [transferId("c2"), "pending", 0]
          ])
          // Leased: nobody else gets them until 85 s.
          assert.deepStrictEqual(yield* claimed(26_000, 16_000, 86_000), [])
          yield* store.reconcileLater(transferId("c1"), 1, at(30_000))
          assert.deepStrictEqual(yield* claimed(29_999, 19_999, 89_999), [])
          assert.deepStrictEqual(yield* claimed(30_000, 20_000, 90_000), [
            [transferId("c1"), "unknown", 1],
            [transferId("c3"), "pending", 0]
          ])
          yield* store.settle(declined(client, "c1", { reconciledAt: at(30_001) }))
          assert.deepStrictEqual(yield* claimed(90_000, 80_000, 150_000), [
            [transferId("c2"), "pending", 0],
            [transferId("c3"), "pending", 0]
          ])
          // The limit holds.
          assert.lengthOf(yield* claimed(150_000, 140_000, 210_000, 1), 1)
        })))

      it.effect("20 concurrent claims take each unsettled transfer once", () =>
        run(Effect.gen(function*() {
          const store = yield* TransferStore
          const client = yield* newClient("a")
          for (let i = 0; i < 30; i++) {
            yield* store.reserve(pending(client, `many${i}`, { createdAt: at(i) }))
            yield* store.settle(unknown(client, `many${i}`, { createdAt: at(i) }))
          }
          const claims = yield* Effect.all(
            Array.from({ length: 20 }, () => claimed(60_000, 0, 120_000, 4)),
            { concurrency: "unbounded" }
          )
          const ids = claims.flat().map(([id]) => id)
          assert.strictEqual(ids.length, 30)
          assert.strictEqual(new Set(ids).size, 30)
        })))

      it.effect("prunes keys started before a time, a batch at a time; an expired key runs as new", () =>
        run(Effect.gen(function*() {
          const store = yield* TransferStore
          const client = yield* newClient("a")
          for (let i = 0; i < 5; i++) {
            yield* store.record(declined(client, `old${i}`, { createdAt: at(i) }), claim(`old-${i}`))
          }
          yield* store.record(declined(client, "new0", { createdAt: at(10_000) }), claim("new-0"))
          assert.strictEqual(yield* store.pruneKeys(at(10_000), 2), 2)
          assert.strictEqual(yield* store.pruneKeys(at(10_000), 2), 2)
          assert.strictEqual(yield* store.pruneKeys(at(10_000), 2), 1)
          assert.strictEqual(yield* store.pruneKeys(at(10_000), 2), 0)
          assert.strictEqual(yield* countIdempotencyKeys, 1)
          // Not pruned yet, but past 24 h: the key is no key, whatever it kept.
          const dayLater = DateTime.addDuration(at(10_000), Duration.hours(24))
          assert.deepStrictEqual(
            yield* store.reserve(pending(client, "new1", { createdAt: dayLater }), claim("new-0", "hash-two")),
            Started
          )
          assert.strictEqual(Option.getOrThrow(yield* store.get(client, transferId("new1"))).status, "pending")
          yield* store.settle(approved(client, "new1", { createdAt: dayLater }), claim("new-0").key)
          assert.deepStrictEqual(
            yield* store.reserve(
              pending(client, "new2", { createdAt: DateTime.addDuration(dayLater, Duration.seconds(1)) }),
              claim("new-0", "hash-two")
            ),
            made(approved(client, "new1"))
          )
        })))
    })

    describe("idempotency", () => {
      it.effect("Started, then InProgress while running, Mismatch for another hash, Replay once settled", () =>
        run(Effect.gen(function*() {
          const store = yield* TransferStore
          const client = yield* newClient("a")
          assert.deepStrictEqual(yield* store.reserve(pending(client, "p1"), claim("key-1")), Started)
          // Anything but Started writes no transfer.
          assert.deepStrictEqual(
            yield* store.reserve(pending(client, "p2", { createdAt: at(1) }), claim("key-1", "hash-one", "req-2")),
            InProgress
          )
          assert.deepStrictEqual(
            yield* store.record(declined(client, "p3", { createdAt: at(2) }), claim("key-1", "hash-two")),
            Mismatch
          )
          assert.strictEqual(yield* countTransfers(), 1)
          yield* store.settle(approved(client, "p1"), claim("key-1").key)
          const replay = made(approved(client, "p1"))
          assert.deepStrictEqual(
            yield* store.reserve(pending(client, "p4", { createdAt: at(3) }), claim("key-1", "hash-one", "req-4")),
            replay
          )
          assert.deepStrictEqual(
            yield* store.reserve(pending(client, "p5", { createdAt: at(4) }), claim("key-1", "hash-two")),
            Mismatch
          )
          // An answered key is never released, nor answered again.
          yield* store.release(client, claim("key-1").key)
          yield* store.keep(client, claim("key-1").key, KeptAnswer.ReferenceTaken({ existing: transferId("other") }))
          assert.deepStrictEqual(
            yield* store.record(declined(client, "p6", { createdAt: at(5) }), claim("key-1")),
            replay
          )
          // Long after, still the same answer: an answered key is not taken over.
          const later = DateTime.addDuration(t0, Duration.times(IdempotencyLease, 10))
          assert.deepStrictEqual(
            yield* store.reserve(pending(client, "p7", { createdAt: later }), claim("key-1")),
            replay
          )
          assert.strictEqual(yield* countIdempotencyKeys, 1)
          assert.strictEqual(yield* countTransfers(), 1)
        })))

      it.effect("keyRecord reads a key as stored: none, started with its hash and request id, then answered", () =>
        run(Effect.gen(function*() {
          const store = yield* TransferStore
          const client = yield* newClient("a")
          const other = yield* newClient("b")
          const key = claim("key-1").key
          assert.isTrue(Option.isNone(yield* store.keyRecord(client, key)))
          yield* store.reserve(pending(client, "r1", { createdAt: at(5) }), claim("key-1", "hash-one", "req-7"))
          const started = valueOf(yield* store.keyRecord(client, key))
          assert.deepStrictEqual(
            started && { ...started, startedAt: ms(started.startedAt) },
            { requestHash: RequestHash.make("hash-one"), requestId: "req-7", startedAt: ms(at(5)), answer: undefined }
          )
          // Keys are per client.
          assert.isTrue(Option.isNone(yield* store.keyRecord(other, key)))
          yield* store.settle(approved(client, "r1"), key)
          assert.deepStrictEqual(
            valueOf(yield* store.keyRecord(client, key))?.answer,
            KeptAnswer.TransferMade({ transferId: transferId("r1") })
          )
        })))

      it.effect("a released key starts again, with the same or another hash", () =>
        run(Effect.gen(function*() {
          const store = yield* TransferStore
          const client = yield* newClient("a")
          const key = claim("key-1").key
          assert.deepStrictEqual(yield* store.reserve(pending(client, "p1"), claim("key-1")), Started)
          yield* store.release(client, key)
          assert.deepStrictEqual(
            yield* store.reserve(pending(client, "p2", { createdAt: at(1) }), claim("key-1")),
            Started
          )
          assert.deepStrictEqual(
            yield* store.reserve(pending(client, "p3", { createdAt: at(2) }), claim("key-1")),
            InProgress
          )
          yield* store.release(client, key)
          assert.deepStrictEqual(
            yield* store.reserve(pending(client, "p4", { createdAt: at(3) }), claim("key-1", "hash-two")),
            Started
          )
          assert.deepStrictEqual(
            yield* store.reserve(pending(client, "p5", { createdAt: at(4) }), claim("key-1")),
            Mismatch
          )
        })))

      it.effect("a running key older than the lease is taken over; the takeover renews the lease and request id", () =>
        run(Effect.gen(function*() {
          const store = yield* TransferStore
          const client = yield* newClient("a")
          const lease = Duration.toMillis(IdempotencyLease)
          const attempt = (label: string, ms: number, requestId = "req-1") =>
            store.reserve(pending(client, label, { createdAt: at(ms) }), claim("key-1", "hash-one", requestId))
          assert.deepStrictEqual(yield* attempt("p1", 0), Started)
          assert.deepStrictEqual(yield* attempt("p2", lease - 1), InProgress)
          assert.deepStrictEqual(yield* attempt("p3", lease, "req-3"), Started)
          assert.deepStrictEqual(yield* attempt("p4", lease + 1), InProgress)
          assert.deepStrictEqual(yield* attempt("p5", 2 * lease - 1), InProgress)
          assert.deepStrictEqual(yield* attempt("p6", 2 * lease, "req-6"), Started)
          // The answer after a takeover is replayed with the request id of the request that took it over.
          yield* store.settle(approved(client, "p6", { createdAt: at(2 * lease) }), claim("key-1").key)
          assert.deepStrictEqual(yield* attempt("p7", 2 * lease + 1), made(approved(client, "p6"), "req-6"))
          assert.strictEqual(yield* countIdempotencyKeys, 1)
        })))

      it.effect("keys are per client", () =>
        run(Effect.gen(function*() {
          const store = yield* TransferStore
          const a = yield* newClient("a")
          const b = yield* newClient("b")
          const key = claim("shared-key").key
          assert.deepStrictEqual(yield* store.reserve(pending(a, "a1"), claim("shared-key")), Started)
          // Neither InProgress nor Mismatch: another client's key is another key.
          assert.deepStrictEqual(
            yield* store.reserve(pending(b, "b1"), claim("shared-key", "hash-two", "req-b")),
            Started
          )
          yield* store.settle(approved(a, "a1"), key)
          assert.deepStrictEqual(
            yield* store.reserve(pending(a, "a2", { createdAt: at(1) }), claim("shared-key")),
            made(approved(a, "a1"))
          )
          assert.deepStrictEqual(
            yield* store.reserve(pending(b, "b2", { createdAt: at(1) }), claim("shared-key", "hash-two")),
            InProgress
          )
          yield* store.release(b, key)
          assert.deepStrictEqual(
            yield* store.reserve(pending(a, "a3", { createdAt: at(2) }), claim("shared-key")),
            made(approved(a, "a1"))
          )
          assert.deepStrictEqual(
            yield* store.reserve(pending(b, "b3", { createdAt: at(2) }), claim("shared-key", "hash-one", "req-b3")),
            Started
          )
          // b answering its key leaves a's answer alone.
          yield* store.keep(b, key, KeptAnswer.ReferenceTaken({ existing: transferId("a1") }))
          assert.deepStrictEqual(
            yield* store.reserve(pending(a, "a4", { createdAt: at(3) }), claim("shared-key")),
            made(approved(a, "a1"))
          )
          assert.deepStrictEqual(
            yield* store.reserve(pending(b, "b4", { createdAt: at(3) }), claim("shared-key")),
            IdempotencyStart.Replay({
              answer: KeptAnswer.ReferenceTaken({ existing: transferId("a1") }),
              requestId: "req-b3"
            })
          )
        })))

      it.effect("20 concurrent reservations with one key and one hash: exactly one Started, one transfer", () =>
        run(Effect.gen(function*() {
          const store = yield* TransferStore
          const client = yield* newClient("a")
          const results = yield* Effect.all(
            Array.from({ length: 20 }, (_, i) => store.reserve(pending(client, `p${i}`), claim("key-1"))),
            { concurrency: "unbounded" }
          )
          assert.strictEqual(results.filter((r) => r._tag === "Started").length, 1)
          assert.strictEqual(results.filter((r) => r._tag === "InProgress").length, 19)
          assert.strictEqual(yield* countIdempotencyKeys, 1)
          assert.strictEqual(yield* countTransfers(), 1)
        })))

      it.effect("20 concurrent takeovers of one expired key: exactly one Started", () =>
        run(Effect.gen(function*() {
          const store = yield* TransferStore
          const client = yield* newClient("a")
          assert.deepStrictEqual(yield* store.reserve(pending(client, "first"), claim("key-1")), Started)
          const expired = DateTime.addDuration(t0, IdempotencyLease)
          const results = yield* Effect.all(
            Array.from(
              { length: 20 },
              (_, i) => store.reserve(pending(client, `p${i}`, { createdAt: expired }), claim("key-1"))
            ),
            { concurrency: "unbounded" }
          )
          assert.strictEqual(results.filter((r) => r._tag === "Started").length, 1)
          assert.strictEqual(results.filter((r) => r._tag === "InProgress").length, 19)
        })))

      for (const [kind, make] of [["approved", approved], ["declined", declined]] as const) {
        it.effect(`record with a claim keeps the transfer as the key's answer in the same write (${kind})`, () =>
          run(Effect.gen(function*() {
            const store = yield* TransferStore
            const client = yield* newClient("a")
            const transfer = make(client, "one", { createdAt: at(10) })
            assert.deepStrictEqual(yield* store.record(transfer, claim("key-1")), Started)
            assert.deepStrictEqual(
              yield* store.record(make(client, "two", { createdAt: at(20) }), claim("key-1", "hash-one", "req-2")),
              made(transfer)
            )
            assert.deepStrictEqual(
              yield* store.record(make(client, "three", { createdAt: at(20) }), claim("key-1", "hash-two")),
              Mismatch
            )
            assert.strictEqual(yield* countTransfers(), 1)
          })))
      }

      for (const write of ["record", "reserve"] as const) {
        it.effect(`a ${write} whose reference is taken leaves its key started, for the caller to answer`, () =>
          run(Effect.gen(function*() {
            const store = yield* TransferStore
            const client = yield* newClient("a")
            const first = yield* record(approved(client, "first", { reference: ref("shared") }))
            const second = write === "record"
              ? approved(client, "second", { reference: ref("shared") })
              : pending(client, "second", { reference: ref("shared") })
            const error = yield* Effect.flip(store[write](second, claim("key-2", "hash-one", "req-2")))
            assert.strictEqual(error.existing, first.id)
            assert.deepStrictEqual(
              yield* store.reserve(pending(client, "third", { createdAt: at(1) }), claim("key-2")),
              InProgress
            )
            assert.strictEqual(yield* countTransfers(), 1)
            const taken = KeptAnswer.ReferenceTaken({ existing: first.id })
            yield* store.keep(client, claim("key-2").key, taken)
            assert.deepStrictEqual(
              yield* store.reserve(pending(client, "fourth", { createdAt: at(2) }), claim("key-2")),
              IdempotencyStart.Replay({ answer: taken, requestId: "req-2" })
            )
          })))
      }
    })

    describe("list", () => {
      // Ids of lower-case letters and digits sort the same under every collation, so the expected order
      // does not depend on the database's.
      const listed = [
        ["c0", 300],
        ["b9", 200],
        ["b5", 200],
        ["b10", 200],
        ["a7", 100],
        ["a3", 100]
      ] as const

      it.effect("newest first by created then id; limit and has_more", () =>
        run(Effect.gen(function*() {
          const store = yield* TransferStore
          const client = yield* newClient("a")
          // Recorded in an order unrelated to the listing.
          for (const [label, time] of [...listed].sort(([a], [b]) => a.localeCompare(b))) {
            yield* store.record(approved(client, label, { createdAt: at(time) }))
          }
          const all = yield* store.list(client, { limit: 100 })
          assert.deepStrictEqual(all.data.map((t) => t.id), listed.map(([label]) => transferId(label)))
          assert.isFalse(all.hasMore)
          assert.deepStrictEqual(
            all.data.map(plain),
            listed.map(([label, time]) => plain(approved(client, label, { createdAt: at(time) })))
          )
          const exact = yield* store.list(client, { limit: listed.length })
          assert.lengthOf(exact.data, listed.length)
          assert.isFalse(exact.hasMore)
          const three = yield* store.list(client, { limit: 3 })
          assert.deepStrictEqual(three.data.map((t) => t.id), listed.slice(0, 3).map(([label]) => transferId(label)))
          assert.isTrue(three.hasMore)
          const afterThird = yield* store.list(client, { limit: 2, startingAfter: transferId("b5") })
          assert.deepStrictEqual(afterThird.data.map((t) => t.id), [transferId("b10"), transferId("a7")])
          assert.isTrue(afterThird.hasMore)
          const afterLast = yield* store.list(client, { limit: 10, startingAfter: transferId("a3") })
          assert.deepStrictEqual(afterLast.data, [])
          assert.isFalse(afterLast.hasMore)
          const empty = yield* store.list(yield* newClient("b"), { limit: 10 })
          assert.deepStrictEqual(empty.data, [])
          assert.isFalse(empty.hasMore)
        })))

      it.effect("a cursor walk yields every transfer exactly once, even when many share a millisecond", () =>
        run(Effect.gen(function*() {
          const store = yield* TransferStore
          const a = yield* newClient("a")
          const b = yield* newClient("b")
          // 30 transfers of a (random mixed-case ids) over three milliseconds, and b's in the same milliseconds.
          const ids = new Set<TransferId>()
          for (let i = 0; i < 30; i++) {
            const id = TransferId.make(yield* randomId("tr_"))
            ids.add(id)
            yield* store.record(approved(a, `a${i}`, { id, createdAt: at(i % 3) }))
            yield* store.record(
              approved(b, `b${i}`, { id: TransferId.make(yield* randomId("tr_")), createdAt: at(i % 3) })
            )
          }
          const full = yield* store.list(a, { limit: 100 })
          assert.lengthOf(full.data, 30)
          assert.sameMembers(full.data.map((t) => t.id), [...ids])
          const times = full.data.map((t) => ms(t.createdAt))
          assert.deepStrictEqual(times, [...times].sort((x, y) => y - x))
          for (const pageSize of [1, 2, 3, 4, 7, 10, 29, 30, 31]) {
            const walked: Array<TransferId> = []
            let cursor: TransferId | undefined
            let pages = 0
            while (true) {
              const page = yield* store.list(a, {
                limit: pageSize,
                ...(cursor === undefined ? {} : { startingAfter: cursor })
              })
              pages++
              assert.isAtMost(page.data.length, pageSize)
              for (const t of page.data) assert.strictEqual(t.clientId, a)
              walked.push(...page.data.map((t) => t.id))
              if (!page.hasMore) break
              assert.lengthOf(page.data, pageSize, `a page with has_more is full (page size ${pageSize})`)
              cursor = page.data[page.data.length - 1]!.id
              assert.isAtMost(pages, 40, "the walk does not end")
            }
            assert.strictEqual(pages, Math.max(1, Math.ceil(30 / pageSize)), `pages at size ${pageSize}`)
            assert.strictEqual(new Set(walked).size, walked.length, `no overlap at page size ${pageSize}`)
            assert.deepStrictEqual(walked, full.data.map((t) => t.id), `walk at page size ${pageSize}`)
          }
        })))

      it.effect("the reference filter finds the one transfer with that reference, of this client only", () =>
        run(Effect.gen(function*() {
          const store = yield* TransferStore
          const a = yield* newClient("a")
          const b = yield* newClient("b")
          for (let i = 0; i < 5; i++) yield* store.record(approved(a, `a${i}`, { createdAt: at(i) }))
          yield* store.record(approved(b, "bonly", { reference: ref("only-b") }))
          yield* store.record(approved(b, "bshared", { reference: ref("a2") }))
          const found = yield* store.list(a, { reference: ref("a2"), limit: 10 })
          assert.deepStrictEqual(found.data.map((t) => t.id), [transferId("a2")])
          assert.isFalse(found.hasMore)
          const ofB = yield* store.list(b, { reference: ref("a2"), limit: 10 })
          assert.deepStrictEqual(ofB.data.map((t) => t.id), [transferId("bshared")])
          const none = yield* store.list(a, { reference: ref("only-b"), limit: 10 })
          assert.deepStrictEqual(none.data, [])
          assert.isFalse(none.hasMore)
          const missing = yield* store.list(a, { reference: ref("missing"), limit: 10 })
          assert.deepStrictEqual(missing.data, [])
          // The filter and a cursor together: nothing after the only match.
          const after = yield* store.list(a, { reference: ref("a2"), limit: 10, startingAfter: transferId("a2") })
          assert.deepStrictEqual(after.data, [])
        })))

      // Follows the pages of a listing as a client would, at each page size: every page at most the size, a page
      // that offers more is full, and the pages together are `expected`, each once, newest first.
      const walk = (
        client: ClientId,
        query: Omit<TransferQuery, "limit" | "startingAfter">,
        expected: ReadonlyArray<TransferId>
      ) =>
        Effect.gen(function*() {
          const store = yield* TransferStore
          for (const limit of [1, 2, 3, 5, 100]) {
            const walked: Array<TransferId> = []
            let cursor: TransferId | undefined
            for (let pages = 1;; pages++) {
              assert.isAtMost(pages, 60, "the walk does not end")
              const page = yield* store.list(client, {
                ...query,
                limit,
                ...(cursor === undefined ? {} : { startingAfter: cursor })
              })
              assert.isAtMost(page.data.length, limit)
              walked.push(...page.data.map((t) => t.id))
              if (!page.hasMore) break
              assert.lengthOf(page.data, limit, `a page with has_more is full (limit ${limit})`)
              cursor = page.data[page.data.length - 1]!.id
            }
            assert.deepStrictEqual(walked, expected, `walk at limit ${limit}`)
          }
        })

      // Client a's transfers, one a millisecond apart and three sharing each millisecond, in every status; b's
      // alike, so that a filter that forgot the client would show them.
      const statusOf = (i: number): TransferStatus =>
        (["approved", "declined", "pending", "approved", "unknown"] as const)[i % 5]!
      const seedStatuses = (a: ClientId, b: ClientId) =>
        Effect.gen(function*() {
          const store = yield* TransferStore
          const made: Array<{ id: TransferId; label: string; status: TransferStatus; ms: number }> = []
          for (let i = 0; i < 24; i++) {
            for (const [client, label] of [[a, `a${i}`], [b, `b${i}`]] as const) {
              const status = statusOf(i)
              const fields = { createdAt: at(Math.floor(i / 3)) }
              const t = status === "approved"
                ? approved(client, label, fields)
                : status === "declined"
                ? declined(client, label, fields)
                : pending(client, label, fields)
              if (status === "approved" || status === "declined") yield* store.record(t)
              else yield* store.reserve(t)
              if (status === "unknown") yield* store.settle(new Transfer({ ...t, status: "unknown" }))
              if (client === a) made.push({ id: t.id, label, status, ms: Math.floor(i / 3) })
            }
          }
          const newest = (yield* store.list(a, { limit: 100 })).data.map((t) => t.id)
          assert.sameMembers(newest, made.map((m) => m.id))
          return newest.map((id) => made.find((m) => m.id === id)!)
        })

      it.effect("the status filter lists every transfer of that status once, newest first, page by page", () =>
        run(Effect.gen(function*() {
          const store = yield* TransferStore
          const a = yield* newClient("a")
          const b = yield* newClient("b")
          const made = yield* seedStatuses(a, b)
          for (const status of ["approved", "declined", "pending", "unknown"] as const) {
            const expected = made.filter((m) => m.status === status).map((m) => m.id)
            assert.isNotEmpty(expected)
            yield* walk(a, { status }, expected)
          }
          assert.deepStrictEqual((yield* store.list(yield* newClient("c"), { status: "approved", limit: 10 })).data, [])
        })))

      it.effect("the date range lists those made from createdFrom and before createdBefore, page by page", () =>
        run(Effect.gen(function*() {
          const store = yield* TransferStore
          const a = yield* newClient("a")
          const b = yield* newClient("b")
          const made = yield* seedStatuses(a, b)
          const within = (from?: number, before?: number) =>
            made.filter((m) => (from === undefined || m.ms >= from) && (before === undefined || m.ms < before))
              .map((m) => m.id)
          // Bounds on a millisecond that several transfers share: the first is included, the second is not.
          yield* walk(a, { createdFrom: at(2), createdBefore: at(6) }, within(2, 6))
          assert.lengthOf(within(2, 6), 12)
          yield* walk(a, { createdFrom: at(5) }, within(5))
          yield* walk(a, { createdBefore: at(1) }, within(undefined, 1))
          assert.deepStrictEqual(
            (yield* store.list(a, { createdFrom: at(3), createdBefore: at(3), limit: 10 })).data,
            []
          )
          assert.deepStrictEqual((yield* store.list(a, { createdFrom: at(8), limit: 10 })).data, [])
        })))

      it.effect("status, dates and reference combine, and a cursor pages through the combination", () =>
        run(Effect.gen(function*() {
          const store = yield* TransferStore
          const a = yield* newClient("a")
          const b = yield* newClient("b")
          const made = yield* seedStatuses(a, b)
          for (const status of ["approved", "declined", "pending", "unknown"] as const) {
            const expected = made.filter((m) => m.status === status && m.ms >= 1 && m.ms < 7).map((m) => m.id)
            yield* walk(a, { status, createdFrom: at(1), createdBefore: at(7) }, expected)
          }
          const one = made.find((m) => m.status === "declined" && m.ms === 3)!
          const found = yield* store.list(a, {
            reference: ref(one.label),
            status: "declined",
            createdFrom: at(3),
            limit: 10
          })
          assert.deepStrictEqual(found.data.map((t) => t.id), [one.id])
          assert.deepStrictEqual(
            (yield* store.list(a, { reference: ref(one.label), status: "approved", limit: 10 })).data,
            []
          )
          assert.deepStrictEqual(
            (yield* store.list(a, { reference: ref(one.label), createdFrom: at(4), limit: 10 })).data,
            []
          )
        })))

      it.effect("other clients' transfers never appear, whatever the cursor", () =>
        run(Effect.gen(function*() {
          const store = yield* TransferStore
          const a = yield* newClient("a")
          const b = yield* newClient("b")
          for (let i = 0; i < 6; i++) {
            yield* store.record(approved(a, `a${i}`, { createdAt: at(i) }))
            yield* store.record(approved(b, `b${i}`, { createdAt: at(i) }))
          }
          const ofA = yield* store.list(a, { limit: 100 })
          assert.deepStrictEqual(ofA.data.map((t) => t.id), [5, 4, 3, 2, 1, 0].map((i) => transferId(`a${i}`)))
          // A cursor that is b's transfer does not open b's list to a.
          const withForeignCursor = yield* store.list(a, { limit: 100, startingAfter: transferId("b3") })
          for (const t of withForeignCursor.data) assert.strictEqual(t.clientId, a)
        })))
    })

    describe("transferDays", () => {
      // 2025-01-15 is day 20103 since 1970-01-01; T0 is its noon.
      const Day = 86_400_000
      const day = Math.floor(T0 / Day)
      const startOf = (d: number) => DateTime.unsafeMake(d * Day)
      const sorted = <R extends { day: number; currency: string; status: string }>(rows: ReadonlyArray<R>) =>
        [...rows].sort((x, y) =>
          x.day - y.day || x.currency.localeCompare(y.currency) || x.status.localeCompare(y.status)
        )

      it.effect("counts and sums a client's transfers per UTC day, currency and status, in [from, before)", () =>
        run(Effect.gen(function*() {
          const store = yield* TransferStore
          const a = yield* newClient("a")
          const b = yield* newClient("b")
          const noon = T0 - day * Day
          const huge = 2n ** 60n
          for (
            const t of [
              approved(a, "a1", { amount: 100n }),
              approved(a, "a2", { amount: 50n, createdAt: at(noon - 1) }),
              declined(a, "a3", { amount: 20n, createdAt: at(1) }),
              approved(a, "a4", { amount: 7n, currency: EUR, createdAt: at(Day / 2) }),
              approved(a, "a5", { amount: huge, createdAt: at(Day / 2 + 5) }),
              approved(a, "a6", { amount: huge, createdAt: at(Day / 2 + 6) }),
              // Outside [day, day + 2): the last millisecond before, the first one after.
              approved(a, "a7", { createdAt: at(-noon - 1) }),
              approved(a, "a8", { createdAt: at(Day * 1.5) }),
              approved(b, "b1", { amount: 999n })
            ]
          ) yield* store.record(t)
          yield* store.reserve(pending(a, "a9", { createdAt: at(2) }))
          const rows = yield* store.transferDays(a, startOf(day), startOf(day + 2))
          assert.deepStrictEqual(sorted(rows), [
            { day, currency: USD, status: "approved", count: 2, amount: 150n },
            { day, currency: USD, status: "declined", count: 1, amount: 20n },
            { day, currency: USD, status: "pending", count: 1, amount: 1234n },
            { day: day + 1, currency: EUR, status: "approved", count: 1, amount: 7n },
            { day: day + 1, currency: USD, status: "approved", count: 2, amount: 2n * huge }
          ])
          assert.deepStrictEqual(yield* store.transferDays(a, startOf(day + 2), startOf(day + 3)), [
            { day: day + 2, currency: USD, status: "approved", count: 1, amount: 1234n }
          ])
          assert.deepStrictEqual(yield* store.transferDays(yield* newClient("c"), startOf(day), startOf(day + 2)), [])
        })))
    })

    describe("balance", () => {
      interface Entry {
        readonly owner: "a" | "b"
        readonly merchant: string
        readonly currency: CurrencyCode
        readonly status: "approved" | "declined"
        readonly amount: bigint
      }
      const entry = fc.record({
        owner: fc.constantFrom("a" as const, "a" as const, "b" as const),
        merchant: fc.constantFrom("merchant-a", "merchant-b", "merchant.c"),
        currency: fc.constantFrom(USD, EUR, JPY),
        status: fc.constantFrom("approved" as const, "declined" as const),
        // Some amounts above 2^53; at most 30 of 2^58 stays below 2^63, the largest SQL BIGINT.
        amount: fc.oneof(fc.bigInt({ min: 1n, max: 100_000n }), fc.bigInt({ min: 1n, max: 2n ** 58n }))
      })

      const key = (merchant: string, currency: string) => `${merchant} ${currency}`
      const expected = (entries: ReadonlyArray<Entry>, owner: "a" | "b") => {
        const sums = new Map<string, bigint>()
        for (const e of entries) {
          if (e.owner !== owner || e.status !== "approved") continue
          const k = key(e.merchant, e.currency)
          sums.set(k, (sums.get(k) ?? 0n) + e.amount)
        }
        return [...sums.entries()].sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0))
      }

      const balanceOf = (client: ClientId) =>
        Effect.map(Effect.flatMap(TransferStore, (store) => store.balance(client)), (rows) => {
          for (const r of rows) assert.strictEqual(typeof r.amount, "bigint")
          return rows.map((r) => [key(r.merchantId, r.currency), r.amount] as const).sort(([x], [y]) =>
            x < y ? -1 : x > y ? 1 : 0
          )
        })

      it.effect.prop(
        "per merchant and currency: the exact sum of approved amounts, declined and other clients excluded",
        { entries: fc.array(entry, { maxLength: 30 }) },
        ({ entries }) =>
          run(Effect.gen(function*() {
            const store = yield* TransferStore
            const clients = { a: yield* newClient("a"), b: yield* newClient("b") }
            for (const [i, e] of entries.entries()) {
              const make = e.status === "approved" ? approved : declined
              yield* store.record(
                make(clients[e.owner], `t${i}`, {
                  amount: e.amount,
                  currency: e.currency,
                  recipient: { first_name: "Bob", email: "bob@example.com", merchant_id: e.merchant },
                  createdAt: at(i)
                })
              )
            }
            assert.deepStrictEqual(yield* balanceOf(clients.a), expected(entries, "a"))
            assert.deepStrictEqual(yield* balanceOf(clients.b), expected(entries, "b"))
            assert.deepStrictEqual(yield* balanceOf(clientId("nobody")), [])
          })),
        { timeout: 120_000, fastCheck: { numRuns: 40 } }
      )

      it.effect("is kept as one row per client, merchant and currency, moved by the changes that count", () =>
        run(Effect.gen(function*() {
          const store = yield* TransferStore
          const client = yield* newClient("a")
          for (let i = 0; i < 5; i++) yield* store.record(approved(client, `kept${i}`, { amount: 100n }))
          yield* store.record(declined(client, "keptdeclined", { amount: 7n }))
          yield* store.reserve(pending(client, "keptpending", { amount: 11n }))
          yield* store.settle(unknownOf(client, "keptpending", 11n))
          assert.strictEqual(yield* count("balances"), 1)
          yield* store.settle(approved(client, "keptpending", { amount: 11n }))
          // A late settle of the same transfer changes nothing: it moves nothing either.
          yield* store.settle(approved(client, "keptpending", { amount: 11n }))
          yield* store.record(declined(client, "other", { amount: 3n, currency: EUR }))
          assert.strictEqual(yield* count("balances"), 1)
          assert.deepStrictEqual((yield* store.balance(client)).map((r) => r.amount), [511n])
        })))

      it.effect("20 concurrent settles for one merchant all count, the first of them included", () =>
        run(Effect.gen(function*() {
          const store = yield* TransferStore
          const client = yield* newClient("a")
          const labels = Array.from({ length: 20 }, (_, i) => `race${i}`)
          for (const label of labels) yield* store.reserve(pending(client, label, { amount: 3n }))
          yield* Effect.all(labels.map((label) => store.settle(approved(client, label, { amount: 3n }))), {
            concurrency: "unbounded"
          })
          assert.deepStrictEqual((yield* store.balance(client)).map((r) => r.amount), [60n])
        })))

      it.effect("a sum above 2^53 is exact", () =>
        run(Effect.gen(function*() {
          const store = yield* TransferStore
          const client = yield* newClient("a")
          const amounts = [9_007_199_254_740_993n, 9_007_199_254_740_993n, 2n ** 53n - 1n, 3n]
          for (const [i, amount] of amounts.entries()) yield* store.record(approved(client, `big${i}`, { amount }))
          yield* store.record(declined(client, "declined", { amount: 5n }))
          const rows = yield* store.balance(client)
          assert.deepStrictEqual(rows.map((r) => [r.merchantId, r.currency, r.amount]), [
            ["merchant-a", "USD", 27_021_597_764_222_980n]
          ])
          assert.strictEqual(27_021_597_764_222_980n, amounts.reduce((x, y) => x + y, 0n))
        })))
    })

    describe("card data", () => {
      const isTime = (column: string) => /(^|\.)(created_?at|started_?at)$/i.test(column)

      it.effect("no column of any row holds a card-number-like run of 12 or more digits", () =>
        run(Effect.gen(function*() {
          const store = yield* TransferStore
          const raw = yield* RawRows
          const a = yield* newClient("a")
          const b = yield* newClient("b")
          yield* store.record(approved(a, "one", { amount: 123_456_789n }))
          yield* store.record(declined(a, "two", { createdAt: at(5) }))
          yield* store.record(declined(b, "three", { failure: { code: "incorrect_cvc" }, createdAt: at(6) }))
          yield* store.reserve(pending(a, "running", { createdAt: at(7) }), claim("key-running"))
          yield* store.reserve(pending(a, "taken", { reference: ref("one"), createdAt: at(8) }), claim("key-done"))
            .pipe(
              Effect.flip,
              Effect.flatMap((e) =>
                store.keep(a, claim("key-done").key, KeptAnswer.ReferenceTaken({ existing: e.existing }))
              )
            )
          yield* store.record(approved(b, "four", { createdAt: at(10) }), claim("key-recorded", "hash-three"))
          for (const table of ["transfers", "idempotency_keys", "api_clients"] as const) {
            const rows = yield* raw.rows(table)
            assert.isNotEmpty(rows, table)
            for (const row of rows) {
              for (const [column, value] of Object.entries(row)) {
                assert.notMatch(column, /pan|card_?number|cvc|cvv|authentication/i, `${table}.${column}`)
                if (value === null) continue
                if (isTime(column)) {
                  // Millisecond times (SQLite): 13 digits, but only ever the times written above. A Date or an
                  // ISO string on PostgreSQL.
                  const time = typeof value === "string"
                    ? Date.parse(value)
                    : value instanceof Date
                    ? value.getTime()
                    : Number(value)
                  assert.isTrue(time >= T0 && time <= T0 + 10, `${table}.${column} = ${String(value)}`)
                  continue
                }
                const text = value instanceof Uint8Array ? Buffer.from(value).toString("latin1") : String(value)
                assert.notMatch(text, /\d{12,}/, `${table}.${column} holds a long digit run: ${text}`)
              }
            }
          }
          for (const row of yield* raw.rows("transfers")) {
            const last4 = Object.entries(row).filter(([column]) => /last_?4$/i.test(column))
            assert.lengthOf(last4, 1)
            assert.match(String(last4[0]![1]), /^\d{4}$/)
          }
        })))
    })
  })
}
