import { assert, describe, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import { existsSync } from "node:fs"
import { resolve } from "node:path"
import { unsupportedNode } from "../../apps/node/SupportedNode.ts"

// The Node app refuses a Node outside package.json's engines, naming the version it found. The bundle is also
// started on the machine's own node where that one is too old (Node 20 here, which CI replaces with 24).
const bundle = resolve(import.meta.dirname, "../../dist/node/main.mjs")
const systemNode = "/usr/bin/node"
const systemVersion = existsSync(systemNode)
  ? spawnSync(systemNode, ["--version"], { encoding: "utf8" }).stdout.trim().slice(1)
  : ""

describe("the supported Node lines", () => {
  it("are 22 from 22.19, and 24 or newer", () => {
    for (const version of ["22.19.0", "22.23.3", "24.0.0", "24.21.0", "26.1.0"]) {
      assert.isUndefined(unsupportedNode(version), version)
    }
    for (const version of ["18.20.8", "20.20.2", "22.18.0", "23.11.1"]) {
      assert.include(unsupportedNode(version), `this is Node.js ${version}`)
    }
  })

  it.skipIf(systemVersion === "" || unsupportedNode(systemVersion) === undefined)(
    "the app started on an older node exits with a message naming its version",
    () => {
      const run = spawnSync(systemNode, [bundle], { encoding: "utf8", timeout: 20_000, env: { ...process.env } })
      assert.strictEqual(run.status, 1, run.stderr)
      assert.include(run.stderr, `this is Node.js ${systemVersion}`)
      assert.include(run.stderr, "Node.js 24 LTS or 22")
    }
  )
})
