import { assert, describe, it } from "@effect/vitest"
import * as fc from "effect/FastCheck"
import { simpleParser } from "mailparser"
import { compose, parseSender } from "../../adapters/mail/MimeMessage.ts"

// What a mail client reads back from the message (mailparser, as the SMTP tests use) is what was composed.
const text = fc.string({ unit: "binary", maxLength: 400 }).map((s) => s.replace(/\r/g, "").replace(/\0/g, ""))
// Names and subjects hold no control characters (SubscriberName refuses them; feed titles are the operator's).
const line = fc.string({ unit: "binary", minLength: 1, maxLength: 120 }).map((s) =>
  s.replace(/\p{Cc}/gu, " ").replace(/\s+/g, " ").trim() || "x"
)
// The extra headers the service sends are URLs and tokens (List-Unsubscribe): printable ASCII.
const asciiLine = fc.string({ minLength: 1, maxLength: 300 }).map((s) => s.replace(/\s+/g, " ").trim() || "x")
const address = fc.constantFrom("ann@example.com", "b.o+b@mail.example.org")

describe("compose (the raw confirmation mail)", () => {
  it("round-trips names, subject, text, HTML and headers through a MIME parser", () =>
    fc.assert(
      fc.asyncProperty(line, line, text, text, address, asciiLine, async (name, subject, body, html, to, header) => {
        const { messageId, raw } = compose(
          parseSender("News Letter <no-reply@example.com>"),
          { to: { name, address: to }, subject, text: body, html, headers: { "X-Test": header } },
          new Date("2026-11-23T10:00:00Z"),
          "id-1",
          "=_boundary"
        )
        for (const l of raw.split("\r\n")) assert.isAtMost(l.length, 998)
        const parsed = await simpleParser(raw)
        const [recipient] = Array.isArray(parsed.to) ? parsed.to[0]!.value : parsed.to!.value
        assert.strictEqual(recipient!.address, to)
        assert.strictEqual(recipient!.name, name)
        assert.strictEqual(parsed.subject, subject)
        assert.strictEqual(parsed.from!.value[0]!.name, "News Letter")
        assert.strictEqual(parsed.from!.value[0]!.address, "no-reply@example.com")
        assert.strictEqual((parsed.text ?? "").replace(/\n$/, ""), body.replace(/\n$/, ""))
        assert.strictEqual(
          typeof parsed.html === "string" ? parsed.html.replace(/\n$/, "") : "",
          html.replace(/\n$/, "")
        )
        assert.strictEqual(parsed.headers.get("x-test"), header)
        assert.strictEqual(parsed.messageId, "<id-1@example.com>")
        assert.strictEqual(messageId, "<id-1@example.com>")
        assert.strictEqual(parsed.date?.toISOString(), "2026-11-23T10:00:00.000Z")
      }),
      { numRuns: 300 }
    ))

  it("reads MAIL_FROM as a name and an address, or an address alone, and refuses anything else", () => {
    assert.deepStrictEqual(parseSender("Newsletter <no-reply@localhost>"), {
      name: "Newsletter",
      address: "no-reply@localhost"
    })
    assert.deepStrictEqual(parseSender(`"Zoë's News" <z@example.com>`), {
      name: "Zoë's News",
      address: "z@example.com"
    })
    assert.deepStrictEqual(parseSender("z@example.com"), { name: "", address: "z@example.com" })
    assert.throws(() => parseSender("not an address"))
    assert.throws(() => parseSender("a <b@c> <d@e>"))
  })
})
