import { assert, describe, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { freePort } from "../support/AppProcess.ts"

// A service manager or a container runtime that runs `npm start` (or `npm run start:deno`) stops it with a
// SIGTERM to npm. npm forwards it to the shell it ran the script in; the script execs the app, so the signal
// reaches the app, which shuts down gracefully and frees its port. APP_RUNTIME picks the script, as it picks
// the app for the other black-box suites.
const root = resolve(import.meta.dirname, "../..")
const script = process.env.APP_RUNTIME === "deno" ? "start:deno" : "start"

const answers = (url: string) => fetch(url, { signal: AbortSignal.timeout(2_000) }).then((r) => r.ok, () => false)

describe(`npm run ${script}`, () => {
  it("stops the app itself on the SIGTERM npm gets", { timeout: 90_000 }, async () => {
    const port = await freePort()
    const dataDir = mkdtempSync(join(tmpdir(), "paysub-npm-start-"))
    const healthz = `http://127.0.0.1:${port}/healthz`
    const npm = spawn("npm", ["run", "--silent", script], {
      cwd: root,
      // BASE_URL: vitest puts its own ("/") in process.env, which the app refuses at start.
      env: {
        ...process.env,
        PORT: String(port),
        BASE_URL: `http://127.0.0.1:${port}`,
        DATABASE_URL: `sqlite:${join(dataDir, "paysub.db")}`
      },
      stdio: "ignore",
      // Its own process group, so that the cleanup below also ends an app that outlived npm.
      detached: true
    })
    const exited = new Promise<number | null>((r) => npm.once("exit", (code) => r(code)))
    try {
      const deadline = Date.now() + 60_000
      while (!(await answers(healthz))) {
        assert.isNull(npm.exitCode, `npm run ${script} exited before the app answered`)
        assert.isBelow(Date.now(), deadline, `the app did not answer on ${healthz} within 60 s`)
        await new Promise((r) => setTimeout(r, 200))
      }
      npm.kill("SIGTERM")
      await exited
      // npm may exit as soon as it has passed the signal on: the app gets a few seconds to close.
      const closeBy = Date.now() + 10_000
      while (Date.now() < closeBy && (await answers(healthz))) await new Promise((r) => setTimeout(r, 200))
      assert.isFalse(await answers(healthz), "the app still answers 10 s after npm got SIGTERM")
    } finally {
      try {
        process.kill(-npm.pid!, "SIGKILL")
      } catch {
        // the group is gone already
      }
    }
  })
})
