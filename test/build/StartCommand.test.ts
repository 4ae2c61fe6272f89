import { assert, describe, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import os from "node:os"
import { join, resolve } from "node:path"
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

  // glibc gives each thread that allocates an arena of its own, up to 8 per core (the main thread, the delivery
  // thread, V8's and libuv's helpers), and each keeps its freed memory: 2 arenas took the soak's peak RSS from
  // 266 to 229 MB (docs/decisions/0071). Other C libraries ignore the variable.
  it("limits glibc's malloc to 2 arenas, in the app's own process", () => {
    assert.deepStrictEqual(nodeStartCommand().env, { MALLOC_ARENA_MAX: "2" })
    // The script's command after the build, as npm's shell runs it, with a probe in the bundle's place: the
    // variable reaches node, and `exec` leaves one process (the shell's pid is node's).
    const start: string = JSON.parse(readFileSync(resolve(import.meta.dirname, "../../package.json"), "utf8")).scripts
      .start
    const dir = mkdtempSync(join(os.tmpdir(), "paysub-start-"))
    try {
      const probe = join(dir, "probe.mjs")
      writeFileSync(probe, "console.log(JSON.stringify([process.env.MALLOC_ARENA_MAX, process.pid]))")
      const command = start.slice(start.indexOf("&&") + 2).replace("dist/node/main.mjs", probe)
      const run = spawnSync("sh", ["-c", `echo $$; ${command}`], {
        encoding: "utf8",
        env: { ...process.env, PATH: `${resolve(process.execPath, "..")}:${process.env.PATH}` }
      })
      assert.strictEqual(run.status, 0, run.stderr)
      const [shell, answer] = run.stdout.trim().split("\n")
      assert.deepStrictEqual(JSON.parse(answer!), ["2", Number(shell)])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
