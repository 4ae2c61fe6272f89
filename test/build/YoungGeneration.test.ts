import { assert, describe, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import { nodeStartCommand } from "../../scripts/start-commands.mjs"

// A long export allocates a page of rows and its CSV per turn, and V8 answers a high allocation rate by growing
// the young generation to its maximum, which the process keeps: the export's live heap stays near 27 MB while
// RSS grew by about 90 MB with V8's default. npm start bounds the semi-spaces (bench/export-memory.mjs measures
// the growth), and the node the tests run is given the same bound.
const semiSpaceMb = (flags: ReadonlyArray<string>) => {
  const flag = flags.find((f) => f.startsWith("--max-semi-space-size="))
  return flag === undefined ? undefined : Number(flag.split("=")[1])
}

describe("npm start's node", () => {
  it("bounds the young generation to 8 MB semi-spaces", () => {
    const { flags } = nodeStartCommand()
    const mb = semiSpaceMb(flags)
    assert.isDefined(mb, `npm start runs node ${flags.join(" ")}`)
    assert.isAtMost(mb!, 8)
  })

  it("runs with flags this node accepts", () => {
    const run = spawnSync(process.execPath, [...nodeStartCommand().flags, "-e", "0"], { encoding: "utf8" })
    assert.strictEqual(run.status, 0, run.stderr)
  })
})
