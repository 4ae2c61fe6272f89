// The command lines `npm start` and `npm run start:deno` run, read from package.json's scripts, so the
// black-box suites (test/support/AppProcess.ts) and the benchmark (bench/lib/harness.mjs) start what users
// start, with the same flags and permissions. Each is the app's own process, not a launcher (npm, tsx or the
// deno package's node shim run the app as their child): a signal sent to it, SIGKILL included, reaches the app.
import { execFileSync } from "node:child_process"
import { existsSync, readFileSync } from "node:fs"
import { join, resolve } from "node:path"

const root = resolve(import.meta.dirname, "..")
const scripts = () => JSON.parse(readFileSync(join(root, "package.json"), "utf8")).scripts

// `node scripts/build.mjs && exec env NAME=value... node [--flags] dist/node/main.mjs`: plain node on the bundle
// that scripts/build.mjs makes, with the variables `env` sets (MALLOC_ARENA_MAX, docs/decisions/0071). The file
// is relative to the checkout's root. (`exec`: the shell npm runs the script in becomes `env`, which becomes the
// app, so the SIGTERM npm forwards reaches the app.)
export const nodeStartCommand = (checkout = root) => {
  const start = JSON.parse(readFileSync(join(checkout, "package.json"), "utf8")).scripts.start
  const match = /(?:^|&&)\s*(?:exec\s+)?(?:env((?:\s+[A-Z_][A-Z0-9_]*=\S*)+)\s+)?node((?:\s+--\S+)*)\s+(\S+\.mjs)\s*$/
    .exec(start)
  if (match === null) {
    throw new Error(
      `package.json's start script is not "... && exec [env NAME=value...] node [--flags] FILE.mjs": ${start}`
    )
  }
  const env = Object.fromEntries(
    (match[1] ?? "").trim().split(/\s+/).filter(Boolean).map((a) => {
      const at = a.indexOf("=")
      return [a.slice(0, at), a.slice(at + 1)]
    })
  )
  return { env, flags: match[2].trim().split(/\s+/).filter(Boolean), entry: join(checkout, match[3]) }
}

// `node scripts/build.mjs && exec deno run [--flags] dist/deno/main.mjs`: Deno on the bundle scripts/build.mjs makes,
// with Deno's own binary for `deno`. node_modules/.bin/deno points at it once the deno package's install script
// has run (package.json's allowScripts); without that script (npm --ignore-scripts) .bin/deno is a node shim
// that copies the binary to node_modules/deno/deno on its first run, which is done here.
export const denoStartCommand = () => {
  const start = scripts()["start:deno"]
  const match = /(?:^|&&)\s*(?:exec\s+)?deno\s+(run(?:\s+--\S+)*)\s+(\S+\.mjs)\s*$/.exec(start)
  if (match === null) {
    throw new Error(`package.json's start:deno script is not "... && exec deno run [--flags] FILE.mjs": ${start}`)
  }
  const binary = join(root, "node_modules/deno/deno")
  if (!existsSync(binary)) execFileSync(process.execPath, [join(root, "node_modules/deno/bin.cjs"), "--version"])
  return [binary, ...match[1].split(/\s+/), join(root, match[2])]
}
