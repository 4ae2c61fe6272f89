// A separate process for the SQLite multi-process transfer test: opens its own connection to the file given as
// first argument, says "ready", waits for a line on stdin, then for each round i begins the idempotency key
// records a transfer with reference "ref-<i>" and its own id under the idempotency key "key-<i>" (same request
// hash in every process), then one with reference "plain-<i>" and no key. Prints one line "result <json>" with
// what each round answered. Any storage fault fails the process.
import { DateTime, Effect, Either } from "effect"
import { CurrencyCode } from "../../core/payments/Currency.ts"
import { IdempotencyKey, RequestHash } from "../../core/payments/Idempotency.ts"
import { type ClientId, Reference, Transfer, TransferId } from "../../core/payments/Transfer.ts"
import { TransferStore } from "../../core/payments/TransferStore.ts"
import { sqliteTransferStoreOn } from "./TempSqlite.ts"

const [filename, client, rounds, label] = process.argv.slice(2)

interface RoundResult {
  readonly start: string
  // The transfer a replay names.
  readonly replayed: string | null
  readonly recorded: string | null
  readonly existing: string | null
}

// The test computes the same ids: tr_ + "p<label>r<round>" (keyed) or "q<label>r<round>" (plain) padded with
// "x" to 24 characters.
const processTransferId = (kind: "p" | "q", process: string, round: number) =>
  TransferId.make(`tr_${`${kind}${process}r${round}`.padEnd(24, "x")}`)

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
    const transfer = (kind: "p" | "q", reference: string) =>
      new Transfer({
        id: processTransferId(kind, label!, i),
        clientId,
        reference: Reference.make(reference),
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
    const claim = {
      key: IdempotencyKey.make(`key-${i}`),
      requestHash: RequestHash.make("hash-same-body"),
      requestId: `req-${label}`
    }
    const start = yield* store.record(transfer("p", `ref-${i}`), claim)
    const plain = yield* Effect.either(store.record(transfer("q", `plain-${i}`)))
    results.push({
      start: start._tag,
      replayed: start._tag === "Replay" && start.answer._tag === "TransferMade" ? start.answer.transferId : null,
      recorded: Either.isRight(plain) ? processTransferId("q", label!, i) : null,
      existing: Either.isLeft(plain) ? plain.left.existing : null
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
