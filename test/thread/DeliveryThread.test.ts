import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Either, Exit, Fiber, Layer } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { DeliveryThread, layer } from "../../adapters/thread/DeliveryThread.ts"
import { note, openForNotes, openReceiptFile } from "../../adapters/thread/ReceiptFile.ts"
import type { EventId } from "../../core/webhooks/Webhooks.ts"
import { sendOne } from "../mail/Mailer.contract.ts"

// The main thread's side of the delivery thread, against a stand-in module that speaks its messages
// (echo-worker.mjs): outcomes come back to the send that asked, a thread that dies fails what it held as
// temporary and is started again for the next send, and a thread that cannot start stops the layer. The real
// module is exercised by every black-box mail and webhook suite (the bundles run it).
const worker = new URL("./echo-worker.mjs", import.meta.url)
const thread = (allowHttp: unknown = true) =>
  layer({ worker, smtp: true, webhooks: { allowHttp: allowHttp as boolean, allowPrivate: true } })
const request = (url: string) => ({ url, secret: "whsec_AAAA", id: "evt_1" as EventId, timestamp: 1, body: "{}" })
const mail = (address: string) => ({ to: { name: "Ann", address }, subject: "s", text: "t", html: "h", headers: {} })

describe("DeliveryThread", () => {
  it.scoped("answers each send with its own outcome, a mail's permanence included", () =>
    Effect.gen(function*() {
      const { mailer, webhookSender } = yield* DeliveryThread
      const outcomes = yield* Effect.all([
        webhookSender.send(["ok", "fail", "ok"].map((path) => request(`http://127.0.0.1:9/${path}`))),
        Effect.either(sendOne(mailer, mail("ann@example.com"))),
        Effect.either(sendOne(mailer, mail("refused@example.com")))
      ], { concurrency: "unbounded" })
      assert.deepStrictEqual(outcomes[0], [200, 503, 200])
      assert.isTrue(Either.isRight(outcomes[1]))
      assert.deepStrictEqual(
        Either.getLeft(outcomes[2]).pipe((l) => l._tag === "Some" ? l.value : undefined)?.permanent,
        true
      )
    }).pipe(Effect.provide(thread())))

  it.scopedLive("a thread that dies fails the sends it held as temporary, and the next send starts another", () =>
    Effect.gen(function*() {
      const { mailer, webhookSender } = yield* DeliveryThread
      const held = yield* Effect.fork(webhookSender.send([request("http://127.0.0.1:9/hang")]))
      yield* Effect.sleep("50 millis")
      const [died] = yield* webhookSender.send([request("http://127.0.0.1:9/exit")])
      assert.match(String(died), /the delivery thread stopped/)
      const [first] = yield* Fiber.join(held)
      assert.match(String(first), /the delivery thread stopped/)
      const again = yield* Effect.either(sendOne(mailer, mail("ann@example.com")))
      assert.isTrue(Either.isRight(again))
    }).pipe(Effect.provide(thread())))

  it.effect("a thread that cannot start stops the layer with its message", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(Effect.scoped(Layer.build(thread("fail-at-start"))))
      assert.isTrue(Exit.isFailure(exit))
      assert.match(String(Exit.isFailure(exit) ? exit.cause : ""), /bad SMTP_URL/)
    }))

  it.scoped("with a receipt file: answers the notes left unsettled, and settles them", () =>
    Effect.gen(function*() {
      const receipts = join(mkdtempSync(join(tmpdir(), "paysub-receipts-")), "mail-receipts")
      const before = openReceiptFile(receipts)
      note(openForNotes(receipts), before.take(41)!, 41)
      before.close()
      const built = yield* Layer.build(
        layer({ worker, smtp: true, webhooks: { allowHttp: true, allowPrivate: true }, receipts })
      )
      const thread = Context.get(built, DeliveryThread)
      assert.deepStrictEqual(yield* thread.receipts.unsettled, [41])
      yield* thread.receipts.settle([41])
      assert.deepStrictEqual(openReceiptFile(receipts).unsettled, [])
    }))

  it.effect("a receipt file that cannot be opened stops the layer, naming the setting", () =>
    Effect.gen(function*() {
      const receipts = join(mkdtempSync(join(tmpdir(), "paysub-receipts-")), "missing-dir", "mail-receipts")
      const options = { worker, smtp: true, webhooks: { allowHttp: true, allowPrivate: true }, receipts }
      const exit = yield* Effect.exit(Effect.scoped(Layer.build(layer(options))))
      assert.match(String(Exit.isFailure(exit) ? exit.cause : ""), /MAIL_RECEIPTS_FILE: cannot open/)
    }))
})
