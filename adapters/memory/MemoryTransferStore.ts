import { Effect, Layer, Option } from "effect"
import { KeptAnswer } from "../../core/payments/Idempotency.ts"
import { type ClientId, Transfer, UnsettledTransfers } from "../../core/payments/Transfer.ts"
import { TransferStorage, type TransferTx } from "../../core/payments/TransferStorage.ts"
import {
  atomically,
  MemoryDatabase,
  millis,
  newestFirst,
  type Statements,
  type Tables,
  unitOfWork,
  unsettledAt
} from "./MemoryDatabase.ts"
import { dayTotals } from "./MemoryDays.ts"
import { memoryEventStatements } from "./MemoryEvents.ts"
import { memoryRefundReads, memoryRefundStatements } from "./MemoryRefunds.ts"

// The transfer storage in memory: the same port as the databases', over MemoryDatabase's tables, with the
// same uniqueness (a client's reference, a client's key) checked where the databases have constraints.

const keyOf = (client: string, key: string) => `${client}\u0000${key}`
const balanceKey = (client: string, merchant: string, currency: string) => `${client}\u0000${merchant}\u0000${currency}`
const holder = (t: Tables, client: string, reference: string) =>
  [...t.transfers.values()].find((r) => r.transfer.clientId === client && r.transfer.reference === reference)

const statements: Statements<TransferTx> = {
  ...memoryEventStatements,
  ...memoryRefundStatements,
  insertKey: (t, client, claim, now) => {
    if (t.keys.has(keyOf(client, claim.key))) return false
    t.keys.set(keyOf(client, claim.key), {
      client,
      requestHash: claim.requestHash,
      requestId: claim.requestId,
      startedAt: now,
      answer: undefined
    })
    return true
  },
  lockKey: (t, client, key) => Option.fromNullable(t.keys.get(keyOf(client, key))),
  restartKey: (t, client, claim, now) => {
    if (!t.keys.has(keyOf(client, claim.key))) return
    t.keys.set(keyOf(client, claim.key), {
      client,
      requestHash: claim.requestHash,
      requestId: claim.requestId,
      startedAt: now,
      answer: undefined
    })
  },
  keepAnswer: (t, client, key, answer) => {
    const record = t.keys.get(keyOf(client, key))
    if (record !== undefined && record.answer === undefined) t.keys.set(keyOf(client, key), { ...record, answer })
  },
  answerWaitingKeys: (t, client, hash, transferId) => {
    for (const [k, record] of t.keys) {
      if (record.client === client && record.requestHash === hash && record.answer === undefined) {
        t.keys.set(k, { ...record, answer: KeptAnswer.TransferMade({ transferId }) })
      }
    }
  },
  releaseKey: (t, client, key) => {
    if (t.keys.get(keyOf(client, key))?.answer === undefined) t.keys.delete(keyOf(client, key))
  },
  insertTransfer: (t, transfer) => {
    if (holder(t, transfer.clientId, transfer.reference) !== undefined) return false
    if (t.transfers.has(transfer.id)) throw new Error(`transfer ${transfer.id} exists`)
    t.transfers.set(transfer.id, { transfer, attempts: 0 })
    return true
  },
  referenceHolder: (t, client, reference) =>
    Option.map(Option.fromNullable(holder(t, client, reference)), (r) => r.transfer.id),
  updateOutcome: (t, outcome, from) => {
    const row = t.transfers.get(outcome.id)
    if (row === undefined || !from.includes(row.transfer.status)) return false
    const { authorizationCode: _a, failure: _f, reconciledAt: _r, ...stored } = row.transfer
    const transfer = new Transfer({
      ...stored,
      status: outcome.status,
      ...(outcome.failure === undefined ? {} : { failure: outcome.failure }),
      ...(outcome.authorizationCode === undefined ? {} : { authorizationCode: outcome.authorizationCode }),
      ...(outcome.reconciledAt === undefined ? {} : { reconciledAt: outcome.reconciledAt })
    }, true)
    t.transfers.set(outcome.id, { transfer, attempts: row.attempts })
    return true
  },
  deleteTransfer: (t, id, status) => {
    if (t.transfers.get(id)?.transfer.status === status) t.transfers.delete(id)
  },
  addToBalance: (t, change) => {
    const k = balanceKey(change.clientId, change.merchantId, change.currency)
    t.balances.set(k, { ...change, amount: (t.balances.get(k)?.amount ?? 0n) + change.amount })
  }
}

export const layer = Layer.effect(
  TransferStorage,
  Effect.gen(function*() {
    const db = yield* MemoryDatabase
    const t = db.tables
    const read = <A>(f: () => A) => atomically(db, Effect.sync(f))
    const own = (client: ClientId) =>
      [...t.transfers.values()].map((r) => r.transfer).filter((x) => x.clientId === client)
    return TransferStorage.of({
      ...unitOfWork<TransferTx>(db, statements),
      ...memoryRefundReads(t, read),
      createClient: (client, keyHash, now) =>
        read(() => {
          if ([...t.clients.values()].some((c) => c.keyHash === keyHash) || t.clients.has(client.id)) {
            throw new Error("client exists")
          }
          t.clients.set(client.id, { id: client.id, name: client.name, keyHash, createdAt: now })
        }),
      clientByKeyHash: (keyHash) =>
        read(() =>
          Option.map(
            Option.fromNullable([...t.clients.values()].find((c) => c.keyHash === keyHash)),
            (c) => ({ id: c.id, name: c.name })
          )
        ),
      hasClients: read(() => t.clients.size > 0),
      keyRecord: (client, key) =>
        read(() =>
          Option.map(Option.fromNullable(t.keys.get(keyOf(client, key))), ({ client: _, ...record }) => record)
        ),
      get: (client, id) => read(() => Option.fromNullable(own(client).find((x) => x.id === id))),
      byReference: (client, reference) =>
        read(() => Option.fromNullable(own(client).find((x) => x.reference === reference))),
      list: (client, query) =>
        read(() => {
          const all = own(client).sort(newestFirst((x) => x.createdAt))
          const after = all.find((x) => x.id === query.startingAfter)
          const rows = all.filter((x) =>
            (query.reference === undefined || x.reference === query.reference) &&
            (query.status === undefined || x.status === query.status) &&
            (query.createdFrom === undefined || millis(x.createdAt) >= millis(query.createdFrom)) &&
            (query.createdBefore === undefined || millis(x.createdAt) < millis(query.createdBefore)) &&
            (after === undefined || newestFirst<Transfer>((y) => y.createdAt)(after, x) < 0)
          ).slice(0, query.limit + 1)
          return { data: rows.slice(0, query.limit), hasMore: rows.length > query.limit }
        }),
      transferDays: (client, from, before) => read(() => dayTotals(own(client), from, before)),
      balance: (client) =>
        read(() =>
          [...t.balances.values()].filter((b) => b.clientId === client).map(({ amount, currency, merchantId }) => ({
            merchantId,
            currency,
            amount
          })).sort((a, b) =>
            a.merchantId < b.merchantId ? -1 : a.merchantId > b.merchantId ? 1 : a.currency < b.currency ? -1 : 1
          )
        ),
      claimUnsettled: (now, pendingBefore, leaseUntil, limit) =>
        read(() => {
          const due = [...t.transfers.values()].filter(({ reconcileAt, transfer: x }) =>
            unsettledAt(UnsettledTransfers, x, pendingBefore) &&
            (reconcileAt === undefined || millis(reconcileAt) <= millis(now))
          ).sort((a, b) => millis(a.transfer.createdAt) - millis(b.transfer.createdAt)).slice(0, limit)
          for (const row of due) t.transfers.set(row.transfer.id, { ...row, reconcileAt: leaseUntil })
          return due.map((row) => ({ transfer: row.transfer, attempts: row.attempts }))
        }),
      reconcileLater: (id, attempts, next) =>
        read(() => {
          const row = t.transfers.get(id)
          if (row !== undefined && UnsettledTransfers.all.includes(row.transfer.status)) {
            t.transfers.set(id, { ...row, attempts, reconcileAt: next })
          }
        }),
      pruneKeys: (before, limit) =>
        read(() => {
          const old = [...t.keys].filter(([, r]) => millis(r.startedAt) < millis(before)).slice(0, limit)
          for (const [k] of old) t.keys.delete(k)
          return old.length
        })
    })
  })
)
