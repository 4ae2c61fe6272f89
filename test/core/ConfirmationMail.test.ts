import { assert, describe, it } from "@effect/vitest"
import { Arbitrary, DateTime, Duration, Schema } from "effect"
import * as fc from "effect/FastCheck"
import { Email } from "../../core/shared/Email.ts"
import { confirmationMail, confirmUrl, unsubscribeUrl } from "../../core/subscriptions/ConfirmationMail.ts"
import { FeedName } from "../../core/subscriptions/Feed.ts"
import {
  SubscriberName,
  Subscription,
  SubscriptionId,
  SubscriptionStatus
} from "../../core/subscriptions/Subscription.ts"
import { ConfirmTokenTtl, Token } from "../../core/subscriptions/Token.ts"
import { validEmail } from "./arbitraries.ts"

const isName = Schema.is(SubscriberName)

const script = fc.constantFrom(
  "<script>alert(1)</script>",
  "<script>",
  "\"><script>alert(document.cookie)</script>",
  "<img src=x onerror=alert(1)>",
  "' onmouseover='alert(1)",
  "&lt;script&gt;"
)
const plainName = fc.oneof(
  fc.constant("Ann"),
  fc.string({ unit: "grapheme", minLength: 1, maxLength: 30 }),
  fc.string({ minLength: 1, maxLength: 30 })
)
const name = fc
  .oneof(
    plainName,
    fc.tuple(fc.string({ maxLength: 20 }), script, fc.string({ maxLength: 20 })).map(([a, s, b]) => a + s + b)
  )
  .map((s) => s.trim())
  .filter(isName)
const scriptName = fc
  .tuple(fc.string({ maxLength: 20 }), script, fc.string({ maxLength: 20 }))
  .map(([a, s, b]) => (a + s + b).trim())
  .filter((s) => isName(s) && /[<>"']/.test(s))

const subscription = fc
  .record({
    id: fc.integer({ min: 1, max: 2 ** 31 }),
    name,
    email: validEmail,
    feed: Arbitrary.make(FeedName),
    status: Arbitrary.make(SubscriptionStatus),
    at: fc.integer({ min: 0, max: 2 ** 42 })
  })
  .map(
    (r) =>
      new Subscription({
        id: SubscriptionId.make(r.id),
        name: SubscriberName.make(r.name),
        email: Schema.decodeSync(Email)(r.email),
        feed: r.feed,
        status: r.status,
        createdAt: DateTime.unsafeMake(r.at),
        updatedAt: DateTime.unsafeMake(r.at)
      })
  )
const baseUrl = fc.webUrl({ withQueryParameters: false, withFragments: false }).map((u) => u.replace(/\/+$/, ""))

const input = fc.record({
  baseUrl,
  subscription,
  feedTitle: fc.oneof(fc.string(), fc.constant("Weekly <b>news</b> & \"more\"")),
  confirmToken: Arbitrary.make(Token),
  unsubscribeToken: Arbitrary.make(Token)
})

// One pass, so that "&amp;lt;" becomes "&lt;" and not "<".
const unescapeHtml = (s: string) =>
  s.replace(
    /&(amp|lt|gt|quot|#39|ldquo|rdquo);/g,
    (_, e: string) => ({ amp: "&", lt: "<", gt: ">", quot: "\"", "#39": "'", ldquo: "\u201c", rdquo: "\u201d" })[e]!
  )
const hrefs = (html: string) => [...html.matchAll(/href="([^"]*)"/g)].map((m) => unescapeHtml(m[1]!))
const count = (s: string, c: string) => s.split(c).length - 1

// The markup of a mail whose variable parts hold nothing special: any other mail must have the same tags.
const reference = confirmationMail({
  baseUrl: "https://example.com",
  subscription: new Subscription({
    id: SubscriptionId.make(1),
    name: SubscriberName.make("Ann"),
    email: Schema.decodeSync(Email)("ann@example.com"),
    feed: FeedName.make("news"),
    status: "pending",
    createdAt: DateTime.unsafeMake(0),
    updatedAt: DateTime.unsafeMake(0)
  }),
  feedTitle: "News",
  confirmToken: Token.make("a".repeat(43)),
  unsubscribeToken: Token.make("b".repeat(43))
}).html

const checkLink = (link: string, base: string, path: string, token: string) => {
  assert.isTrue(link.startsWith(base), `${link} does not start with ${base}`)
  assert.include(link, token)
  const url = new URL(link)
  assert.strictEqual(url.origin, new URL(base).origin)
  assert.isTrue(url.pathname.endsWith(path), url.pathname)
  assert.strictEqual(url.searchParams.get("token"), token)
}

describe("confirmationMail", () => {
  it.prop("links start with the base URL and carry their own token", [input], ([i]) => {
    fc.pre(i.confirmToken !== i.unsubscribeToken)
    const confirm = confirmUrl(i.baseUrl, i.confirmToken)
    const unsubscribe = unsubscribeUrl(i.baseUrl, i.unsubscribeToken)
    checkLink(confirm, i.baseUrl, "/subscribe/confirm", i.confirmToken)
    checkLink(unsubscribe, i.baseUrl, "/unsubscribe", i.unsubscribeToken)
    assert.notInclude(confirm, i.unsubscribeToken)
    assert.notInclude(unsubscribe, i.confirmToken)

    const mail = confirmationMail(i)
    const lines = mail.text.split("\n")
    assert.include(lines, confirm)
    assert.include(lines, `Unsubscribe: ${unsubscribe}`)
    assert.deepStrictEqual(hrefs(mail.html), [confirm, unsubscribe])
  })

  it.prop("sets the RFC 8058 one-click unsubscribe headers", [input], ([i]) => {
    fc.pre(i.confirmToken !== i.unsubscribeToken)
    const { headers } = confirmationMail(i)
    assert.strictEqual(headers["List-Unsubscribe"], `<${unsubscribeUrl(i.baseUrl, i.unsubscribeToken)}>`)
    assert.strictEqual(headers["List-Unsubscribe-Post"], "List-Unsubscribe=One-Click")
    const inner = /^<([^<>\s]+)>$/.exec(headers["List-Unsubscribe"]!)
    assert.isNotNull(inner)
    checkLink(inner![1]!, i.baseUrl, "/unsubscribe", i.unsubscribeToken)
    assert.notInclude(headers["List-Unsubscribe"]!, i.confirmToken)
    for (const value of Object.values(headers)) assert.notMatch(value, /[\r\n]/)
  })

  it.prop("addresses the subscriber and names the feed", [input], ([i]) => {
    const mail = confirmationMail(i)
    assert.deepStrictEqual(mail.to, { name: i.subscription.name, address: i.subscription.email })
    assert.include(mail.subject, i.feedTitle)
    assert.include(mail.text, `Hello ${i.subscription.name},`)
    assert.include(mail.text, `${Duration.toHours(ConfirmTokenTtl)} hours`)
    const shown = unescapeHtml(mail.html)
    assert.include(shown, `Hello ${i.subscription.name},`)
    assert.include(shown, `\u201c${i.feedTitle}\u201d at ${i.subscription.email}`)
  })

  it.prop("the html part never contains a raw <script> from the name", [input, scriptName], ([i, n]) => {
    const mail = confirmationMail({
      ...i,
      subscription: new Subscription({ ...i.subscription, name: SubscriberName.make(n) })
    })
    assert.notInclude(mail.html, n)
    assert.notInclude(mail.html.toLowerCase(), "<script")
    assert.notInclude(mail.html.toLowerCase(), "<img")
  })

  it.prop("no input adds markup: tags, quotes and entities are those of the template", [input], ([i]) => {
    const { html } = confirmationMail(i)
    for (const c of ["<", ">", "\""]) assert.strictEqual(count(html, c), count(reference, c), `count of ${c}`)
    assert.deepStrictEqual(html.match(/<\/?[a-z!]+/gi), reference.match(/<\/?[a-z!]+/gi))
    // Every "&" starts an entity: nothing the subscriber typed can open one of its own.
    assert.notMatch(html, /&(?!(amp|lt|gt|quot|#39|ldquo|rdquo);)/)
  })
})
