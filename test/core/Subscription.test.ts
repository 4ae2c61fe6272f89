import { assert, describe, it } from "@effect/vitest"
import { Arbitrary, Either, Schema } from "effect"
import * as fc from "effect/FastCheck"
import {
  decideSubscribe,
  Event,
  MailThrottle,
  MaxNameLength,
  SubscriberName,
  SubscriptionStatus,
  transition
} from "../../core/subscriptions/Subscription.ts"
import { controlChar, hasControl, trimmable } from "./arbitraries.ts"

const decodeName = Schema.decodeUnknownEither(SubscriberName)
const nameOf = Schema.decodeUnknownSync(SubscriberName)
const rejectsName = (input: string) =>
  assert.isTrue(Either.isLeft(decodeName(input)), `accepted ${JSON.stringify(input)}`)

// Printable text: whole graphemes (astral ones included), no control characters, nothing trim() removes at
// the ends. `maxLength` counts graphemes, so the UTF-16 length is checked separately where it matters.
const printable = (maxLength: number) =>
  fc.string({ unit: "grapheme", minLength: 1, maxLength }).filter((s) =>
    s.trim() === s && s.length > 0 && !hasControl(s)
  )
const visibleChar = fc.constantFrom("a", "Z", "9", "é", "ß", "Ж", "漢", "😀", "-", "'", ".")

describe("SubscriberName", () => {
  it.prop(
    "the schema's own values are trimmed, non-empty, short and free of control characters",
    [SubscriberName],
    ([name]) => {
      assert.strictEqual(name, name.trim())
      assert.isAbove(name.length, 0)
      assert.isAtMost(name.length, MaxNameLength)
      assert.isFalse(hasControl(name))
      assert.strictEqual(nameOf(name), name)
    }
  )

  it.prop("whatever it decodes is trimmed, non-empty, at most 100 long and free of control characters", [
    fc.oneof(fc.string({ unit: "binary", maxLength: 120 }), fc.string({ maxLength: 120 }), printable(110))
  ], ([input]) => {
    const result = decodeName(input)
    if (Either.isRight(result)) {
      assert.strictEqual(result.right, input.trim())
      assert.isAbove(result.right.length, 0)
      assert.isAtMost(result.right.length, MaxNameLength)
      assert.isFalse(hasControl(result.right))
    } else {
      const t = input.trim()
      assert.isTrue(t.length === 0 || t.length > MaxNameLength || hasControl(t), `refused ${JSON.stringify(input)}`)
    }
  })

  it.prop("trims surrounding whitespace", [trimmable, printable(40), trimmable], ([before, name, after]) => {
    assert.strictEqual(nameOf(before + name + after), name)
  })

  it.prop("rejects empty and whitespace-only names", [trimmable], ([blank]) => {
    rejectsName(blank)
  })

  it.prop("rejects more than 100 characters after trimming, accepts exactly 100", [
    fc.string({ unit: visibleChar, minLength: 101, maxLength: 300 }).filter((s) => s.length > MaxNameLength),
    trimmable
  ], ([long, pad]) => {
    rejectsName(long)
    rejectsName(pad + long + pad)
    rejectsName(pad + long.slice(0, MaxNameLength + 1) + pad)
    const hundred = long.slice(0, MaxNameLength)
    // Cutting through a surrogate pair leaves a lone surrogate: still not a control character.
    assert.strictEqual(nameOf(pad + hundred + pad), hundred)
  })

  it.prop("rejects control characters inside a name", [
    printable(20),
    fc.oneof(fc.constantFrom("\r", "\n", "\r\n", "\u0000", "\u0085", "\u007f", "\u001b"), controlChar),
    printable(20)
  ], ([a, control, b]) => {
    rejectsName(a + control + b)
    if (control.trim() === control) {
      // Control characters that trim() leaves alone are refused at the ends too...
      rejectsName(control + a)
      rejectsName(a + control)
    } else {
      // ...while CR, LF, TAB and the like are stripped there, so they never reach the name either.
      assert.strictEqual(nameOf(control + a + control), a)
    }
  })

  it.prop("accepts printable unicode up to 100 UTF-16 units", [printable(100)], ([name]) => {
    fc.pre(name.length <= MaxNameLength)
    assert.strictEqual(nameOf(name), name)
  })
})

describe("transition", () => {
  const status = Arbitrary.make(SubscriptionStatus)
  const event = fc.constantFrom<Event>(Event.Subscribe(), Event.Confirm(), Event.Unsubscribe())
  const events = fc.array(event, { maxLength: 30 })
  const isStatus = Schema.is(SubscriptionStatus)
  // How the store applies events: a refused one (undefined) leaves the subscription as it is.
  const step = (s: SubscriptionStatus, e: Event) => transition(s, e) ?? s
  const trace = (start: SubscriptionStatus, es: ReadonlyArray<Event>) =>
    es.reduce<Array<SubscriptionStatus>>((acc, e) => [...acc, step(acc[acc.length - 1]!, e)], [start])

  it("follows the table", () => {
    const table: Record<SubscriptionStatus, Record<Event["_tag"], SubscriptionStatus | undefined>> = {
      pending: { Subscribe: "pending", Confirm: "active", Unsubscribe: "unsubscribed" },
      active: { Subscribe: "active", Confirm: "active", Unsubscribe: "unsubscribed" },
      unsubscribed: { Subscribe: "pending", Confirm: undefined, Unsubscribe: "unsubscribed" }
    }
    for (const s of SubscriptionStatus.literals) {
      for (const tag of ["Subscribe", "Confirm", "Unsubscribe"] as const) {
        assert.strictEqual(transition(s, Event[tag]()), table[s][tag], `${s} --${tag}-->`)
      }
    }
  })

  it.prop("an Unsubscribe always yields unsubscribed, after any history", [status, events], ([s, es]) => {
    const before = trace(s, es).at(-1)!
    assert.strictEqual(transition(before, Event.Unsubscribe()), "unsubscribed")
  })

  it.prop("a Confirm never revives an unsubscribed address", [status, events], ([s, es]) => {
    const t = trace(s, es)
    es.forEach((e, i) => {
      if (Event.$is("Confirm")(e) && t[i] === "unsubscribed") {
        assert.isUndefined(transition(t[i], e))
        assert.strictEqual(t[i + 1], "unsubscribed")
      }
    })
    assert.isUndefined(transition("unsubscribed", Event.Confirm()))
  })

  it.prop("active is entered only by a Confirm from pending (double opt-in)", [status, events], ([s, es]) => {
    const t = trace(s, es)
    es.forEach((e, i) => {
      if (t[i + 1] === "active" && t[i] !== "active") {
        assert.strictEqual(e._tag, "Confirm")
        assert.strictEqual(t[i], "pending")
      }
    })
  })

  it.prop("only an Unsubscribe takes an active subscription out of active", [status, events], ([s, es]) => {
    const t = trace(s, es)
    es.forEach((e, i) => {
      if (t[i] === "active" && e._tag !== "Unsubscribe") assert.strictEqual(t[i + 1], "active")
    })
    assert.strictEqual(transition("active", Event.Subscribe()), "active")
  })

  it.prop("never yields a status outside the literal set", [status, events], ([s, es]) => {
    let current = s
    for (const e of es) {
      const next = transition(current, e)
      assert.isTrue(next === undefined || isStatus(next))
      current = next ?? current
    }
    assert.isTrue(trace(s, es).every(isStatus))
  })
})

describe("decideSubscribe", () => {
  const existing = fc.constantFrom<SubscriptionStatus | undefined>(undefined, ...SubscriptionStatus.literals)
  const mails = fc.oneof(fc.integer({ min: 0, max: MailThrottle.maxMails + 2 }), fc.nat())

  it.prop(
    "queues a confirmation exactly when the result is pending and the throttle allows it",
    [existing, mails],
    ([e, n]) => {
      const d = decideSubscribe(e, n)
      assert.strictEqual(d.queueConfirmation, d.status === "pending" && n < MailThrottle.maxMails)
      if (d.queueConfirmation) {
        assert.strictEqual(d.status, "pending")
        assert.isBelow(n, MailThrottle.maxMails)
      }
    }
  )

  it.prop("agrees with transition, and renames only what is pending", [existing, mails], ([e, n]) => {
    const d = decideSubscribe(e, n)
    assert.strictEqual(d.status, e === undefined ? "pending" : transition(e, Event.Subscribe()))
    assert.strictEqual(d.updateName, d.status === "pending")
  })

  it.prop("active stays active, without a mail or a rename", [mails], ([n]) => {
    assert.deepStrictEqual(decideSubscribe("active", n), {
      status: "active",
      updateName: false,
      queueConfirmation: false,
      signup: false
    })
  })

  it.prop("counts a signup when an address starts to await its confirmation, mailed or throttled", [
    existing,
    mails
  ], ([e, n]) => {
    assert.strictEqual(decideSubscribe(e, n).signup, e === undefined || e === "unsubscribed")
  })

  // A burst of N requests within one window: every queued confirmation counts against the throttle.
  const burst = (start: SubscriptionStatus | undefined, alreadySent: number, requests: number) => {
    let status = start
    let inWindow = alreadySent
    let sent = 0
    for (let i = 0; i < requests; i++) {
      const d = decideSubscribe(status, inWindow)
      status = d.status
      if (d.queueConfirmation) {
        inWindow++
        sent++
      }
    }
    return { status, sent }
  }

  it.prop("a burst of requests sends at most MailThrottle.maxMails mails", [
    existing,
    fc.integer({ min: 0, max: MailThrottle.maxMails + 2 }),
    fc.integer({ min: 1, max: 50 })
  ], ([start, already, n]) => {
    const { sent, status } = burst(start, already, n)
    assert.isAtMost(sent, MailThrottle.maxMails)
    assert.isAtMost(already + sent, Math.max(already, MailThrottle.maxMails))
    if (start === "active") {
      assert.strictEqual(sent, 0)
      assert.strictEqual(status, "active")
    } else {
      // ...and no fewer than the throttle allows: it is a throttle, not a block.
      assert.strictEqual(sent, Math.min(n, Math.max(0, MailThrottle.maxMails - already)))
      assert.strictEqual(status, "pending")
    }
  })

  it.prop("unsubscribing between requests does not reset the throttle", [
    existing,
    fc.array(fc.constantFrom("Subscribe", "Unsubscribe", "Confirm") as fc.Arbitrary<Event["_tag"]>, {
      minLength: 1,
      maxLength: 60
    })
  ], ([start, tags]) => {
    let status = start
    let sent = 0
    for (const tag of tags) {
      if (tag === "Subscribe") {
        const d = decideSubscribe(status, sent)
        status = d.status
        if (d.queueConfirmation) sent++
      } else if (status !== undefined) {
        status = transition(status, Event[tag]()) ?? status
      }
    }
    assert.isAtMost(sent, MailThrottle.maxMails)
  })
})
