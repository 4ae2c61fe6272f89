// A separate process for the SQLite multi-process transfer test: opens its own connection to the file given as
// first argument, says "ready", waits for a line on stdin, then for each round i begins the idempotency key
// "key-<i>" (same request hash in every process) and records a transfer with reference "ref-<i>" and its own
// id, passing the key's completion when it got Started. Prints one line "result <json>" with what each round
// answered. Any storage fault fails the process.
import { DateTime, Effect, Either } from "effect"
import { CurrencyCode } from "../../core/Currency.ts"
import { type ClientId, Reference, Transfer, TransferId } from "../../core/Transfer.ts"
import { TransferStore } from "../../core/TransferStore.ts"
import { sqliteTransferStoreOn } from "./TempSqlite.ts"

const [filename, client, rounds, label] = process.argv.slice(2)

interface RoundResult {
  readonly start: string
  readonly recorded: string | null
  readonly existing: string | null
}

// The test computes the same ids: tr_ + "p<label>r<round>" padded with "x" to 24 characters.
const processTransferId = (process: string, round: number) =>
  TransferId.make(`tr_${`p${process}r${round}`.padEnd(24, "x")}`)

const waitForGo = Effect.async<void>((resume) => {
  process.stdin.once("data", () => resume(Effect.void))
})

const program = Effect.gen(function*() {
  const store = yield* TransferStore
  const clientId = client as ClientId
  process.stdout.write("ready\n")
  yield* waitForGo
  const results: Array<RoundResult> = []
  for (let i = 0; i < Number(rounds); i++) {
    const now = DateTime.unsafeMake(Date.now())
    const key = `key-${i}`
    const start = yield* store.beginIdempotent(clientId, key, "hash-same-body", now)
    const transfer = new Transfer({
      id: processTransferId(label!, i),
      clientId,
      reference: Reference.make(`ref-${i}`),
      amount: 1000n + BigInt(i),
      currency: CurrencyCode.make("EUR"),
      status: "approved",
      sender: {
        first_name: "Ann",
        email: "ann@example.com",
        card: { brand: "visa", last4: "4242", exp_month: 12, exp_year: 2030, fingerprint: "fp-ann" }
      },
      recipient: { first_name: "Bob", email: "bob@example.com", merchant_id: "merchant-a" },
      authorizationCode: `AUTH${label}`,
      createdAt: now
    })
    const completion = start._tag === "Started"
      ? { key, response: (t: Transfer) => ({ status: 201, body: JSON.stringify({ id: t.id }) }) }
      : undefined
    const recorded = yield* Effect.either(store.record(transfer, completion))
    results.push({
      start: start._tag,
      recorded: Either.isRight(recorded) ? recorded.right.id : null,
      existing: Either.isLeft(recorded) ? recorded.left.existing : null
    })
  }
  process.stdout.write(`result ${JSON.stringify(results)}\n`)
})

Effect.runPromise(Effect.provide(program, sqliteTransferStoreOn(filename!))).then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`${String(error)}\n`)
    process.exit(1)
  }
)
