// The command lines `npm start` and `npm run start:deno` run, read from package.json's scripts, so the
// black-box suites (test/support/AppProcess.ts) and the benchmark (bench/lib/harness.mjs) start what users
// start, with the same flags and permissions. Each is the app's own process, not a launcher (npm, tsx or the
// deno package's node shim run the app as their child): a signal sent to it, SIGKILL included, reaches the app.
import { execFileSync } from "node:child_process"
import { existsSync, readFileSync } from "node:fs"
import { join, resolve } from "node:path"

const root = resolve(import.meta.dirname, "..")
const startScript = (checkout, name) => JSON.parse(readFileSync(join(checkout, "package.json"), "utf8")).scripts[name]

// `exec env NAME=value... PROGRAM`: `exec` makes the shell npm runs the script in become `env`, which sets the
// variables (MALLOC_ARENA_MAX, docs/decisions/0071) and becomes the app, so the SIGTERM npm forwards reaches the
// app. The pattern of that prefix (its assignments as group 1), and the variables it sets.
const execEnv = String.raw`(?:^|&&)\s*(?:exec\s+)?(?:env((?:\s+[A-Z_][A-Z0-9_]*=\S*)+)\s+)?`
const envOf = (assignments = "") =>
  Object.fromEntries(
    assignments.trim().split(/\s+/).filter(Boolean).map((assignment) => {
      const at = assignment.indexOf("=")
      return [assignment.slice(0, at), assignment.slice(at + 1)]
    })
  )

// `node scripts/build.mjs && exec env NAME=value... node [--flags] dist/node/main.mjs`: plain node on the bundle
// that scripts/build.mjs makes, with the variables `env` sets. The file is relative to the checkout's root.
export const nodeStartCommand = (checkout = root) => {
  const start = startScript(checkout, "start")
  const match = new RegExp(String.raw`${execEnv}node((?:\s+--\S+)*)\s+(\S+\.mjs)\s*$`).exec(start)
  if (match === null) {
    throw new Error(
      `package.json's start script is not "... && exec [env NAME=value...] node [--flags] FILE.mjs": ${start}`
    )
  }
  return { env: envOf(match[1]), flags: match[2].trim().split(/\s+/).filter(Boolean), entry: join(checkout, match[3]) }
}

// `node scripts/build.mjs && exec env NAME=value... deno run [--flags] dist/deno/main.mjs`: Deno on the bundle
// scripts/build.mjs makes, with Deno's own binary for `deno`, and the variables `env` sets (`denoStartEnv`).
// node_modules/.bin/deno points at the binary once the deno package's install script has run (package.json's
// allowScripts); without that script (npm --ignore-scripts) .bin/deno is a node shim that copies the binary to
// node_modules/deno/deno on its first run, which is done here.
const denoStart = () => {
  const start = startScript(root, "start:deno")
  const match = new RegExp(String.raw`${execEnv}deno\s+(run(?:\s+--\S+)*)\s+(\S+\.mjs)\s*$`).exec(start)
  if (match === null) {
    throw new Error(
      `package.json's start:deno script is not "... && exec [env NAME=value...] deno run [--flags] FILE.mjs": ${start}`
    )
  }
  return match
}
export const denoStartEnv = () => envOf(denoStart()[1])
export const denoStartCommand = () => {
  const match = denoStart()
  const binary = join(root, "node_modules/deno/deno")
  if (!existsSync(binary)) execFileSync(process.execPath, [join(root, "node_modules/deno/bin.cjs"), "--version"])
  return [binary, ...match[2].split(/\s+/), join(root, match[3])]
}
