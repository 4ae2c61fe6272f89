import { assert, describe, it } from "@effect/vitest"
import * as fc from "effect/FastCheck"
import { afterAll, beforeAll } from "vitest"
import { AppProcess } from "../support/AppProcess.ts"
import {
  leaks,
  type Mutated,
  mutated,
  type Secrets,
  validSubscription,
  validTransfer,
  withoutTokens
} from "../support/Mutations.ts"
import { firstApiKey, unlimitedEnv } from "../support/Payments.ts"
import { header, parseResponse, RawConnection } from "../support/RawHttp.ts"

// A fuzzer of our own over raw HTTP: valid requests mutated (wrong shapes, card data in the wrong place or as a
// number, deep nesting), sent with odd header fields (media types, Upgrade, Expect, chunked, invalid ids and
// keys), some left incomplete. No answer may be a 5xx, none may hang, no error may repeat a value sent, and no
// answer and no line the app writes may hold card data. FUZZ_RUNS=5000 runs it longer.
const runs = Number(process.env.FUZZ_RUNS ?? 150)
let app: AppProcess
let apiKey: string
const sent: Array<readonly [Secrets, boolean]> = []
const cvcAlone = (m: Mutated) => m.mutations.some((step) => step.endsWith("cvc as number"))
const statuses = new Map<number, number>()

beforeAll(async () => {
  app = await AppProcess.start({ env: { ...unlimitedEnv, HEADERS_TIMEOUT_MS: "1500", REQUEST_TIMEOUT_MS: "3000" } })
  apiKey = firstApiKey(app.output)
})
afterAll(async () => {
  await app?.stop()
})

type Header = readonly [string, string]

interface Case {
  readonly target: "transfer" | "subscribe"
  readonly mutation: Mutated
  readonly encoding: "json" | "form" | "deep"
  readonly headers: ReadonlyArray<Header>
  readonly chunked: boolean
  readonly incomplete: boolean
}

const contentTypes = [
  "application/json",
  "APPLICATION/JSON; charset=UTF-8",
  "application/json;;",
  "application/x-www-form-urlencoded",
  "Application/X-WWW-Form-URLEncoded; charset=utf-8",
  "text/plain",
  "multipart/form-data; boundary=x",
  ""
]

const oddHeaders = (probe: string): fc.Arbitrary<ReadonlyArray<Header>> =>
  fc.subarray<ReadonlyArray<Header>>([
    [["Connection", "Upgrade"], ["Upgrade", "websocket"]],
    [["Expect", "100-continue"]],
    [["Expect", "bogus"]],
    [["X-Request-Id", `${probe} !`]],
    [["Idempotency-Key", `${probe} with spaces`]],
    [["Accept", "text/html"]],
    [["Content-Type", "application/json"]]
  ]).map((groups) => groups.flat())

const caseArb: fc.Arbitrary<Case> = fc.constantFrom("transfer" as const, "subscribe" as const).chain((target) =>
  mutated(target === "transfer" ? validTransfer : validSubscription).chain((mutation) =>
    fc.record({
      target: fc.constant(target),
      mutation: fc.constant(mutation),
      encoding: fc.constantFrom("json" as const, "json" as const, "form" as const, "deep" as const),
      // Half the requests are otherwise well-formed, so that mutations that keep a request valid reach the use cases.
      headers: fc.tuple(
        fc.oneof(
          fc.constant(target === "transfer" ? "application/json" : "application/x-www-form-urlencoded"),
          fc.constantFrom(...contentTypes)
        ),
        fc.oneof(fc.constant([]), oddHeaders(mutation.secrets.probe))
      ).map((
        [type, odd]
      ): ReadonlyArray<Header> => [...(type === "" ? [] : [["Content-Type", type] as Header]), ...odd]),
      chunked: fc.boolean(),
      incomplete: fc.boolean().chain((b) => (b ? fc.boolean() : fc.constant(false)))
    })
  )
)

const bodyOf = (c: Case) => {
  const body = c.mutation.body
  if (c.encoding === "deep") {
    return `{"payment_transfer": ${"[".repeat(5000)}${JSON.stringify(body)}${"]".repeat(5000)}}`
  }
  if (c.encoding === "json" || body === null || typeof body !== "object") return JSON.stringify(body)
  return new URLSearchParams(
    Object.entries(body).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)])
  ).toString()
}

const requestOf = (c: Case, port: number) => {
  const body = Buffer.from(bodyOf(c), "utf8")
  const path = c.target === "transfer" ? "/merchant/transfers/payment" : "/subscribe"
  const headers: Array<Header> = [["Host", `127.0.0.1:${port}`], ...c.headers]
  if (c.target === "transfer") headers.push(["Authorization", `Bearer ${apiKey}`])
  if (!c.headers.some(([n]) => n === "Connection")) headers.push(["Connection", "close"])
  headers.push(
    c.chunked ? ["Transfer-Encoding", "chunked"] : ["Content-Length", String(body.length + (c.incomplete ? 10 : 0))]
  )
  const head = `POST ${path} HTTP/1.1\r\n${headers.map(([n, v]) => `${n}: ${v}\r\n`).join("")}\r\n`
  const payload = c.chunked
    ? Buffer.concat([
      Buffer.from(`${body.length.toString(16)}\r\n`),
      body,
      Buffer.from(c.incomplete ? "\r\n" : "\r\n0\r\n\r\n")
    ])
    : body
  return Buffer.concat([Buffer.from(head, "latin1"), payload])
}

// A CVC sent as a value of its own (a name of four digits) is a name the service shows: it is searched for only
// where it went in as part of the account URI.
const cardDataIn = (text: string, s: Secrets, cvcAlone = false): ReadonlyArray<string> => {
  const found: Array<string> = []
  if (text.includes(s.pan)) found.push("the card number")
  if (!cvcAlone && s.cvc !== String(app.port) && new RegExp(`(?<![0-9])${s.cvc}(?![0-9])`).test(withoutTokens(text))) {
    found.push("the CVC")
  }
  if (text.includes(s.ucaf.slice(0, 12))) found.push("the authentication value")
  return found
}

// The answer after any 100 Continue.
const finalResponse = (received: Buffer, closed: boolean) => {
  let rest = received
  for (;;) {
    const parsed = parseResponse(rest, { closed })
    if (parsed === undefined || parsed.response.status >= 200) return parsed
    rest = rest.subarray(parsed.consumed)
  }
}

describe("fuzz over raw HTTP", () => {
  it("0 5xx, 0 hangs, 0 echoes of the request, 0 card data in any answer", async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, async (c) => {
        sent.push([c.mutation.secrets, cvcAlone(c.mutation)])
        const connection = await RawConnection.open(app.port)
        try {
          await connection.write(requestOf(c, app.port)).catch(() => undefined)
          if (c.incomplete) connection.socket.end()
          const answered = await connection.waitFor(
            () => connection.closed || finalResponse(connection.received, false) !== undefined,
            8_000
          )
          assert.isTrue(answered, `no answer and no close in 8 s: ${c.mutation.mutations.join(", ")}`)
          const parsed = finalResponse(connection.received, connection.closed)
          if (parsed === undefined) {
            assert.isTrue(c.incomplete || connection.received.length === 0, connection.received.toString("latin1"))
            return
          }
          const { response } = parsed
          statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1)
          const text = connection.received.toString("utf8")
          const what = `${c.target} ${c.encoding} [${c.mutation.mutations.join(", ")}] ${
            c.headers.map((h) => h.join(": ")).join("; ")
          }`
          assert.isBelow(response.status, 500, `${what}: ${text}`)
          assert.deepStrictEqual(cardDataIn(text, c.mutation.secrets, cvcAlone(c.mutation)), [], `${what}: ${text}`)
          if (response.status >= 400) {
            // A form's answer page for a person (Accept: text/html) gives back what they typed in the name and
            // e-mail fields, escaped, so that they can correct it: only there may a value of the request appear.
            // Card data may not appear anywhere (checked above, on the whole answer).
            const body = response.body.toString("utf8")
            const page = (header(response, "content-type") ?? "").startsWith("text/html")
              ? body.replace(/(<input id="(?:name|email)"[^>]*) value="[^"]*"/g, "$1")
              : body
            const found = leaks(page, c.mutation.secrets)
            const expected = cvcAlone(c.mutation) ? found.filter((f) => f !== "the CVC") : found
            assert.deepStrictEqual(expected, [], `${what}: ${text}`)
          }
        } finally {
          connection.destroy()
        }
      }),
      { numRuns: runs }
    )
  }, 60_000 + runs * 200)

  it("reached every kind of answer: created, refused as invalid, as unsupported", () => {
    const seen = [...statuses.keys()]
    for (const status of [400, 415]) assert.include(seen, status, JSON.stringify([...statuses]))
    assert.isTrue(seen.some((s) => s === 200 || s === 201), JSON.stringify([...statuses]))
  })

  it("0 card data and no schema dump in the app's output", () => {
    assert.isAtLeast(sent.length, runs)
    const output = app.output
    assert.notMatch(output, /Expected |\bactual\b/)
    // A CVC sent alone as a name by one request is in the output as that name, whoever else sent it as a CVC.
    const shownAsNames = new Set(sent.filter(([, alone]) => alone).map(([s]) => s.cvc))
    for (const [s] of sent) {
      assert.deepStrictEqual(cardDataIn(output, s, shownAsNames.has(s.cvc)), [], output.slice(-2000))
    }
  })
})
