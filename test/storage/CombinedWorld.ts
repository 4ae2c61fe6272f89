// A world for the combined-operations equivalence property: core's stores over one database's storage
// adapters, every port operation a step of the Stepper, the combined operations kept or removed, a card network
// that answers as the history says, and the rows as stored. Not a test file itself.
import { Effect, Layer, Schema } from "effect"
import { runMigrations } from "../../adapters/sql/Migrations.ts"
import { EventViewsLive } from "../../apps/http/webhooks/EventViewsLive.ts"
import type { Authorization, AuthorizationLookup } from "../../core/payments/CardNetwork.ts"
import { CardNetwork, CardNetworkOutcomeUnknown, CardNetworkUnavailable } from "../../core/payments/CardNetwork.ts"
import { Transfers } from "../../core/payments/Transfers.ts"
import { TransferStorage, type TransferStorageShape } from "../../core/payments/TransferStorage.ts"
import { storesOver } from "../../core/shared/Stores.ts"
import { SubscriptionStorage, type SubscriptionStorageShape } from "../../core/subscriptions/SubscriptionStorage.ts"
import type { WebhookStore } from "../../core/webhooks/Webhooks.ts"
import { Fingerprints } from "../core/usecases/MemoryWorld.ts"
import { RawRows, sqlRawRows, type Table } from "./RawRows.ts"
import type { Stepper } from "./Stepper.ts"

export type Form = "combined" | "composed"

// A database's adapters: the two storage ports and the webhook store over one client, on a new database.
export type Adapters = Layer.Layer<TransferStorage | SubscriptionStorage | WebhookStore | RawRows, unknown>

// Every operation of `tx` dies once the first one has run: a process that dies inside a transaction.
const dyingAfterFirst = <Tx extends object>(tx: Tx): Tx => {
  let ran = false
  return Object.fromEntries(
    Object.entries(tx).map(([name, op]) => [
      name,
      (...args: Array<unknown>) =>
        ran ? Effect.die("crash") : Effect.tap(op(...args) as Effect.Effect<unknown>, () => (ran = true))
    ])
  ) as Tx
}

// Each operation of the port, the combined ones included, as a step; a transaction crashes inside after its first
// operation.
const stepped = <S extends object>(port: S, stepper: Stepper): S =>
  Object.fromEntries(
    Object.entries(port).map(([name, value]) => [
      name,
      name === "transact"
        ? (work: (tx: object) => Effect.Effect<unknown>) =>
          stepper.step(
            name,
            value(work) as Effect.Effect<unknown>,
            value((tx: object) => work(dyingAfterFirst(tx))) as Effect.Effect<unknown>
          )
        : Effect.isEffect(value)
        ? stepper.step(name, value as Effect.Effect<unknown>)
        : typeof value === "function"
        ? (...args: Array<unknown>) => stepper.step(name, value(...args))
        : value !== null && typeof value === "object"
        ? stepped(value, stepper)
        : value
    ])
  ) as S

// The port as the adapter gives it, or without its combined operations: core then runs its own composition.
const formOf = <S extends { readonly combined?: unknown }>(port: S, form: Form): S => {
  if (form === "combined") {
    if (port.combined === undefined) throw new Error("this adapter has no combined operations")
    return port
  }
  const { combined: _, ...composed } = port
  return composed as S
}

export const steppedStorage = (stepper: Stepper, form: Form) =>
  Layer.merge(
    Layer.effect(
      TransferStorage,
      Effect.map(TransferStorage, (port: TransferStorageShape) => stepped(formOf(port, form), stepper))
    ),
    Layer.effect(
      SubscriptionStorage,
      Effect.map(SubscriptionStorage, (port: SubscriptionStorageShape) => stepped(formOf(port, form), stepper))
    )
  )

export const CardOutcome = Schema.Literal("approved", "declined", "unknown", "undecided", "unavailable", "crash")
export type CardOutcome = typeof CardOutcome.Type

// The network answers each request as the history says (by the request's label); what it decided per transfer is
// what a lookup finds. "undecided" times out and stays undecided; "crash" charges and the request's process dies.
export const scriptedNetwork = (stepper: Stepper, outcomes: ReadonlyMap<string, CardOutcome>) => {
  const truth = new Map<string, AuthorizationLookup>()
  const approved: Authorization = { _tag: "Approved", authorizationCode: "AUTH" }
  const declined: Authorization = { _tag: "Declined", code: "card_declined", declineCode: "generic_decline" }
  const layer = Layer.succeed(CardNetwork, {
    authorize: (request) =>
      Effect.gen(function*() {
        const outcome = outcomes.get(yield* stepper.label) ?? "approved"
        const decided = outcome === "declined"
          ? declined
          : outcome === "undecided"
          ? { _tag: "Undecided" as const }
          : outcome === "unavailable"
          ? { _tag: "NotFound" as const }
          : approved
        truth.set(request.transferId, decided)
        if (outcome === "unavailable") return yield* new CardNetworkUnavailable({ reason: "down" })
        if (outcome === "unknown" || outcome === "undecided") {
          return yield* new CardNetworkOutcomeUnknown({ reason: "time-out" })
        }
        if (outcome === "crash") return yield* stepper.die
        return decided as Authorization
      }),
    lookup: (transferId) => Effect.succeed(truth.get(transferId) ?? { _tag: "NotFound" }),
    refund: () => Effect.dieMessage("no refunds here"),
    lookupRefund: () => Effect.succeed({ _tag: "NotFound" as const })
  })
  return { layer, truth }
}

// The use cases and stores over `adapters`, in `form`, each storage operation a step of `stepper`.
export const world = (adapters: Adapters, form: Form, stepper: Stepper, network: Layer.Layer<CardNetwork>) => {
  const stores = storesOver(steppedStorage(stepper, form)).pipe(Layer.provide(EventViewsLive))
  return Transfers.Default.pipe(
    Layer.provideMerge(stores),
    Layer.provideMerge(Layer.merge(network, Fingerprints)),
    Layer.provideMerge(adapters)
  )
}

// A database's client, migrated, with its adapters and RawRows (SELECTs over its SqlClient).
export const sqlAdapters = <C>(
  client: Layer.Layer<C, unknown>,
  adapters: Layer.Layer<TransferStorage | SubscriptionStorage | WebhookStore, unknown, C>
): Adapters =>
  Layer.merge(adapters, sqlRawRows as Layer.Layer<RawRows, never, C>).pipe(
    Layer.provide(Layer.effectDiscard(runMigrations) as Layer.Layer<never, unknown, C>),
    Layer.provide(client)
  )

// What the history left in the database, comparable across databases of one kind and across runs: serial ids
// (subscriptions, outbox rows, deliveries) are left out, since PostgreSQL spends a sequence's values on rows it
// did not keep, and a subscription is named by its address and feed wherever a row points at one. The signups'
// counts are summed per day and feed: the row (slot) a signup went to follows its subscription's id.
const tables: ReadonlyArray<Table> = [
  "api_clients",
  "transfers",
  "balances",
  "idempotency_keys",
  "events",
  "webhook_endpoints",
  "webhook_deliveries",
  "subscriptions",
  "mail_outbox",
  "subscription_tokens"
]
export const json = (value: unknown) =>
  JSON.stringify(
    value,
    (key, v) =>
      (key === "id" || key === "subscriptionId" || key === "subscription_id") && typeof v === "number"
        ? undefined
        : typeof v === "bigint"
        ? `${v}n`
        : v
  )

export const storedRows = Effect.gen(function*() {
  const raw = yield* RawRows
  const subscriptions = yield* raw.rows("subscriptions")
  const address = new Map(subscriptions.map((s) => [String(s.id), `${s.email_key}|${s.feed}`]))
  // A subscription by its address and feed, not its id: a sequence's numbers are not rolled back, and the two forms
  // spend them differently on a write that conflicts or dies. Its events name it by id too, as their subject and in
  // their body.
  const named = (row: Record<string, unknown>) =>
    "subscription_id" in row
      ? { ...row, subscription: address.get(String(row.subscription_id)) }
      : typeof row.type === "string" && row.type.startsWith("subscription.")
      ? {
        ...row,
        subject: address.get(String(row.subject)) ?? row.subject,
        body: String(row.body).replace(/"id":(\d+)/, (_, id) => `"id":${JSON.stringify(address.get(id) ?? id)}`)
      }
      : row
  const snapshot: Record<string, ReadonlyArray<string>> = {}
  for (const table of tables) {
    const rows = yield* raw.rows(table)
    const serial = table === "subscriptions" || table === "mail_outbox" || table === "webhook_deliveries"
    snapshot[table] = rows.map((row) => {
      const { id, subscription_id: _, ...rest } = named(row)
      return json(serial ? rest : { id, ...rest })
    }).sort()
  }
  const signups = new Map<string, number>()
  for (const row of yield* raw.rows("signup_days")) {
    const key = `${row.day} ${row.feed}`
    signups.set(key, (signups.get(key) ?? 0) + Number(row.signups))
  }
  snapshot.signup_days = [...signups].map(([key, n]) => `${key} ${n}`).sort()
  return snapshot
})
