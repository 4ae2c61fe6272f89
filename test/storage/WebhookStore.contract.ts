// What every WebhookStore must do, with the events the transfer store writes (the core's rules over each
// adapter's TransferStorage): endpoints per owner, an event per final transfer with a delivery for each of the
// owner's live endpoints that asked for its type, deliveries claimed once, and the endpoint's backoff.
import { assert, describe, it } from "@effect/vitest"
import { DateTime, Duration, Effect, type Layer, Option } from "effect"
import { CurrencyCode } from "../../core/payments/Currency.ts"
import { ClientId, Reference, Transfer, TransferId } from "../../core/payments/Transfer.ts"
import { TransferStore } from "../../core/payments/TransferStore.ts"
import { EndpointId, KeptAttempts, WebhookStore } from "../../core/webhooks/Webhooks.ts"

const T0 = Date.UTC(2025, 0, 15, 12, 0, 0)
const at = (ms: number) => DateTime.unsafeMake(T0 + ms)
const client = ClientId.make(`cl_${"hooks".padEnd(24, "x")}`)
const other = ClientId.make(`cl_${"other".padEnd(24, "x")}`)
const endpointId = (label: string) => EndpointId.make(`we_${label.padEnd(24, "x")}`)
const transfer = (label: string, status: "approved" | "declined", owner = client) =>
  new Transfer({
    id: TransferId.make(`tr_${label.padEnd(24, "x")}`),
    clientId: owner,
    reference: Reference.make(`ref-${label}`),
    amount: 100n,
    currency: CurrencyCode.make("USD"),
    status,
    sender: {
      first_name: "Ann",
      email: "ann@example.com",
      card: { brand: "visa", last4: "4242", exp_month: 12, exp_year: 2030, fingerprint: "fp" }
    },
    recipient: { first_name: "Bob", email: "bob@example.com", merchant_id: "m" },
    ...(status === "declined" ? { failure: { code: "card_declined" as const } } : { authorizationCode: "A" }),
    createdAt: at(0)
  })

export const webhookStoreContract = (
  name: string,
  makeLayer: () => Layer.Layer<WebhookStore | TransferStore, unknown>
): void => {
  describe(`WebhookStore contract: ${name}`, () => {
    // Both clients exist first: a transfer names its client.
    const clients = Effect.flatMap(
      TransferStore,
      (store) => Effect.forEach([client, other], (id) => store.createClient({ id, name: id }, `hash-${id}`, at(0)))
    )
    const run = <A, E>(self: Effect.Effect<A, E, WebhookStore | TransferStore>) =>
      Effect.provide(Effect.zipRight(clients, self), makeLayer())
    const endpoint = (label: string, enabledEvents: ReadonlyArray<string>, owner: string = client, created = 0) =>
      Effect.flatMap(WebhookStore, (store) =>
        store.createEndpoint({
          id: endpointId(label),
          owner,
          url: `https://hooks.example/${label}`,
          enabledEvents,
          createdAt: at(created)
        }, `whsec_${label}`))

    it.effect("endpoints are per owner: created, listed newest first, found, re-keyed and deleted", () =>
      run(Effect.gen(function*() {
        const store = yield* WebhookStore
        yield* endpoint("one", ["*"], client, 0)
        yield* endpoint("two", ["transfer.approved"], client, 1)
        yield* endpoint("theirs", ["*"], other, 2)
        assert.deepStrictEqual((yield* store.listEndpoints(client)).map((e) => e.id), [
          endpointId("two"),
          endpointId("one")
        ])
        const two = Option.getOrThrow(yield* store.getEndpoint(client, endpointId("two")))
        assert.deepStrictEqual(two.enabledEvents, ["transfer.approved"])
        assert.strictEqual(two.disabledAt, undefined)
        assert.isTrue(Option.isNone(yield* store.getEndpoint(client, endpointId("theirs"))))
        assert.isTrue(yield* store.setSecret(client, endpointId("one"), "whsec_new"))
        assert.isFalse(yield* store.setSecret(client, endpointId("theirs"), "whsec_new"))
        assert.strictEqual(Option.getOrThrow(yield* store.target(endpointId("one"))).secret, "whsec_new")
        assert.isFalse(yield* store.deleteEndpoint(client, endpointId("theirs")))
        assert.isTrue(yield* store.deleteEndpoint(client, endpointId("one")))
        assert.lengthOf(yield* store.listEndpoints(client), 1)
      })))

    it.effect("an owner disables an endpoint, which then gets no new events, and enables it again", () =>
      run(Effect.gen(function*() {
        const store = yield* WebhookStore
        const transfers = yield* TransferStore
        yield* endpoint("mine", ["*"])
        yield* endpoint("theirs", ["*"], other)
        yield* store.endpointFailing(
          endpointId("mine"),
          { failingSince: at(0), retryAt: at(5), reason: "HTTP 500" },
          undefined
        )
        assert.isFalse(yield* store.setDisabled(client, endpointId("theirs"), { at: at(9), reason: "no" }))
        assert.isFalse(yield* store.setDisabled(client, endpointId("none"), undefined))
        assert.isTrue(yield* store.setDisabled(client, endpointId("mine"), { at: at(9), reason: "Off for now" }))
        const off = Option.getOrThrow(yield* store.getEndpoint(client, endpointId("mine")))
        assert.strictEqual(DateTime.toEpochMillis(off.disabledAt!), T0 + 9)
        assert.strictEqual(off.disabledReason, "Off for now")
        assert.isTrue(Option.getOrThrow(yield* store.target(endpointId("mine"))).disabled)
        // Disabled twice: the same answer, the newer reason.
        assert.isTrue(yield* store.setDisabled(client, endpointId("mine"), { at: at(9), reason: "Off for now" }))
        yield* transfers.record(transfer("paused", "approved"))
        const later = DateTime.unsafeMake(Date.now() + 1000)
        assert.lengthOf(yield* store.dueEndpoints(later, 10), 0)
        assert.lengthOf(yield* store.claim(endpointId("mine"), later, later, 10), 0)
        assert.isTrue(yield* store.setDisabled(client, endpointId("mine"), undefined))
        // Enabled twice: the same answer.
        assert.isTrue(yield* store.setDisabled(client, endpointId("mine"), undefined))
        const on = Option.getOrThrow(yield* store.getEndpoint(client, endpointId("mine")))
        assert.deepStrictEqual(
          [on.disabledAt, on.disabledReason, on.failingSince, on.lastError],
          [undefined, undefined, undefined, undefined]
        )
        const target = Option.getOrThrow(yield* store.target(endpointId("mine")))
        assert.deepStrictEqual([target.disabled, target.retryAt, target.failingSince], [false, undefined, undefined])
        yield* transfers.record(transfer("after", "approved"))
        assert.deepStrictEqual(yield* store.dueEndpoints(later, 10), [endpointId("mine")])
        const claimed = yield* store.claim(
          endpointId("mine"),
          later,
          DateTime.addDuration(later, Duration.minutes(1)),
          10
        )
        assert.lengthOf(claimed, 1)
        assert.strictEqual(JSON.parse(claimed[0]!.body).data.object.reference, "ref-after")
      })))

    it.effect("a transfer's events, newest first, each with its deliveries' attempts and state", () =>
      run(Effect.gen(function*() {
        const store = yield* WebhookStore
        const transfers = yield* TransferStore
        yield* endpoint("first", ["*"])
        yield* endpoint("second", ["transfer.approved"])
        const paid = transfer("about", "approved")
        yield* transfers.record(paid)
        yield* transfers.record(transfer("another", "approved"))
        assert.lengthOf(yield* store.eventsAbout(other, paid.id, 10), 0)
        assert.lengthOf(yield* store.eventsAbout(client, "tr_none", 10), 0)
        const [about, ...rest] = yield* store.eventsAbout(client, paid.id, 10)
        assert.lengthOf(rest, 0)
        assert.strictEqual(about!.event.type, "transfer.approved")
        assert.strictEqual(JSON.parse(about!.event.body).data.object.id, paid.id)
        assert.sameMembers(about!.deliveries.map((d) => d.url), [
          "https://hooks.example/first",
          "https://hooks.example/second"
        ])
        for (const d of about!.deliveries) {
          assert.deepStrictEqual([d.attempts, d.history, d.deliveredAt, d.lastError], [0, [], undefined, undefined])
          assert.isDefined(d.nextAttemptAt)
        }
        const now = DateTime.unsafeMake(Date.now() + 1000)
        const [toFirst] = yield* store.claim(endpointId("first"), now, now, 10)
        const [toSecond] = yield* store.claim(endpointId("second"), now, now, 10)
        yield* store.failed(toFirst!.id, DateTime.addDuration(now, Duration.minutes(5)), "HTTP 503", {
          at: now,
          status: 503,
          failure: undefined
        })
        yield* store.delivered([{ id: toSecond!.id, status: 200 }], now)
        const [after] = yield* store.eventsAbout(client, paid.id, 10)
        const byEndpoint = new Map(after!.deliveries.map((d) => [d.endpointId, d]))
        const failing = byEndpoint.get(endpointId("first"))!
        assert.deepStrictEqual([failing.attempts, failing.lastError, failing.deliveredAt], [1, "HTTP 503", undefined])
        assert.strictEqual(DateTime.toEpochMillis(failing.nextAttemptAt!), DateTime.toEpochMillis(now) + 300_000)
        const delivered = byEndpoint.get(endpointId("second"))!
        assert.strictEqual(delivered.attempts, 1)
        assert.strictEqual(DateTime.toEpochMillis(delivered.deliveredAt!), DateTime.toEpochMillis(now))
        assert.isUndefined(delivered.nextAttemptAt)
      })))

    it.effect("each attempt is kept with its delivery: numbered, timed, its status or why there was none", () =>
      run(Effect.gen(function*() {
        const store = yield* WebhookStore
        const transfers = yield* TransferStore
        yield* endpoint("flaky", ["*"])
        const paid = transfer("tried", "approved")
        yield* transfers.record(paid)
        const base = Date.now() + 1000
        const t = (s: number) => DateTime.unsafeMake(base + s * 1000)
        const claimAt = (s: number) => store.claim(endpointId("flaky"), t(s), t(s), 10)
        const [first] = yield* claimAt(0)
        yield* store.failed(first!.id, t(1), "HTTP 503", { at: t(0), status: 503, failure: undefined })
        yield* claimAt(1)
        yield* store.failed(first!.id, t(2), "ECONNREFUSED", { at: t(1), status: undefined, failure: "ECONNREFUSED" })
        const [third] = yield* claimAt(2)
        assert.strictEqual(third!.attempts, 2)
        yield* store.delivered([{ id: first!.id, status: 200 }], t(2))
        // Marks of a delivered delivery record nothing more.
        yield* store.delivered([{ id: first!.id, status: 200 }], t(3))
        yield* store.failed(first!.id, t(4), "HTTP 500", { at: t(3), status: 500, failure: undefined })
        const [about] = yield* store.eventsAbout(client, paid.id, 10)
        const [delivery] = about!.deliveries
        assert.strictEqual(delivery!.attempts, 3)
        assert.deepStrictEqual(
          delivery!.history.map((a) => [a.attempt, DateTime.toEpochMillis(a.at), a.status, a.failure]),
          [
            [1, DateTime.toEpochMillis(t(0)), 503, undefined],
            [2, DateTime.toEpochMillis(t(1)), undefined, "ECONNREFUSED"],
            [3, DateTime.toEpochMillis(t(2)), 200, undefined]
          ]
        )
        // A delivery keeps its latest KeptAttempts attempts, however often it is tried.
        const again = transfer("again", "approved")
        yield* transfers.record(again)
        const [retried] = yield* claimAt(3)
        for (let n = 1; n <= KeptAttempts + 2; n++) {
          yield* store.failed(retried!.id, t(4), "ETIMEDOUT", { at: t(n), status: undefined, failure: "ETIMEDOUT" })
        }
        const [aboutAgain] = yield* store.eventsAbout(client, again.id, 10)
        const kept = aboutAgain!.deliveries[0]!
        assert.strictEqual(kept.attempts, KeptAttempts + 2)
        assert.deepStrictEqual(
          kept.history.map((a) => [a.attempt, DateTime.toEpochMillis(a.at)]),
          Array.from({ length: KeptAttempts }, (_, i) => [i + 3, DateTime.toEpochMillis(t(i + 3))])
        )
        // A delivery's attempts go with it: deleting its endpoint deletes both.
        assert.isTrue(yield* store.deleteEndpoint(client, endpointId("flaky")))
        const [gone] = yield* store.eventsAbout(client, paid.id, 10)
        assert.lengthOf(gone!.deliveries, 0)
      })))

    it.effect("a final transfer's event goes to the owner's live endpoints that asked for its type", () =>
      run(Effect.gen(function*() {
        const store = yield* WebhookStore
        const transfers = yield* TransferStore
        yield* endpoint("all", ["*"])
        yield* endpoint("approved", ["transfer.approved"])
        yield* endpoint("declined", ["transfer.declined"])
        yield* endpoint("disabled", ["*"])
        yield* endpoint("theirs", ["*"], other)
        yield* store.endpointFailing(endpointId("disabled"), {
          failingSince: at(0),
          retryAt: at(1),
          reason: "HTTP 500"
        }, "Disabled after failing: HTTP 500")
        const disabled = Option.getOrThrow(yield* store.getEndpoint(client, endpointId("disabled")))
        assert.strictEqual(disabled.disabledReason, "Disabled after failing: HTTP 500")
        assert.strictEqual(DateTime.toEpochMillis(disabled.disabledAt!), T0 + 1)
        yield* transfers.record(transfer("paid", "approved"))
        const { data, hasMore } = yield* store.listEvents(client, { limit: 10 })
        assert.isFalse(hasMore)
        assert.lengthOf(data, 1)
        const event = data[0]!
        assert.strictEqual(event.type, "transfer.approved")
        const body = JSON.parse(event.body)
        assert.strictEqual(body.id, event.id)
        assert.strictEqual(body.type, "transfer.approved")
        assert.isDefined(body.data.object)
        assert.deepStrictEqual(Option.getOrThrow(yield* store.getEvent(client, event.id)), event)
        assert.isTrue(Option.isNone(yield* store.getEvent(other, event.id)))
        assert.lengthOf((yield* store.listEvents(other, { limit: 10 })).data, 0)
        const now = DateTime.unsafeMake(Date.now() + 1000)
        const due = yield* store.dueEndpoints(now, 10)
        assert.sameMembers([...due], [endpointId("all"), endpointId("approved")])
        const claimed = yield* store.claim(endpointId("all"), now, DateTime.addDuration(now, Duration.minutes(1)), 10)
        assert.lengthOf(claimed, 1)
        assert.strictEqual(claimed[0]!.eventId, event.id)
        assert.strictEqual(claimed[0]!.body, event.body)
        // Leased: not due again before the lease ends.
        assert.lengthOf(yield* store.claim(endpointId("all"), now, now, 10), 0)
        yield* store.delivered([{ id: claimed[0]!.id, status: 204 }], now)
        assert.lengthOf(yield* store.claim(endpointId("all"), DateTime.addDuration(now, Duration.hours(1)), now, 10), 0)
        // A declined transfer tells its own type.
        yield* transfers.record(transfer("refused", "declined"))
        const types = (yield* store.listEvents(client, { limit: 10 })).data.map((e) => e.type)
        assert.sameMembers([...types], ["transfer.approved", "transfer.declined"])
        assert.lengthOf((yield* store.listEvents(client, { limit: 10, type: "transfer.declined" })).data, 1)
      })))

    it.effect("a settle writes its event once, to the endpoints that asked for its type; a late settle writes none", () =>
      run(Effect.gen(function*() {
        const store = yield* WebhookStore
        const transfers = yield* TransferStore
        yield* endpoint("all", ["*"])
        yield* endpoint("declines", ["transfer.declined"])
        yield* endpoint("theirs", ["*"], other)
        const approved = transfer("settled", "approved")
        const { authorizationCode: _, ...fields } = approved
        yield* transfers.reserve(new Transfer({ ...fields, status: "pending" }))
        assert.lengthOf((yield* store.listEvents(client, { limit: 10 })).data, 0)
        yield* transfers.settle(approved)
        // A second answer for the same transfer (a late request, a second reconciler) changes nothing.
        yield* transfers.settle(new Transfer({ ...fields, status: "declined", failure: { code: "card_declined" } }))
        const { data } = yield* store.listEvents(client, { limit: 10 })
        assert.deepStrictEqual(data.map((e) => e.type), ["transfer.approved"])
        assert.strictEqual(Option.getOrThrow(yield* transfers.get(client, approved.id)).status, "approved")
        const now = DateTime.unsafeMake(Date.now() + 1000)
        assert.deepStrictEqual([...(yield* store.dueEndpoints(now, 10))], [endpointId("all")])
        const claimed = yield* store.claim(endpointId("all"), now, DateTime.addDuration(now, Duration.minutes(1)), 10)
        assert.deepStrictEqual(claimed.map((d) => d.eventId), [data[0]!.id])
      })))

    it.effect("a failed delivery is due again at its next attempt; a failing endpoint waits for its retry time", () =>
      run(Effect.gen(function*() {
        const store = yield* WebhookStore
        const transfers = yield* TransferStore
        yield* endpoint("flaky", ["*"])
        yield* transfers.record(transfer("one", "approved"))
        const now = DateTime.unsafeMake(Date.now() + 1000)
        const later = DateTime.addDuration(now, Duration.minutes(5))
        const [delivery] = yield* store.claim(
          endpointId("flaky"),
          now,
          DateTime.addDuration(now, Duration.minutes(1)),
          10
        )
        yield* store.failed(delivery!.id, later, "HTTP 503", { at: now, status: 503, failure: undefined })
        yield* store.endpointFailing(
          endpointId("flaky"),
          { failingSince: now, retryAt: later, reason: "HTTP 503" },
          undefined
        )
        assert.lengthOf(yield* store.dueEndpoints(DateTime.addDuration(now, Duration.minutes(2)), 10), 0)
        assert.deepStrictEqual([...(yield* store.dueEndpoints(later, 10))], [endpointId("flaky")])
        const target = Option.getOrThrow(yield* store.target(endpointId("flaky")))
        assert.isFalse(target.disabled)
        assert.strictEqual(DateTime.toEpochMillis(target.retryAt!), DateTime.toEpochMillis(later))
        const [again] = yield* store.claim(
          endpointId("flaky"),
          later,
          DateTime.addDuration(later, Duration.minutes(1)),
          10
        )
        assert.strictEqual(again!.attempts, 1)
        yield* store.endpointRecovered(endpointId("flaky"))
        assert.isUndefined(Option.getOrThrow(yield* store.target(endpointId("flaky"))).retryAt)
      })))

    it.effect("resend makes a new delivery of an owner's event to an owner's endpoint only", () =>
      run(Effect.gen(function*() {
        const store = yield* WebhookStore
        const transfers = yield* TransferStore
        yield* endpoint("late", ["transfer.declined"])
        yield* endpoint("theirs", ["*"], other)
        yield* transfers.record(transfer("x", "approved"))
        const [event] = (yield* store.listEvents(client, { limit: 1 })).data
        const now = DateTime.unsafeMake(Date.now() + 1000)
        assert.lengthOf(yield* store.dueEndpoints(now, 10), 0)
        assert.isFalse(yield* store.resend(client, event!.id, endpointId("theirs"), now))
        assert.isFalse(yield* store.resend(other, event!.id, endpointId("theirs"), now))
        assert.isTrue(yield* store.resend(client, event!.id, endpointId("late"), now))
        assert.lengthOf(
          yield* store.claim(endpointId("late"), now, DateTime.addDuration(now, Duration.minutes(1)), 10),
          1
        )
      })))

    it.effect("concurrent claims of one endpoint hand out each delivery once", () =>
      run(Effect.gen(function*() {
        const store = yield* WebhookStore
        const transfers = yield* TransferStore
        yield* endpoint("busy", ["*"])
        for (let i = 0; i < 12; i++) yield* transfers.record(transfer(`t${i}`, "approved"))
        const now = DateTime.unsafeMake(Date.now() + 1000)
        const lease = DateTime.addDuration(now, Duration.minutes(1))
        const batches = yield* Effect.all(
          Array.from({ length: 6 }, () => store.claim(endpointId("busy"), now, lease, 4)),
          { concurrency: "unbounded" }
        )
        const ids = batches.flat().map((d) => d.id)
        assert.strictEqual(ids.length, 12)
        assert.strictEqual(new Set(ids).size, 12)
      })))
  })
}
