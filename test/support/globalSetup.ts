import { execFileSync } from "node:child_process"
import { resolve } from "node:path"

// vitest's globalSetup: the black-box suites start the Node app as `npm start` does, with plain node on the
// bundle scripts/build.mjs makes (test/support/AppProcess.ts), and the payment suites run the CLI's bundle.
// It is built once per vitest run, before any suite, from the sources as they are now. scripts/test.mjs
// builds it once itself and sets PAYSUB_BUNDLE_BUILT=1 for its vitest runs; under Deno (the core and
// node:sqlite tests, which start no app) there is nothing to build.
const root = resolve(import.meta.dirname, "../..")

export default function setup(): void {
  if (process.env.PAYSUB_BUNDLE_BUILT === "1" || "Deno" in globalThis) return
  execFileSync(process.execPath, [resolve(root, "scripts/build.mjs")], { cwd: root, stdio: "inherit" })
}
