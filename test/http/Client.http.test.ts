import { assert, describe, it } from "@effect/vitest"
import { Effect, Redacted, Schema } from "effect"
import { afterAll, beforeAll } from "vitest"
import { layer, makeClient } from "../../apps/http/Client.ts"
import { PaymentRequired } from "../../apps/http/pipeline/ApiError.ts"
import { CreateTransferPayload } from "../../apps/http/transfers/TransfersApi.ts"
import { AppProcess } from "../support/AppProcess.ts"
import { firstApiKey, transferBody, uniqueReference, unlimitedEnv } from "../support/Payments.ts"

// Black-box through the typed client (apps/http/Client.ts): requests encoded and answers decoded by the very
// HttpApi the server's pipeline is derived from, so a drift between the spec and the wire fails here.
let app: AppProcess
let key: Redacted.Redacted<string>

beforeAll(async () => {
  app = await AppProcess.start({ env: unlimitedEnv })
  key = Redacted.make(firstApiKey(app.output))
})
afterAll(async () => {
  await app?.stop()
})

const run = <A, E>(f: (client: Effect.Effect.Success<ReturnType<typeof makeClient>>) => Effect.Effect<A, E>) =>
  Effect.runPromise(Effect.flatMap(makeClient(app.baseUrl, key), f).pipe(Effect.provide(layer)))

const payload = (overrides: Record<string, unknown> = {}) =>
  Schema.decodeUnknownSync(CreateTransferPayload)(transferBody(overrides))

describe("the typed client", () => {
  it("creates a transfer, reads it back and finds it in the list", async () => {
    const reference = uniqueReference("client")
    const created = await run((c) => c.transfers.create({ payload: payload({ reference }), headers: {} }))
    assert.strictEqual(created.payment_transfer.reference, reference)
    assert.strictEqual(created.payment_transfer.status, "approved")
    const read = await run((c) => c.transfers.get({ path: { id: created.payment_transfer.id }, headers: {} }))
    assert.deepStrictEqual(read, created)
    const list = await run((c) =>
      c.transfers.list({ urlParams: { reference: created.payment_transfer.reference as any } })
    )
    assert.deepStrictEqual(list.data.map((t) => t.id), [created.payment_transfer.id])
  })

  it("gets a declined card as the spec's 402 error, with its card error code", async () => {
    const body = payload({
      reference: uniqueReference("client-402"),
      sender_account_uri: "pan:4000000000000002;exp=2031-01;cvc=123"
    })
    const error = await run((c) => Effect.flip(c.transfers.create({ payload: body, headers: {} })))
    assert.instanceOf(error, PaymentRequired)
    assert.strictEqual((error as PaymentRequired).error.code, "card_declined")
    assert.strictEqual((error as PaymentRequired).error.decline_code, "generic_decline")
  })

  it("reads the public feeds and the health checks", async () => {
    assert.deepStrictEqual(await run((c) => c.meta.healthz()), { status: "ok" } as any)
    // Ready: the storage took a write (on every database and in memory; MariaDB's probe once used PostgreSQL's
    // upsert and answered 503).
    assert.deepStrictEqual(await run((c) => c.meta.readyz()), { status: "ok" } as any)
    const { feeds } = await run((c) => c.feeds.list({ headers: {} }))
    assert.isTrue(feeds.some((f) => f.name === "default"))
  })
})
