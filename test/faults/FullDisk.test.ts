import { assert, describe, it } from "@effect/vitest"
import Database from "better-sqlite3"
import { spawnSync } from "node:child_process"
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import { AppProcess } from "../support/AppProcess.ts"
import { firstApiKey, MerchantApi, transferBody, unlimitedEnv } from "../support/Payments.ts"

// SQLite on a 10 MB tmpfs that a filler file then fills: writes answer 503 service_unavailable (never 500), reads
// and the transfer they read are unaffected, /readyz says 503, and once the filler is gone the same process
// takes writes again; the file passes PRAGMA integrity_check. Mounting needs root (CAP_SYS_ADMIN).
const dir = mkdtempSync(join(tmpdir(), "paysub-fulldisk-"))
const mounted = process.platform === "linux" &&
  spawnSync("mount", ["-t", "tmpfs", "-o", "size=10m", "tmpfs", dir]).status === 0
if (!mounted) {
  console.warn(`FullDisk: skipped, cannot mount a tmpfs at ${dir} (needs root on Linux)`)
}

const fill = (file: string) => {
  const fd = openSync(file, "w")
  const chunk = Buffer.alloc(64 * 1024, 1)
  try {
    for (;;) writeSync(fd, chunk)
  } catch {
    // ENOSPC: the disk is full
  } finally {
    closeSync(fd)
  }
}

describe.skipIf(!mounted)("a full disk under SQLite", () => {
  it("answers writes 503, reads 200, /readyz 503, and recovers without a restart", async () => {
    const app = await AppProcess.start({
      env: { ...unlimitedEnv, DATABASE_URL: `sqlite:${join(dir, "paysub.db")}` },
      dataDir: dir
    })
    const filler = join(dir, "filler")
    try {
      const api = new MerchantApi(app.baseUrl, firstApiKey(app.output))
      const before = await api.create(transferBody(), { idempotencyKey: "before-full" })
      assert.strictEqual(before.status, 201)
      const id = before.json.payment_transfer.id
      fill(filler)
      const statuses = new Map<number, number>()
      const count = (status: number) => statuses.set(status, (statuses.get(status) ?? 0) + 1)
      let readsFailed = 0
      let unavailable: Awaited<ReturnType<MerchantApi["create"]>> | undefined
      for (let i = 0; i < 60; i++) {
        const [write, one, list, ready] = await Promise.all([
          api.create(transferBody(), { idempotencyKey: `full-${i}` }),
          api.transfer(id),
          api.list({ limit: 5 }),
          fetch(`${app.baseUrl}/readyz`)
        ])
        count(write.status)
        if (write.status === 503) unavailable = write
        if (one.status !== 200 || list.status !== 200) readsFailed++
        count(1000 + ready.status)
      }
      console.log("FullDisk: statuses while full (1xxx: /readyz)", Object.fromEntries(statuses))
      assert.isFalse(statuses.has(500), "no 500")
      assert.isAbove(statuses.get(503) ?? 0, 0)
      assert.strictEqual(readsFailed, 0)
      assert.isAbove(statuses.get(1503) ?? 0, 0)
      assert.strictEqual(unavailable!.json.error.code, "service_unavailable")
      assert.strictEqual(unavailable!.headers.get("retry-after"), "1")

      rmSync(filler)
      const after = await api.create(transferBody(), { idempotencyKey: "after-full" })
      assert.strictEqual(after.status, 201)
      assert.strictEqual((await fetch(`${app.baseUrl}/readyz`)).status, 200)
      // Besides the access log's line per request, the outage is one line down and one back.
      const lines = app.output.split("\n").filter((l) => l.trim() !== "" && !/ \d{3} [\d.]+ ms/.test(l))
      console.log(`FullDisk: ${lines.length} log lines besides the access log:\n${lines.join("\n")}`)
      assert.isAtMost(lines.length, 50)
    } finally {
      await app.stop()
      rmSync(filler, { force: true })
    }
    const db = new Database(join(dir, "paysub.db"), { readonly: true })
    try {
      assert.deepStrictEqual(db.pragma("integrity_check"), [{ integrity_check: "ok" }])
    } finally {
      db.close()
    }
  }, 120_000)
})

afterAll(() => {
  if (mounted) spawnSync("umount", [dir])
})
