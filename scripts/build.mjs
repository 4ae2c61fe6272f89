// `npm run build`: bundles the Node app, the CLI and the Deno app, with everything they import from
// node_modules, into one ES module each, which `npm start` and `npm run cli` run with plain `node` and
// `npm run start:deno` with `deno run`:
//
//   dist/node/main.mjs (+ .map)   apps/node/main.ts
//   dist/cli/main.mjs  (+ .map)   apps/cli/main.ts
//   dist/deno/main.mjs (+ .map)   apps/deno/main.ts
//   dist/{node,deno}/delivery.mjs  adapters/thread/DeliveryWorker.ts, the apps' delivery thread
//   dist/{node,cli,deno}/scalar.js the docs UI's script, read by apps/http/meta/DocsUi.ts (see scalarOutside)
//
// Why: under tsx the app idles at ~260-280 MB RSS (the TypeScript loader and every module it transpiled stay
// in memory); the bundle idles at ~110 MB. Deno on the sources idles at ~160 MB and peaked at 300-390 MB
// under the benchmark's load; on the bundle it idles at ~100 MB. Deno runs the Node-platform bundle as it is:
// it has the node: modules and createRequire (the Deno app imports no native addon). The source maps are
// separate files, linked from the bundles: node reads them only with --enable-source-maps, and
// bench/cpuprofile-summary.mjs maps profiles through them.
//
// Each file is written to a temporary name and renamed, so a process starting from dist/ while another build
// runs (two test runs at once) never loads half a file. The one-line summary goes to stderr: `npm run cli`
// prints JSON on stdout.
import { build } from "esbuild"
import { mkdirSync, renameSync, writeFileSync } from "node:fs"
import { dirname, relative, resolve } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const root = fileURLToPath(new URL("..", import.meta.url))

// Loaded by node from node_modules at run time, not bundled: native addons (better-sqlite3 finds its .node
// file relative to its own package) and pg's optional native binding (`pg.native`, not installed).
// Optional packages that other modules require inside try/catch (ws: bufferutil, utf-8-validate) stay
// require() calls that fail and are caught, as they do unbundled.
const external = ["better-sqlite3", "pg-native"]

// Scalar's script (the docs UI, 3.2 million characters) is kept out of the bundles. Inside, it was 3.3 MB of
// every bundle's source text and, once its module ran, a 6.4 MB string, held for the life of the process
// whether or not anyone opened /docs. The build writes it beside each bundle as scalar.js and leaves in its
// place the mark that apps/http/meta/DocsUi.ts replaces with that file, read on the first request for the page.
const ScalarMark = "/* paysub: the script in scalar.js */" // the same text as in apps/http/meta/DocsUi.ts
let scalarScript
const scalarOutside = {
  name: "scalar-outside",
  setup: (b) =>
    b.onLoad({ filter: /@effect[\\/]platform[\\/]dist[\\/]esm[\\/]internal[\\/]httpApiScalar\.js$/ }, async (args) => {
      scalarScript = (await import(pathToFileURL(args.path))).javascript
      return { contents: `export const javascript = ${JSON.stringify(ScalarMark)}`, loader: "js" }
    })
}

const started = performance.now()
const result = await build({
  absWorkingDir: root,
  entryPoints: {
    "node/main": "apps/node/main.ts",
    "node/delivery": "adapters/thread/DeliveryWorker.ts",
    "cli/main": "apps/cli/main.ts",
    "deno/main": "apps/deno/main.ts",
    "deno/delivery": "adapters/thread/DeliveryWorker.ts"
  },
  outdir: "dist",
  outExtension: { ".js": ".mjs" },
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node22",
  // The ES module builds of packages that ship both (better tree shaking).
  mainFields: ["module", "main"],
  external,
  // CommonJS dependencies call require() (for node: modules and the externals above); an ES module has none.
  banner: {
    js: "import { createRequire as __paysubCreateRequire } from \"node:module\"; " +
      "const require = __paysubCreateRequire(import.meta.url);"
  },
  sourcemap: "linked",
  // The sources are in the repository next to dist/: the map only needs the positions (5x smaller).
  sourcesContent: false,
  charset: "ascii",
  plugins: [scalarOutside],
  write: false,
  logLevel: "warning"
})

// A bundle is kept in memory as the source text of its module, and V8 keeps that text in one byte per
// character only when it is all Latin-1: one curly quote in a dependency's comment (undici has dozens) doubled
// it, 7.2 MB of source held as 14.7 MB (a heap snapshot of the idle service). esbuild writes code in ASCII
// (charset "ascii", its default: strings, regular expressions and names escaped), so what is left outside
// ASCII is comment text; each such UTF-16 unit becomes one "?", which keeps every column the source map names.
const asciiOnly = (file) =>
  file.path.endsWith(".mjs") ? Buffer.from(file.text.replace(/[^\x00-\x7f]/g, "?"), "latin1") : file.contents

const writeAtomically = (path, contents) => {
  mkdirSync(dirname(path), { recursive: true })
  const temporary = `${path}.${process.pid}.tmp`
  writeFileSync(temporary, contents)
  renameSync(temporary, path)
}
for (const file of result.outputFiles) writeAtomically(file.path, asciiOnly(file))
if (scalarScript === undefined) throw new Error("build: no bundle imported Scalar's script; the docs UI would be blank")
for (const app of result.outputFiles.filter((f) => f.path.endsWith("main.mjs"))) {
  writeAtomically(resolve(dirname(app.path), "scalar.js"), scalarScript)
}

const sizes = result.outputFiles.filter((f) => f.path.endsWith(".mjs")).map((f) =>
  `${relative(root, f.path)} (${(f.contents.length / 2 ** 20).toFixed(1)} MB)`
)
console.error(`build: ${sizes.join(", ")} in ${Math.round(performance.now() - started)} ms`)
