import { assert, describe, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import os from "node:os"
import { join, resolve } from "node:path"
import { denoStartEnv, nodeStartCommand } from "../../scripts/start-commands.mjs"

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
  // 266 to 229 MB on Node and from 304 to 269 MB on Deno (docs/decisions/0071). Other C libraries ignore it.
  for (
    const [script, bundle, env] of [
      ["start", "dist/node/main.mjs", () => nodeStartCommand().env],
      ["start:deno", "dist/deno/main.mjs", denoStartEnv]
    ] as const
  ) {
    it(`npm run ${script} limits glibc's malloc to 2 arenas, in the app's own process`, () => {
      assert.deepStrictEqual(env(), { MALLOC_ARENA_MAX: "2" })
      // The script's command after the build, as npm's shell runs it, with a probe in the bundle's place: the
      // variable reaches the runtime, and `exec` leaves one process (the shell's pid is the runtime's).
      const root = resolve(import.meta.dirname, "../..")
      const start: string = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).scripts[script]
      const dir = mkdtempSync(join(os.tmpdir(), "paysub-start-"))
      try {
        const probe = join(dir, "probe.mjs")
        writeFileSync(probe, "console.log(JSON.stringify([process.env.MALLOC_ARENA_MAX, process.pid]))")
        const afterBuild = start.slice(start.indexOf("&&") + 2)
        const command = afterBuild.replace(bundle, probe)
        assert.notStrictEqual(command, afterBuild)
        const run = spawnSync("sh", ["-c", `echo $$; ${command}`], {
          cwd: root,
          encoding: "utf8",
          // npm puts node_modules/.bin (deno) and its node first on PATH.
          env: {
            ...process.env,
            PATH: `${join(root, "node_modules/.bin")}:${resolve(process.execPath, "..")}:${process.env.PATH}`
          }
        })
        assert.strictEqual(run.status, 0, run.stderr)
        const [shell, answer] = run.stdout.trim().split("\n")
        assert.deepStrictEqual(JSON.parse(answer!), ["2", Number(shell)])
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    })
  }

  it("deno task start sets the same variable for the app", () => {
    const tasks = JSON.parse(readFileSync(resolve(import.meta.dirname, "../../deno.json"), "utf8")).tasks
    assert.match(tasks.start, /&& MALLOC_ARENA_MAX=2 deno run [^&]*dist\/deno\/main\.mjs$/)
  })
})
