import { assert, describe, it } from "@effect/vitest"
import { existsSync } from "node:fs"
import { resolve } from "node:path"
import { AppProcess } from "../support/AppProcess.ts"

// A setting that cannot be read stops the service at start, with a message naming the variable, instead of
// a service running on something the operator did not mean (a mistyped DATABASE_URL was a SQLite file).
const root = resolve(import.meta.dirname, "../..")

const startFails = async (env: Record<string, string>) => {
  const error = await AppProcess.start({ env }).then(
    async (app) => {
      await app.stop()
      return undefined
    },
    (e: Error) => e.message
  )
  assert.isDefined(error, `the app started with ${JSON.stringify(env)}`)
  assert.match(error!, /^app exited with [1-9]/)
  return error!
}

const badDatabaseUrls = ["postgress://root@127.0.0.1:5432/db", "http://x", "sqlite3://data/x.db", "redis://x/0"]
const badSettings: ReadonlyArray<readonly [string, string, RegExp]> = [
  ["PORT", "99999", /PORT/],
  ["PORT", "abc", /PORT/],
  ["MAIL_CONCURRENCY", "0", /MAIL_CONCURRENCY must be at least 1/],
  ["MAX_BODY_BYTES", "0", /MAX_BODY_BYTES must be an integer of at least 1/],
  ["MAX_BODY_BYTES", "64k", /MAX_BODY_BYTES/],
  ["PENDING_TTL_DAYS", "0", /PENDING_TTL_DAYS/],
  ["HTTP_TRACE", "yes", /HTTP_TRACE.*on, off/],
  ["MAIL_TRANSPORT", "sendmail", /MAIL_TRANSPORT.*console, smtp/],
  ["CARD_NETWORK", "visa", /CARD_NETWORK.*sandbox, http/],
  ["BASE_URL", "example.org", /BASE_URL must be an absolute http/],
  ["SUBSCRIBE_RATE_LIMIT", "-1", /SUBSCRIBE_RATE_LIMIT/]
]

describe("settings checked at start", () => {
  it("a DATABASE_URL of a scheme no adapter knows stops the service, naming the accepted forms", async () => {
    const errors = await Promise.all(badDatabaseUrls.map((url) => startFails({ DATABASE_URL: url })))
    for (const error of errors) {
      assert.match(error, /DATABASE_URL/)
      assert.match(error, /postgres:\/\/.*sqlite:PATH/)
    }
    assert.isFalse(existsSync(resolve(root, "postgress:")), "a SQLite file was made from the URL")
    assert.isFalse(existsSync(resolve(root, "http:")), "a SQLite file was made from the URL")
  }, 60_000)

  it("a setting that cannot be read stops the service, naming the variable", async () => {
    const errors = await Promise.all(badSettings.map(([name, value]) => startFails({ [name]: value })))
    badSettings.forEach(([name, value, expected], i) => assert.match(errors[i]!, expected, `${name}=${value}`))
  }, 60_000)
})
