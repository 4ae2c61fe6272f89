// What every Mailer that delivers must do, whatever carries the mail. Each adapter under test comes with
// an Inbox that shows what arrived at the other end, turned back into a Mail.
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, type Layer } from "effect"
import type { MailDeliveryFailed } from "../../core/subscriptions/Errors.ts"
import { type Mail, Mailer, type MailerShape, type MailOutcome } from "../../core/subscriptions/Mailer.ts"

export interface InboxShape {
  // Mails that arrived, oldest first. Header names may come back in any case.
  readonly received: Effect.Effect<ReadonlyArray<Mail>>
}

export class Inbox extends Context.Tag("test/MailerContract/Inbox")<Inbox, InboxShape>() {}

const lowerKeys = (headers: Readonly<Record<string, string>>) =>
  Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]))

const assertArrived = (received: Mail, sent: Mail) => {
  assert.strictEqual(received.to.address, sent.to.address)
  assert.strictEqual(received.to.name, sent.to.name)
  assert.strictEqual(received.subject, sent.subject)
  // Transports may add a final line break: only trailing white space is allowed to differ.
  assert.strictEqual(received.text.trimEnd(), sent.text.trimEnd())
  assert.strictEqual(received.html.trimEnd(), sent.html.trimEnd())
  const headers = lowerKeys(received.headers)
  for (const [name, value] of Object.entries(sent.headers)) {
    assert.strictEqual(headers[name.toLowerCase()], value, `header ${name}`)
  }
}

const longUrl = `https://newsletter.example.com/unsubscribe?token=${"Ab3_-".repeat(9)}Ab3&feed=a-rather-long-feed-name`

export const sampleMail = (overrides: Partial<Mail> = {}): Mail => ({
  to: { name: "Ada Lovelace", address: "ada@example.com" },
  subject: "Confirm your subscription to Engines",
  text: "Hello Ada,\n\nplease confirm:\n\nhttps://newsletter.example.com/subscribe/confirm?token=abc\n",
  html:
    "<!doctype html>\n<html><body><p>Hello Ada,</p><p><a href=\"https://newsletter.example.com/subscribe/confirm?token=abc\">Confirm</a></p></body></html>",
  // Longer than one 78-character header line: folded on the wire, one value again on arrival.
  headers: { "List-Unsubscribe": `<${longUrl}>`, "List-Unsubscribe-Post": "List-Unsubscribe=One-Click" },
  ...overrides
})

// One mail as a batch of one: its failure, if any, is the effect's.
export const sendOne = (mailer: MailerShape, mail: Mail): Effect.Effect<void, MailDeliveryFailed> =>
  Effect.suspend(() => {
    let failure: MailDeliveryFailed | undefined
    return Effect.flatMap(
      mailer.sendAll([mail], (outcome) => (failure = outcome.failure)),
      () => failure === undefined ? Effect.void : Effect.fail(failure)
    )
  })

export const mailerContract = <E>(name: string, makeLayer: () => Layer.Layer<Mailer | Inbox, E>): void => {
  describe(`Mailer contract: ${name}`, () => {
    const run = <A, E2>(self: Effect.Effect<A, E2, Mailer | Inbox>) => Effect.provide(self, makeLayer())

    it.scoped("delivers a mail to its recipient with subject, text, html and headers", () =>
      run(
        Effect.gen(function*() {
          const mailer = yield* Mailer
          const inbox = yield* Inbox
          const mail = sampleMail()
          yield* sendOne(mailer, mail)
          const received = yield* inbox.received
          assert.lengthOf(received, 1)
          assertArrived(received[0]!, mail)
        })
      ))

    it.scoped("keeps non-ASCII names, subjects and bodies intact", () =>
      run(
        Effect.gen(function*() {
          const mailer = yield* Mailer
          const inbox = yield* Inbox
          const mail = sampleMail({
            to: { name: "Zoë Ørsted-Łukasiewicz", address: "zoe@example.org" },
            subject: "Bestätigen Sie Ihr Abonnement für „Grüße“ ✉",
            text: "Grüße, Zoë!\n\n日本語のテキスト — and a very long line ".concat("x".repeat(200), "\n"),
            html: "<p>Grüße, Zoë! 日本語 &amp; more</p>"
          })
          yield* sendOne(mailer, mail)
          const received = yield* inbox.received
          assert.lengthOf(received, 1)
          assertArrived(received[0]!, mail)
        })
      ))

    it.scoped("delivers a batch, reports each mail's outcome once by its index, and ends once all have come", () =>
      run(
        Effect.gen(function*() {
          const mailer = yield* Mailer
          const inbox = yield* Inbox
          const mails = Array.from({ length: 5 }, (_, i) =>
            sampleMail({ to: { name: `Reader ${i}`, address: `reader${i}@example.com` }, subject: `Mail ${i}` }))
          const outcomes: Array<MailOutcome> = []
          yield* mailer.sendAll(mails, (outcome) =>
            outcomes.push(outcome))
          assert.sameMembers(outcomes.map((o) => o.index), [0, 1, 2, 3, 4])
          assert.deepStrictEqual(outcomes.filter((o) => o.failure !== undefined), [])
          yield* mailer.sendAll([], () => outcomes.push({ index: -1 }))
          assert.lengthOf(outcomes, 5, "an empty batch reports nothing")
          const received = yield* inbox.received
          assert.lengthOf(received, mails.length)
          for (const mail of mails) {
            const arrived = received.filter((r) => r.subject === mail.subject)
            assert.lengthOf(arrived, 1, mail.subject)
            assertArrived(arrived[0]!, mail)
          }
        })
      ))

    it.scoped("sends the same mail twice when asked twice (no hidden de-duplication)", () =>
      run(
        Effect.gen(function*() {
          const mailer = yield* Mailer
          const inbox = yield* Inbox
          const mail = sampleMail()
          yield* sendOne(mailer, mail)
          yield* sendOne(mailer, mail)
          assert.lengthOf(yield* inbox.received, 2)
        })
      ))
  })
}
