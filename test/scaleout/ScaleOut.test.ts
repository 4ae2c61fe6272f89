// Scale-out: two app processes on one PostgreSQL database, hit at once, as behind a load balancer. What one
// process guarantees with its own transactions must hold across both: one transfer per Idempotency-Key and
// per reference, one subscription per address, each confirmation mail sent once by the two outbox workers,
// exact balances, and nothing half-written when one of them is killed in the middle of a load.
//
// PostgreSQL only (TEST_DATABASE=postgres, as `npm test` sets it for its second run): several processes on
// one SQLite file are not a supported deployment.
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import http from "node:http"
import type { AddressInfo } from "node:net"
import { createConnection } from "node:net"
import { resolve } from "node:path"
import { afterAll, beforeAll } from "vitest"
import { migrations as migrationList } from "../../adapters/sql/Migrations.ts"
import { MailThrottle } from "../../core/subscriptions/Subscription.ts"
import { AppProcess, freePort, nodeAppCommand, nodeAppEnv, postForm, testDatabase } from "../support/AppProcess.ts"
import {
  accountUri,
  createClient,
  firstApiKey,
  MerchantApi,
  type Received,
  reconcileEnv,
  toMinor,
  transferBody,
  uniqueReference,
  unlimitedEnv
} from "../support/Payments.ts"
import { createTestDatabase } from "../support/Postgres.ts"
import { SmtpTestServer } from "../support/SmtpTestServer.ts"
import { TestProcessor } from "../support/TestProcessor.ts"

const onPostgres = testDatabase !== "sqlite"
const root = resolve(import.meta.dirname, "../..")
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

// A response, or what happened instead (an instance killed under the request).
type Outcome = Received | { readonly status: 0; readonly error: string }
const attempt = (request: Promise<Received>): Promise<Outcome> =>
  request.catch((e: unknown) => ({ status: 0 as const, error: String((e as Error).cause ?? e) }))

const summary = (responses: ReadonlyArray<Outcome>) => {
  const counts = new Map<string, number>()
  for (const r of responses) {
    const label = "text" in r ? `${r.status} ${r.json?.error?.code ?? ""}`.trim() : `failed: ${r.error}`
    counts.set(label, (counts.get(label) ?? 0) + 1)
  }
  return [...counts].map(([label, n]) => `${n} x ${label}`).join("; ")
}

const exponents: Record<string, number> = { USD: 2, EUR: 2, JPY: 0 }

// Runs `tasks` with at most `limit` at a time; `onSettled` sees each result as it comes.
const pool = async <A>(tasks: ReadonlyArray<() => Promise<A>>, limit: number, onSettled: (a: A) => void) => {
  const results: Array<A> = new Array(tasks.length)
  let next = 0
  const worker = async () => {
    while (next < tasks.length) {
      const i = next++
      results[i] = await tasks[i]!()
      onSettled(results[i]!)
    }
  }
  await Promise.all(Array.from({ length: limit }, worker))
  return results
}

// An HTTP proxy to `target` that holds every request for `delayMs` first: a card network that takes its
// time, so that a kill lands while transfers wait for it.
const slowProxy = async (target: string, delayMs: number) => {
  const server = http.createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () =>
      setTimeout(() => {
        const upstream = http.request(
          new URL(request.url ?? "/", target),
          { method: request.method ?? "POST", headers: request.headers },
          (answer) => {
            response.writeHead(answer.statusCode ?? 502, answer.headers)
            answer.pipe(response)
          }
        )
        upstream.on("error", () => response.writeHead(502).end())
        upstream.end(Buffer.concat(chunks))
      }, delayMs))
  })
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((ok) => server.close(() => ok()))
  }
}

describe.skipIf(!onPostgres)(
  `scale-out: two app instances on one PostgreSQL database${
    onPostgres ? "" : " (skipped: runs with TEST_DATABASE=postgres or mariadb only)"
  }`,
  () => {
    let smtp: SmtpTestServer
    let apps: ReadonlyArray<AppProcess> = []
    let apis: ReadonlyArray<MerchantApi> = []
    // Request i goes to instance i % 2.
    const api = (i: number) => apis[i % 2]!
    const app = (i: number) => apps[i % 2]!
    const query = <A = Record<string, unknown>>(sql: string, ...params: ReadonlyArray<unknown>) =>
      apps[0]!.query<A>(sql, ...params)

    beforeAll(async () => {
      smtp = await SmtpTestServer.start()
      const env = { ...unlimitedEnv, MAIL_TRANSPORT: "smtp", SMTP_URL: smtp.url }
      const first = await AppProcess.start({ env })
      const second = await AppProcess.start({ env, databaseUrl: first.databaseUrl })
      apps = [first, second]
      const key = firstApiKey(first.output)
      apis = apps.map((a) => new MerchantApi(a.baseUrl, key))
    }, 120_000)
    afterAll(async () => {
      await Promise.all(apps.map((a) => a.stop()))
      await smtp?.stop()
    })

    it("share one database: the second instance made no client of its own, the first one's key works on both", async () => {
      assert.notInclude(apps[1]!.output, "shown only now")
      assert.deepStrictEqual(query("SELECT count(*) AS n FROM api_clients"), [{ n: 1 }])
      for (const a of apis) assert.strictEqual((await a.balance()).status, 200)
    })

    it("50 identical requests with one Idempotency-Key over both: one transfer; each answer is its 201 or 409 idempotency_key_in_use", async () => {
      const idempotencyKey = uniqueReference("scale-key")
      const body = transferBody()
      const reference = body.payment_transfer.reference as string
      const responses = await Promise.all(
        Array.from({ length: 50 }, (_, i) => api(i).create(body, { idempotencyKey }))
      )
      const created = responses.filter((r) => r.status === 201)
      const inUse = responses.filter((r) => r.status === 409)
      assert.strictEqual(created.length + inUse.length, 50, summary(responses))
      assert.isAtLeast(created.length, 1, summary(responses))
      assert.strictEqual(new Set(created.map((r) => r.text)).size, 1, "every 201 is the same response")
      for (const r of inUse) assert.strictEqual(r.json.error.code, "idempotency_key_in_use", r.text)
      const id = created[0]!.json.payment_transfer.id
      assert.deepStrictEqual(query("SELECT id, status FROM transfers WHERE reference = ?", reference), [
        { id, status: "approved" }
      ])
      assert.deepStrictEqual(
        query("SELECT answer, transfer_id FROM idempotency_keys WHERE idempotency_key = ?", idempotencyKey),
        [{ answer: "transfer_made", transfer_id: id }]
      )
      // Afterwards either instance replays it.
      for (const a of apis) {
        const again = await a.create(body, { idempotencyKey })
        assert.strictEqual(again.status, 201)
        assert.strictEqual(again.text, created[0]!.text)
        assert.strictEqual(again.headers.get("idempotent-replayed"), "true")
      }
    })

    it("50 transfers with one reference over both (distinct keys or none): one transfer, 49 x 409 duplicate_reference", async () => {
      const reference = uniqueReference("scale-ref")
      const responses = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          api(i).create(
            transferBody({ reference, amount: `${i + 1}.00` }),
            i % 3 === 0 ? {} : { idempotencyKey: uniqueReference(`scale-ref-key-${i}`) }
          ))
      )
      const created = responses.filter((r) => r.status === 201)
      assert.lengthOf(created, 1, summary(responses))
      const id = created[0]!.json.payment_transfer.id
      const duplicates = responses.filter((r) => r.status === 409)
      assert.lengthOf(duplicates, 49, summary(responses))
      for (const r of duplicates) {
        assert.strictEqual(r.json.error.code, "duplicate_reference", r.text)
        assert.strictEqual(r.json.error.param, "payment_transfer.reference")
        assert.include(r.json.error.message, id)
      }
      const rows = query<{ id: string; status: string; amount: string }>(
        "SELECT id, status, CAST(amount AS TEXT) AS amount FROM transfers WHERE reference = ?",
        reference
      )
      assert.deepStrictEqual(rows, [{
        id,
        status: "approved",
        amount: String(toMinor(created[0]!.json.payment_transfer.amount, 2))
      }])
    })

    it("50 subscribes of one address over both: one subscription, at most 3 mails, each queued mail sent once", async () => {
      const email = `scale.one.${process.pid}.${Date.now()}@example.com`
      const responses = await Promise.all(
        Array.from({ length: 50 }, (_, i) => postForm(app(i).baseUrl, "/subscribe", { name: `Sam ${i}`, email }))
      )
      assert.deepStrictEqual([...new Set(responses.map((r) => r.status))], [200])
      const ids = new Set(await Promise.all(responses.map(async (r) => ((await r.json()) as any).subscription.id)))
      assert.strictEqual(ids.size, 1)
      assert.lengthOf(query("SELECT id FROM subscriptions WHERE email = ?", email), 1)
      await smtp.waitFor((m) => m.envelope.to.includes(email), 10_000)
      await sleep(3_000)
      const mails = smtp.messages.filter((m) => m.envelope.to.includes(email)).length
      const outbox = query<{ sent: boolean }>(
        "SELECT sent_at IS NOT NULL AS sent FROM mail_outbox WHERE subscription_id = ?",
        [...ids][0]
      )
      assert.isAtLeast(mails, 1)
      assert.isAtMost(mails, MailThrottle.maxMails)
      assert.isAtMost(outbox.length, MailThrottle.maxMails)
      assert.isTrue(outbox.every((row) => row.sent), "every queued mail was sent")
      assert.strictEqual(mails, outbox.length, "one mail per outbox row")
    })

    it("30 subscribes of 30 addresses over both: each address gets exactly one confirmation mail", async () => {
      const emails = Array.from({ length: 30 }, (_, i) => `scale.many.${i}.${process.pid}.${Date.now()}@example.com`)
      const responses = await Promise.all(
        emails.map((email, i) => postForm(app(i).baseUrl, "/subscribe", { name: `Reader ${i}`, email }))
      )
      assert.deepStrictEqual([...new Set(responses.map((r) => r.status))], [200])
      await Promise.all(emails.map((email) => smtp.waitFor((m) => m.envelope.to.includes(email), 20_000)))
      await sleep(2_500)
      for (const email of emails) {
        const mails = smtp.messages.filter((m) => m.envelope.to.includes(email))
        assert.lengthOf(mails, 1, `${email} got ${mails.length} mails`)
      }
      const rows = query<{ n: number; sent: number }>(
        `SELECT count(*) AS n, count(o.sent_at) AS sent FROM mail_outbox o JOIN subscriptions s ON s.id = o.subscription_id
         WHERE s.email LIKE ?`,
        `scale.many.%.${process.pid}.%`
      )
      assert.deepStrictEqual(rows, [{ n: 30, sent: 30 }])
    })

    it("the balance on either instance is the exact sum of the amounts of the 2xx answers of a mixed load", async () => {
      const client = await createClient(apps[0]!, `scale-balance-${process.pid}`)
      const mine = apis.map((a) => a.withKey(client.api_key))
      const sent: Array<Promise<Received>> = []
      const replayKeys: Array<string> = []
      const duplicated: Array<string> = []
      for (let i = 0; i < 80; i++) {
        // Every 7th transfer is near the per-transfer limit, all to one merchant in USD, so that this
        // total passes 2^53 minor units (where a sum in JS numbers would round).
        const big = i % 7 === 0
        const currency = big ? "USD" : ["USD", "EUR", "JPY"][i % 3]!
        const merchant = big ? "merchant-big" : `merchant-${i % 4}`
        const amount = big
          ? "9999999999999.99"
          : currency === "JPY"
          ? String(100 + i)
          : `${i}.${String(i % 100).padStart(2, "0")}`
        const declined = !big && i % 5 === 4
        const body = transferBody({
          amount,
          currency,
          sender_account_uri: accountUri(
            declined ? "4000000000000002" : i % 2 ? "5555555555554444" : "4242424242424242"
          ),
          recipient: { first_name: "Bob", email: "bob@example.com", merchant_id: merchant }
        })
        const target = mine[i % 2]!
        if (i % 6 === 1) {
          // The same key twice, once to each instance.
          const key = uniqueReference("scale-balance-key")
          replayKeys.push(key)
          sent.push(
            target.create(body, { idempotencyKey: key }),
            mine[(i + 1) % 2]!.create(body, { idempotencyKey: key })
          )
        } else if (i % 6 === 3) {
          // The same reference twice, with another amount the second time.
          duplicated.push(body.payment_transfer.reference as string)
          const again = transferBody({ ...(body.payment_transfer as any), amount: currency === "JPY" ? "7" : "7.77" })
          sent.push(target.create(body), mine[(i + 1) % 2]!.create(again))
        } else {
          sent.push(target.create(body))
        }
      }
      const responses = await Promise.all(sent)
      const statuses = new Set(responses.map((r) => r.status))
      for (const status of statuses) assert.include([201, 402, 409], status, summary(responses))
      assert.isTrue(statuses.has(201) && statuses.has(402) && statuses.has(409), summary(responses))
      // Each transfer once, however many 2xx answers carried it (idempotent replays).
      const transfers = new Map<string, any>()
      for (const r of responses) {
        if (r.status >= 200 && r.status < 300) transfers.set(r.json.payment_transfer.id, r.json)
      }
      const expected = new Map<string, bigint>()
      for (const { payment_transfer: t } of transfers.values()) {
        const k = `${t.recipient.merchant_id} ${t.currency}`
        expected.set(k, (expected.get(k) ?? 0n) + toMinor(t.amount, exponents[t.currency]!))
      }
      assert.isTrue([...expected.values()].some((v) => v > 2n ** 53n), "some total passes 2^53")
      for (const a of mine) {
        const balance = await a.balance()
        assert.strictEqual(balance.status, 200, balance.text)
        const actual = new Map<string, bigint>(
          balance.json.balances.map((
            b: any
          ) => [`${b.merchant_id} ${b.currency}`, toMinor(b.amount, exponents[b.currency]!)])
        )
        assert.deepStrictEqual(
          [...actual].sort(([x], [y]) => x.localeCompare(y)),
          [...expected].sort(([x], [y]) => x.localeCompare(y)),
          a.baseUrl
        )
      }
      const stored = query<{ n: number }>(
        "SELECT count(*) AS n FROM transfers t JOIN api_clients c ON c.id = t.client_id WHERE c.id = ? AND t.status = 'approved'",
        client.id
      )
      assert.deepStrictEqual(stored, [{ n: transfers.size }])
    })

    it(
      "kill -9 of one instance in the middle of 200 transfers: every 201 is stored approved with its amount, nothing is half-written, the survivor reconciles what was cut off",
      {
        timeout: 180_000
      },
      async () => {
        // A pair of its own on a database of its own, behind a card network that takes 150 ms, so that the
        // kill finds transfers waiting for it. The card network's time-out is 5 s here (the lease past it), not
        // reconcileEnv's 1 s: on a loaded machine a survivor's call can take over 1 s and answer 202, which is
        // right, but this test is about what the kill leaves, and the survivor must answer all it was sent.
        const processor = await TestProcessor.start()
        const slow = await slowProxy(processor.url, 150)
        const env = {
          ...unlimitedEnv,
          ...reconcileEnv,
          CARD_NETWORK_TIMEOUT_MS: "5000",
          RECONCILE_LEASE_MS: "6500",
          CARD_NETWORK: "http",
          CARD_NETWORK_URL: slow.url
        }
        const victim = await AppProcess.start({ env })
        const survivor = await AppProcess.start({ env, databaseUrl: victim.databaseUrl })
        try {
          // No sandbox, so no first client: one through the CLI.
          const { api_key: key } = await createClient(victim, "kill-suite")
          const pair = [new MerchantApi(victim.baseUrl, key), new MerchantApi(survivor.baseUrl, key)]
          const requests = Array.from({ length: 200 }, (_, i) => {
            const body = transferBody({
              reference: uniqueReference(`kill-${i}`),
              amount: `${1 + i}.${String(i % 100).padStart(2, "0")}`
            })
            return { i, body, reference: body.payment_transfer.reference as string, instance: i % 2 }
          })
          let settled = 0
          let killed: Promise<void> | undefined
          const outcomes = await pool(
            requests.map((r) => () => attempt(pair[r.instance]!.create(r.body))),
            24,
            () => {
              if (++settled === 70) killed = victim.kill9()
            }
          )
          await killed
          const byReference = new Map(requests.map((r, n) => [r.reference, { ...r, outcome: outcomes[n]! }]))
          const answered = [...byReference.values()].filter((r) => r.outcome.status === 201)
          const unanswered = [...byReference.values()].filter((r) => r.outcome.status !== 201)
          // The survivor answered everything it was sent; the victim some before it died.
          for (const r of unanswered) {
            assert.strictEqual(r.instance, 0, `request ${r.i} to the survivor: ${summary([r.outcome])}`)
            assert.strictEqual(r.outcome.status, 0, `request ${r.i}: ${summary([r.outcome])}`)
          }
          assert.isAtLeast(unanswered.length, 1, "the kill cut some requests off")
          assert.isAtLeast(answered.filter((r) => r.instance === 0).length, 1, "the victim answered some first")

          // The survivor reconciles what the victim left pending (past the lease) through the processor.
          const cutOff = `kill-%-${process.pid}-%`
          const unsettled = () =>
            survivor.query(
              "SELECT id FROM transfers WHERE status IN ('pending', 'unknown') AND reference LIKE ?",
              cutOff
            )
          const deadline = Date.now() + 30_000
          while (unsettled().length > 0 && Date.now() < deadline) await sleep(250)
          assert.lengthOf(unsettled(), 0, "nothing is left pending or unknown")

          type Row = Record<string, string | number | null>
          const rows = survivor.query<Row>(
            "SELECT *, CAST(amount AS TEXT) AS amount_text FROM transfers WHERE reference LIKE ?",
            `kill-%-${process.pid}-%`
          )
          const required = [
            "id",
            "client_id",
            "reference",
            "amount",
            "currency",
            "status",
            "sender_first_name",
            "sender_email",
            "card_brand",
            "card_last4",
            "card_exp_month",
            "card_exp_year",
            "card_fingerprint",
            "recipient_first_name",
            "recipient_email",
            "recipient_merchant_id",
            "created_at"
          ]
          const rowOf = new Map<string, Row>()
          for (const row of rows) {
            for (const column of required) assert.isNotNull(row[column], `${row.reference}: ${column} is NULL`)
            const request = byReference.get(row.reference as string)
            assert.isDefined(request, `a row for no request: ${row.reference}`)
            const sent = request!.body.payment_transfer as any
            assert.strictEqual(row.amount_text, String(toMinor(sent.amount, 2)), `${row.reference}: amount`)
            assert.strictEqual(row.sender_middle_name, sent.sender.middle_name)
            assert.strictEqual(row.recipient_merchant_id, sent.recipient.merchant_id)
            assert.strictEqual(row.card_last4, "4242")
            if (row.status === "approved") {
              assert.isNull(row.failure_code)
              assert.isNotNull(row.authorization_code, `${row.reference}: approved, no code`)
            } else {
              // Reserved, never received by the processor: reconciled as declined, nothing charged.
              assert.strictEqual(row.status, "declined", `${row.reference}: ${row.status}`)
              assert.strictEqual(row.failure_code, "processing_error")
              assert.isNotNull(row.reconciled_at)
              assert.isNull(row.authorization_code)
            }
            rowOf.set(row.reference as string, row)
          }
          assert.strictEqual(rowOf.size, rows.length, "one row per reference")
          for (const r of answered) {
            const row = rowOf.get(r.reference)
            assert.isDefined(row, `request ${r.i} got a 201 but its transfer is not stored`)
            assert.strictEqual(row!.id, (r.outcome as Received).json.payment_transfer.id)
            assert.strictEqual(row!.status, "approved", `request ${r.i} got a 201`)
          }
          const reconciled = rows.filter((row) => row.reconciled_at !== null)
          for (const row of reconciled) {
            const request = byReference.get(row.reference as string)!
            assert.notStrictEqual(request.outcome.status, 201, `${row.reference} was reconciled although it got a 201`)
          }
          // Every authorization the processor made has its approved record.
          const authorized = new Set(
            processor.requests.filter((r) => r.handling === "decided").map((r) => r.transferId)
          )
          for (const row of rows) assert.strictEqual(authorized.has(row.id as string), row.status === "approved")
          const approvedUnanswered = unanswered.filter((r) => rowOf.get(r.reference)?.status === "approved")
          console.log(
            `kill -9 after 70 of 200 answers: ${answered.length} x 201 (${
              answered.filter((r) => r.instance === 0).length
            } from the killed instance), ${unanswered.length} cut off; of those ${reconciled.length} reconciled ` +
              `after the kill, ${approvedUnanswered.length} approved, ${
                unanswered.length - rowOf.size + answered.length
              } not stored`
          )

          // A client retrying a cut-off request on the survivor: a new transfer if nothing was stored; the
          // reconciled outcome of a transfer its request never settled; otherwise 409 duplicate_reference naming
          // what its request settled (only the answer was lost).
          for (const r of unanswered) {
            const retry = await pair[1]!.create(r.body)
            const row = rowOf.get(r.reference)
            if (row === undefined) assert.strictEqual(retry.status, 201, retry.text)
            else if (row.reconciled_at !== null) {
              assert.strictEqual(retry.status, row.status === "approved" ? 201 : 402, retry.text)
              const id = retry.status === 201 ? retry.json.payment_transfer.id : retry.json.error.transfer
              assert.strictEqual(id, row.id)
            } else {
              assert.strictEqual(retry.status, 409, retry.text)
              assert.include(retry.json.error.message, row.id as string)
            }
            assert.lengthOf(survivor.query("SELECT id FROM transfers WHERE reference = ?", r.reference), 1)
          }
        } finally {
          await survivor.stop()
          await victim.stop()
          await slow.close()
          await processor.stop()
        }
      }
    )

    it("two instances never reconcile one transfer twice: 40 unknown outcomes, each looked up and settled once", {
      timeout: 120_000
    }, async () => {
      const processor = await TestProcessor.start()
      const env = { ...unlimitedEnv, ...reconcileEnv, CARD_NETWORK: "http", CARD_NETWORK_URL: processor.url }
      const first = await AppProcess.start({ env })
      const second = await AppProcess.start({ env, databaseUrl: first.databaseUrl })
      try {
        const { api_key: key } = await createClient(first, "reconcile-suite")
        const pair = [new MerchantApi(first.baseUrl, key), new MerchantApi(second.baseUrl, key)]
        const n = 40
        processor.hangNext(n)
        const accepted = await Promise.all(
          Array.from(
            { length: n },
            (_, i) =>
              pair[i % 2]!.create(
                transferBody({ sender_account_uri: accountUri(i % 4 === 0 ? "4000000000000002" : "4242424242424242") })
              )
          )
        )
        assert.deepStrictEqual(accepted.map((r) => r.status), Array(n).fill(202), summary(accepted))
        const ids = accepted.map((r) => r.json.payment_transfer.id as string)
        // Both reconcilers ask while the processor has not decided; then it decides all at once.
        await sleep(1_500)
        processor.decideHung()
        for (const [i, id] of ids.entries()) {
          const settled = await pair[(i + 1) % 2]!.settled(id)
          assert.strictEqual(settled.status, i % 4 === 0 ? "declined" : "approved")
        }
        await sleep(1_500)
        for (const id of ids) assert.strictEqual(processor.decisionsLookedUp(id), 1, id)
        assert.strictEqual(processor.authorizations, n)
      } finally {
        await second.stop()
        await first.stop()
        await processor.stop()
      }
    })

    // A deployment starts its instances together: both run the migrations on the empty database at once (the
    // migrator locks its table) and both may make the sandbox's first client (ensureFirst checks, then
    // creates): each key printed works on both.
    it("two instances started at the same moment on an empty database both come up on one schema", {
      timeout: 120_000
    }, async () => {
      const database = await createTestDatabase()
      const started = await Promise.allSettled(
        [0, 1].map(() => AppProcess.start({ env: unlimitedEnv, databaseUrl: database.url }))
      )
      const pair = started.flatMap((s) => (s.status === "fulfilled" ? [s.value] : []))
      try {
        for (const s of started) if (s.status === "rejected") throw s.reason
        const migrations = pair[0]!.query<{ n: number }>("SELECT count(*) AS n FROM effect_sql_migrations")
        // Every migration of the list, each run once.
        assert.deepStrictEqual(migrations, [{ n: (await Effect.runPromise(migrationList)).length }])
        const keys = pair.flatMap((a) => (a.output.includes("shown only now") ? [firstApiKey(a.output)] : []))
        assert.isAtLeast(keys.length, 1)
        const clients = pair[0]!.query<{ n: number }>("SELECT count(*) AS n FROM api_clients")[0]!.n
        assert.strictEqual(clients, keys.length, "one client per printed key")
        if (keys.length > 1) console.log("both instances made a first API client (ensureFirst is check-then-create)")
        for (const key of keys) {
          for (const a of pair) assert.strictEqual((await new MerchantApi(a.baseUrl, key).balance()).status, 200)
        }
      } finally {
        await Promise.all(pair.map((a) => a.stop()))
        await database.drop()
      }
    })

    // Regression test: the Node app used to listen before its app layer was built, and a request that arrived
    // in between was accepted and never answered. It now builds the app first and opens the port last, so the
    // very first connection the port accepts (polled every 5 ms from the spawn, its request sent at once) is
    // answered, whatever the app's log says by then.
    it("the first request an instance accepts while it starts is answered (not left hanging)", {
      timeout: 120_000
    }, async () => {
      const database = await createTestDatabase()
      let child: ChildProcess | undefined
      try {
        const port = await freePort()
        const [command, ...args] = nodeAppCommand
        child = spawn(command!, args, {
          cwd: root,
          env: {
            ...process.env,
            ...nodeAppEnv,
            PORT: String(port),
            // vitest puts its own BASE_URL ("/") in process.env, which the app refuses at start.
            BASE_URL: `http://127.0.0.1:${port}`,
            DATABASE_URL: database.url,
            SUBSCRIBE_RATE_LIMIT: "0"
          },
          stdio: "ignore"
        })
        const deadline = Date.now() + 30_000
        let answer: string | undefined
        while (answer === undefined && Date.now() < deadline) {
          const result = await new Promise<"refused" | string>((ok) => {
            const socket = createConnection({ host: "127.0.0.1", port })
            socket.once("error", () => ok("refused"))
            socket.once("connect", () => {
              let received = ""
              socket.on("data", (chunk) => (received += chunk))
              socket.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
              // Answered within 10 s, or never.
              const timer = setTimeout(() => (socket.destroy(), ok(received.split("\r\n")[0] ?? "")), 10_000)
              socket.once("end", () => (clearTimeout(timer), ok(received.split("\r\n")[0] ?? "")))
            })
          })
          if (result === "refused") await sleep(5)
          else answer = result
        }
        assert.isDefined(answer, "the port never opened")
        assert.strictEqual(answer, "HTTP/1.1 200 OK", "the first request the starting app accepted got no answer")
      } finally {
        if (child?.exitCode === null) child.kill("SIGKILL")
        await sleep(200)
        await database.drop()
      }
    })
  }
)
