import { assert, describe, it } from "@effect/vitest"
import { fork } from "node:child_process"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { AppProcess, postForm, sharedDatabase } from "../support/AppProcess.ts"

// kill -9 under load, again and again: every acknowledged signup gets its mail (none lost), and a crash re-sends
// only the mails still on the wire: the delivery thread notes each mail the server accepted in the receipt file
// before its mark commits, and the next start marks the noted rows sent (docs/decisions/0037). At most one per
// SMTP connection (MAIL_CONCURRENCY, 32) can be on the wire at once, so that is the bound asserted for any one
// crash; most crashes re-send none (the median crash at most 3: the reach, met by the median only).
// KILL9_CYCLES (default 5) sets the number of crashes; the measurement used 20. On PostgreSQL
// (TEST_DATABASE=postgres) the receipt file is set in the app's data directory, as an operator would.
const cycles = Number(process.env.KILL9_CYCLES ?? 5)
const clients = 32
const loadMs = 2_000
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

// The SMTP sink, in a process of its own (smtp-sink-process.mjs): each copy's recipient and when it arrived.
const startSink = async () => {
  const received: Array<{ readonly to: string; readonly at: number }> = []
  const child = fork(fileURLToPath(new URL("./smtp-sink-process.mjs", import.meta.url)))
  const port = await new Promise<number>((ok, fail) => {
    child.once("error", fail)
    child.on("message", (message: { port?: number; received?: typeof received }) => {
      if (message.port !== undefined) ok(message.port)
      for (const r of message.received ?? []) received.push(r)
    })
  })
  return {
    received,
    url: `smtp://u:p@127.0.0.1:${port}`,
    stop: () => new Promise<void>((ok) => (child.once("exit", () => ok()), child.disconnect()))
  }
}

describe("kill -9 under load", () => {
  it(
    `loses no acknowledged mail and re-sends at most the mails in flight per crash, over ${cycles} crashes`,
    async () => {
      const smtp = await startSink()
      const acknowledged = new Map<string, number>()
      // When each app was started: a copy came from the last one started before it arrived.
      const starts: Array<number> = []
      const dataDir = mkdtempSync(join(tmpdir(), "paysub-app-"))
      const env = {
        MAIL_TRANSPORT: "smtp",
        SMTP_URL: smtp.url,
        ...(sharedDatabase ? { MAIL_RECEIPTS_FILE: join(dataDir, "mail-receipts") } : {})
      }
      let app: AppProcess | undefined
      try {
        for (let cycle = 0; cycle < cycles; cycle++) {
          starts.push(performance.timeOrigin + performance.now())
          app = await AppProcess.start({ env, dataDir })
          const base = app.baseUrl
          let sent = 0
          const until = Date.now() + loadMs
          const client = async () => {
            while (Date.now() < until + 1_000) {
              const email = `c${cycle}-${sent++}@example.com`
              const answer = await postForm(base, "/subscribe", { name: "Kim", email }).catch(() => undefined)
              if (answer?.status === 200) acknowledged.set(email, cycle)
            }
          }
          const load = Promise.all(Array.from({ length: clients }, client))
          await sleep(loadMs)
          await app.kill9()
          await load
        }
        starts.push(performance.timeOrigin + performance.now())
        app = await AppProcess.start({ env, dataDir })
        // A mail in flight at a crash is due again once its 60 s lease ends.
        const deadline = Date.now() + 100_000
        const received = () => new Set(smtp.received.map((r) => r.to))
        while (Date.now() < deadline && [...acknowledged.keys()].some((e) => !received().has(e))) await sleep(1_000)
        const copies = new Map<string, Array<number>>()
        for (const { at, to } of smtp.received) copies.set(to, [...(copies.get(to) ?? []), at])
        const lost = [...acknowledged.keys()].filter((e) => !copies.has(e))
        // A mail sent again was marked sent by none of its copies but the last: each earlier copy counts against
        // the crash of the app that sent it (the one started last before it arrived; the next app starts only
        // after the load's last requests, a second after the kill). The last app is not killed: a copy of its
        // followed by another would count past the crashes.
        const duplicates = Array.from({ length: cycles + 1 }, () => 0)
        for (const times of copies.values()) {
          for (const at of times.slice(0, -1)) duplicates[starts.filter((s) => s <= at).length - 1]!++
        }
        const afterLast = duplicates.pop()
        console.log(
          `KillNine: ${acknowledged.size} acknowledged signups over ${cycles} crashes, ${lost.length} mails lost,` +
            ` duplicates per crash: ${duplicates.join(" ")} (by the app not killed: ${afterLast})`
        )
        assert.deepStrictEqual(lost, [])
        assert.strictEqual(afterLast, 0, "the app that was not killed sent no mail twice")
        // Most crashes re-send nothing, or a few; none more than one mail per SMTP connection.
        const sorted = [...duplicates].sort((a, b) => a - b)
        assert.isAtMost(sorted[Math.floor((sorted.length - 1) / 2)]!, 3, "the median crash re-sends at most 3 mails")
        assert.isAtMost(sorted.at(-1)!, 32)
      } finally {
        await app?.stop()
        await smtp.stop()
      }
    },
    300_000
  )
})
