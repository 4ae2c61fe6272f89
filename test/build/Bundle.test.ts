import { assert, describe, it } from "@effect/vitest"
import { readdirSync, readFileSync } from "node:fs"
import { SourceMap } from "node:module"
import { resolve } from "node:path"

// The bundles scripts/build.mjs makes (vitest's globalSetup builds them): ASCII only, so that V8 keeps each
// module's source text at one byte per character (a non-Latin-1 character anywhere doubled the idle service's
// largest string, 7.2 MB to 14.7 MB), and their source maps still point into our own files.
const dist = resolve(import.meta.dirname, "../../dist")
// dist/ also holds the OpenAPI document that npm test lints (dist/openapi.json): the bundles are in its folders.
const bundles = readdirSync(dist, { withFileTypes: true }).filter((entry) => entry.isDirectory()).flatMap(({ name }) =>
  readdirSync(resolve(dist, name)).filter((f) => f.endsWith(".mjs")).map((f) => resolve(dist, name, f))
)

describe("the bundles", () => {
  it("are all there: the Node and Deno apps, their delivery threads, the CLI", () => {
    assert.deepStrictEqual(
      bundles.map((b) => b.slice(dist.length + 1)).sort(),
      ["cli/main.mjs", "deno/delivery.mjs", "deno/main.mjs", "node/delivery.mjs", "node/main.mjs"]
    )
  })

  for (const bundle of bundles) {
    it(`${bundle.slice(dist.length + 1)} is ASCII only`, () => {
      const bytes = readFileSync(bundle)
      const at = bytes.findIndex((b) => b > 0x7f)
      assert.strictEqual(at, -1, `a byte over 0x7F at ${at}: ${bytes.subarray(Math.max(0, at - 60), at + 10)}`)
    })
  }

  it("have Scalar's script beside them, for the docs page (apps/http/meta/DocsUi.ts), and not inside", () => {
    for (const dir of ["node", "deno", "cli"]) {
      const script = readFileSync(resolve(dist, dir, "scalar.js"), "utf8")
      assert.isAbove(script.length, 1_000_000)
      assert.include(script, "Minified by jsDelivr")
      assert.notInclude(readFileSync(resolve(dist, dir, "main.mjs"), "latin1"), "Minified by jsDelivr")
    }
  })

  it("map a function of the core back to its file and line", () => {
    const text = readFileSync(resolve(dist, "node/main.mjs"), "utf8")
    const lines = text.split("\n")
    const line = lines.findIndex((l) => l.includes("var decideStart = "))
    assert.isAtLeast(line, 0)
    const map = new SourceMap(JSON.parse(readFileSync(resolve(dist, "node/main.mjs.map"), "utf8")))
    const entry = map.findEntry(line, lines[line]!.indexOf("decideStart"))
    assert.isTrue("originalSource" in entry, "no mapping at decideStart")
    if (!("originalSource" in entry)) return
    assert.match(entry.originalSource, /core\/payments\/Idempotency\.ts$/)
    const source = readFileSync(resolve(import.meta.dirname, "../../core/payments/Idempotency.ts"), "utf8").split("\n")
    assert.include(source[entry.originalLine]!, "decideStart")
  })
})
