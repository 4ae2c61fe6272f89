import { assert, describe, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import { createHash } from "node:crypto"
import { resolve } from "node:path"
import { afterAll, beforeAll } from "vitest"
import { AdminKey, AppProcess, cliBundle } from "../support/AppProcess.ts"
import { createClient, firstApiKey, MerchantApi } from "../support/Payments.ts"

// The CLI (`npm run cli`, its bundle dist/cli/main.mjs) on the database of a running app: what it prints is
// JSON, listings hold no key nor hash, and a rotated or revoked key stops working on the live API at once.
const root = resolve(import.meta.dirname, "../..")

const cli = (args: ReadonlyArray<string>, databaseUrl: string) =>
  new Promise<{ code: number | null; out: string; err: string }>((ok, fail) => {
    const child = spawn(process.execPath, [cliBundle, ...args], {
      cwd: root,
      env: { ...process.env, DATABASE_URL: databaseUrl },
      stdio: "pipe"
    })
    let out = ""
    let err = ""
    child.stdout.on("data", (chunk) => (out += chunk))
    child.stderr.on("data", (chunk) => (err += chunk))
    child.on("error", fail)
    child.on("exit", (code) => ok({ code, out, err }))
  })

let app: AppProcess
beforeAll(async () => {
  app = await AppProcess.start()
})
afterAll(async () => {
  await app?.stop()
})

const sha256Hex = (text: string) => createHash("sha256").update(text).digest("hex")

describe("the CLI", () => {
  it("--help lists every command, without opening a database", async () => {
    const { code, out } = await cli(["--help"], "sqlite:/nonexistent-dir/for/paysub.db")
    assert.strictEqual(code, 0)
    for (
      const command of [
        "client create",
        "client list",
        "client revoke",
        "client rotate-key",
        "feed list",
        "subscribers export"
      ]
    ) {
      assert.include(out, command)
    }
    assert.include(out, "feed put")
    assert.include(out, "feed delete")
  })

  it("client list prints the clients as JSON, never a key nor its hash", async () => {
    const firstKey = firstApiKey(app.output)
    const created = await createClient(app, "Acme Listing")
    const { code, out } = await cli(["client", "list"], app.databaseUrl)
    assert.strictEqual(code, 0)
    const listed = JSON.parse(out)
    const acme = listed.clients.find((c: any) => c.id === created.id)
    assert.deepStrictEqual(Object.keys(acme).sort(), ["created", "id", "name", "revoked"])
    assert.strictEqual(acme.name, "Acme Listing")
    assert.strictEqual(acme.revoked, false)
    assert.isAtLeast(listed.clients.length, 2)
    for (const key of [firstKey, created.api_key]) {
      assert.notInclude(out, key)
      assert.notInclude(out, sha256Hex(key))
    }
    assert.notInclude(out, "sk_")
  })

  it("rotate-key prints a new key that works, and the old one stops working; revoke stops it too", async () => {
    const created = await createClient(app, "Rotating")
    const before = new MerchantApi(app.baseUrl, created.api_key)
    assert.strictEqual((await before.balance()).status, 200)

    const rotated = await cli(["client", "rotate-key", created.id], app.databaseUrl)
    assert.strictEqual(rotated.code, 0, rotated.err)
    const { api_key, id } = JSON.parse(rotated.out)
    assert.strictEqual(id, created.id)
    assert.match(api_key, /^sk_[A-Za-z0-9_-]{40,}$/)
    assert.notStrictEqual(api_key, created.api_key)
    assert.strictEqual((await before.balance()).status, 401)
    const after = new MerchantApi(app.baseUrl, api_key)
    assert.strictEqual((await after.balance()).status, 200)

    const revoked = await cli(["client", "revoke", created.id], app.databaseUrl)
    assert.strictEqual(revoked.code, 0, revoked.err)
    assert.strictEqual((await after.balance()).status, 401)
    const listed = JSON.parse((await cli(["client", "list"], app.databaseUrl)).out)
    assert.strictEqual(listed.clients.find((c: any) => c.id === created.id).revoked, true)
  })

  it("fails with exit code 1 and a message for a client that does not exist", async () => {
    const { code, err, out } = await cli(["client", "rotate-key", "cl_000000000000000000000000"], app.databaseUrl)
    assert.strictEqual(code, 1)
    assert.strictEqual(out, "")
    assert.include(err, "No client has the id cl_000000000000000000000000.")
  })

  it("feed put, list and delete", async () => {
    const put = await cli(["feed", "put", "cli-news", "--title", "CLI News"], app.databaseUrl)
    assert.strictEqual(put.code, 0, put.err)
    assert.strictEqual(JSON.parse(put.out).feed.title, "CLI News")
    const listed = JSON.parse((await cli(["feed", "list"], app.databaseUrl)).out)
    assert.include(listed.feeds.map((f: any) => f.name), "cli-news")
    assert.strictEqual((await fetch(`${app.baseUrl}/feeds/cli-news`)).status, 200)
    const deleted = await cli(["feed", "delete", "cli-news"], app.databaseUrl)
    assert.strictEqual(deleted.code, 0, deleted.err)
    assert.strictEqual((await fetch(`${app.baseUrl}/feeds/cli-news`)).status, 404)
  })

  it("subscribers export prints the same CSV as the HTTP export; an unknown feed is exit code 1", async () => {
    const viaHttp = await fetch(`${app.baseUrl}/subscriptions?feed=default`, {
      headers: { authorization: `Bearer ${AdminKey}`, accept: "text/csv" }
    })
    assert.strictEqual(viaHttp.status, 200)
    const exported = await cli(["subscribers", "export", "--feed", "default"], app.databaseUrl)
    assert.strictEqual(exported.code, 0, exported.err)
    assert.strictEqual(exported.out, await viaHttp.text())
    assert.match(exported.out, /^id,email,name,feed,status,created,updated\r\n/)
    const unknown = await cli(["subscribers", "export", "--feed", "no-such-feed"], app.databaseUrl)
    assert.strictEqual(unknown.code, 1)
    assert.include(unknown.err, "No feed is named no-such-feed.")
  })
})
