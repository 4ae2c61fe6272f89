import { assert, describe, it } from "@effect/vitest"
import { DateTime, Either, Schema } from "effect"
import * as fc from "effect/FastCheck"
import { CreateTransferPayload } from "../../../apps/http/transfers/TransfersApi.ts"
import { ClientId, pendingTransfer, Transfer, TransferId } from "../../../core/payments/Transfer.ts"
import { mutated, validTransfer } from "../../support/Mutations.ts"

// pendingTransfer builds the reserved transfer without the schema's check: what it is made of (a decoded
// request, ids, the amount, the fingerprint, the time) must make a valid Transfer whatever the request held.
const decode = Schema.decodeUnknownEither(CreateTransferPayload)
const valid = Schema.is(Schema.Struct(Transfer.fields))
const alphanumeric = fc.stringMatching(/^[0-9A-Za-z]{24}$/)

describe("the reserved transfer", () => {
  it.prop("made of any request that decodes, is a valid Transfer", [
    mutated(validTransfer).map((m) => m.body),
    alphanumeric,
    alphanumeric,
    fc.bigInt({ min: 1n, max: 10n ** 15n }),
    fc.option(fc.string(), { nil: undefined }),
    fc.date({ min: new Date(0), max: new Date(4e12), noInvalidDate: true })
  ], ([body, id, client, amount, hash, at]) => {
    const request = decode(body)
    if (Either.isLeft(request)) return
    const transfer = pendingTransfer(
      ClientId.make(`cl_${client}`),
      TransferId.make(`tr_${id}`),
      request.right.payment_transfer,
      amount,
      "fp_3kT9wQ2mZx",
      DateTime.unsafeMake(at),
      hash
    )
    assert.isTrue(valid(transfer), JSON.stringify(body))
  }, { fastCheck: { numRuns: 1000 } })
})
