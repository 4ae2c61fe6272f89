import { SqlClient } from "@effect/sql/SqlClient"
import { assert, describe, it, layer } from "@effect/vitest"
import { Context, DateTime, Effect, Layer, Option } from "effect"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { IdempotencyKey, RequestHash } from "../../core/payments/Idempotency.ts"
import { ClientId, Transfer, TransferId } from "../../core/payments/Transfer.ts"
import { TransferStore } from "../../core/payments/TransferStore.ts"
import { runProcesses } from "./Processes.ts"
import { sqliteTransferStoreOn, tempDir, tempSqliteTransferStore } from "./TempSqlite.ts"
import { transfer } from "./TwoPools.ts"

// The storage contracts run once on SQLite, in IndexedStatements.sqlite.test.ts, which EXPLAINs every statement
// they issue.

// The amount column holds SQLite INTEGERs (so SUM adds integers, never floats), exact beyond 2^53 although
// the driver would read them as rounded JS numbers; the adapter reads them as text.
layer(tempSqliteTransferStore())("SQLite transfers.amount", (it) => {
  it.effect("is stored as an exact INTEGER and read back exactly", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const store = yield* TransferStore
      const client = ClientId.make(`cl_${"amount".padEnd(24, "x")}`)
      const id = TransferId.make(`tr_${"amount".padEnd(24, "x")}`)
      yield* store.createClient({ id: client, name: "Amount" }, "hash-amount", DateTime.unsafeMake(0))
      yield* store.record(transfer(client, "amount", "amount", 9_007_199_254_740_993n, DateTime.unsafeMake(0)))
      const rows = yield* sql<{ raw: unknown; text: string; kind: string }>`
        SELECT amount AS raw, CAST(amount AS TEXT) AS text, typeof(amount) AS kind FROM transfers`
      assert.deepStrictEqual(rows.map((r) => [r.text, r.kind]), [["9007199254740993", "integer"]])
      // What a plain read gives: a rounded number. The store must not return that.
      assert.strictEqual(rows[0]!.raw, 9_007_199_254_740_992)
      assert.strictEqual(Option.getOrThrow(yield* store.get(client, id)).amount, 9_007_199_254_740_993n)
    }))
})

interface RoundResult {
  readonly start: string
  readonly replayed: string | null
  readonly recorded: string | null
  readonly existing: string | null
}

const transferProcess = fileURLToPath(new URL("./TransferProcess.ts", import.meta.url))
const processTransferId = (kind: "p" | "q", label: string, round: number) =>
  `tr_${`${kind}${label}r${round}`.padEnd(24, "x")}`

// Separate processes, each with its own connection, as several app instances on one file would be. In every
// round all processes record a transfer with one reference under one idempotency key and one body, then one
// with another shared reference and no key, so both the key and the references are raced across processes.
describe("SQLite transfer storage across processes", () => {
  it.live(
    "processes racing keyed and plain records: one Started a key, one row a reference, the rest replay or name it",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const dir = yield* tempDir
        const filename = join(dir, "transfers.db")
        const context = yield* Layer.build(sqliteTransferStoreOn(filename))
        const store = Context.get(context, TransferStore)
        const sql = Context.get(context, SqlClient)
        const client = ClientId.make(`cl_${"racer".padEnd(24, "x")}`)
        yield* store.createClient({ id: client, name: "Racer" }, "hash-racer", DateTime.unsafeMake(Date.now()))
        const processes = 4
        const rounds = 40
        const results = yield* runProcesses(
          transferProcess,
          processes,
          (i) => [filename, client, String(rounds), `${i}`]
        ).pipe(Effect.timeout("50 seconds"))
        const perProcess = results.map((result, i) => {
          assert.strictEqual(result.code, 0, `process ${i} failed:\n${result.stderr}`)
          const line = result.stdout.split("\n").find((l) => l.startsWith("result "))
          assert.isDefined(line, `process ${i} printed no result:\n${result.stdout}`)
          return JSON.parse(line!.slice("result ".length)) as ReadonlyArray<RoundResult>
        })
        for (let round = 0; round < rounds; round++) {
          const answers = perProcess.map((p) => p[round]!)
          const starters = answers.flatMap((a, i) => (a.start === "Started" ? [i] : []))
          assert.lengthOf(starters, 1, `round ${round}: starts ${answers.map((a) => a.start)}`)
          const keyed = processTransferId("p", String(starters[0]), round)
          for (const a of answers) {
            assert.include(["Started", "InProgress", "Replay"], a.start, `round ${round}`)
            if (a.start === "Replay") assert.strictEqual(a.replayed, keyed, `round ${round}`)
          }
          const rows = yield* sql<{ id: string }>`SELECT id FROM transfers WHERE reference = ${`ref-${round}`}`
          assert.deepStrictEqual(rows.map((r) => r.id), [keyed], `round ${round}`)
          const again = yield* store.reserve(
            new Transfer({
              ...Option.getOrThrow(yield* store.get(client, TransferId.make(keyed))),
              id: TransferId.make(processTransferId("p", "x", round)),
              status: "pending"
            }),
            {
              key: IdempotencyKey.make(`key-${round}`),
              requestHash: RequestHash.make("hash-same-body"),
              requestId: "req-again"
            }
          )
          assert.strictEqual(
            again._tag === "Replay" && again.answer._tag === "TransferMade" ? again.answer.transferId : again._tag,
            keyed as string
          )
          const winners = answers.flatMap((a, i) => (a.recorded === null ? [] : [i]))
          assert.lengthOf(winners, 1, `round ${round}: one plain record succeeds`)
          const plain = processTransferId("q", String(winners[0]), round)
          assert.strictEqual(answers[winners[0]!]!.recorded, plain)
          for (const [i, a] of answers.entries()) {
            if (i !== winners[0]) assert.strictEqual(a.existing, plain, `round ${round} process ${i}`)
          }
        }
        const counts = yield* sql<{ transfers: unknown; keys: unknown }>`
          SELECT (SELECT count(*) FROM transfers) AS transfers, (SELECT count(*) FROM idempotency_keys) AS keys`
        assert.deepStrictEqual([Number(counts[0]!.transfers), Number(counts[0]!.keys)], [2 * rounds, rounds])
      })),
    60_000
  )
})
