// Summarises a V8 .cpuprofile (node --cpu-prof): self time per function and per package, optionally only
// for samples within a time window (µs on the profile's monotonic clock, the clock of
// process.hrtime.bigint() / 1000 in any process on the same machine).
//
//   node bench/cpuprofile-summary.mjs FILE.cpuprofile [--top=10] [--from=US] [--to=US] [--json]
//
// A frame in a bundle that has a source map next to it (dist/node/main.mjs and main.mjs.map, `npm run build`)
// is reported at its place in the original file (apps/..., node_modules/effect/...), so locations and the
// per-package and per-file totals read as they would for the unbundled app. Function names stay the bundle's
// (esbuild renames a clashing top-level name with a digit suffix: `map2`).
import { readFileSync } from "node:fs"
import { SourceMap } from "node:module"
import { dirname, resolve } from "node:path"
import { fileURLToPath } from "node:url"

const sourceMaps = new Map()
const sourceMapOf = (path) => {
  if (!sourceMaps.has(path)) {
    let found
    try {
      found = { map: new SourceMap(JSON.parse(readFileSync(`${path}.map`, "utf8"))), dir: dirname(path) }
    } catch {
      found = undefined
    }
    sourceMaps.set(path, found)
  }
  return sourceMaps.get(path)
}
// The callFrame at its original position (0-based line and column, as in the profile), or unchanged.
const original = (cf) => {
  if (!cf.url?.startsWith("file://") || !(cf.lineNumber >= 0)) return cf
  const found = sourceMapOf(fileURLToPath(cf.url))
  const entry = found?.map.findEntry(cf.lineNumber, cf.columnNumber)
  if (!entry?.originalSource) return cf
  const source = entry.originalSource.startsWith("file://")
    ? fileURLToPath(entry.originalSource)
    : resolve(found.dir, entry.originalSource)
  return { ...cf, url: source, lineNumber: entry.originalLine, columnNumber: entry.originalColumn }
}

export const summarise = (profile, { top = 10, from = -Infinity, to = Infinity, root = process.cwd() } = {}) => {
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]))
  const parents = new Map()
  for (const n of profile.nodes) for (const c of n.children ?? []) parents.set(c, n.id)
  const self = new Map()
  let t = profile.startTime
  let total = 0
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0
    if (t < from || t > to) continue
    // A sample's time is the gap to the next sample (what V8's DevTools charts show).
    const next = profile.timeDeltas[i + 1] ?? 0
    self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + next)
    total += next
  }
  const where = (cf) => {
    const url = (cf.url ?? "").replace(/^file:\/\//, "").replace(`${root}/`, "")
    return url === "" ? "" : `${url}:${cf.lineNumber + 1}:${cf.columnNumber + 1}`
  }
  const packageOf = (cf) => {
    const url = (cf.url ?? "").replace(/^file:\/\//, "").replace(`${root}/`, "")
    if (url === "") return cf.functionName.startsWith("(") ? cf.functionName : "(native/V8 builtins)"
    const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)
    if (m) return m[1]
    if (url.startsWith("node:")) return "node: internals"
    const first = url.split("/")[0]
    return ["core", "adapters", "apps", "bench"].includes(first) ? `project ${first}/` : url
  }
  const byFunction = new Map()
  const byPackage = new Map()
  const byFile = new Map()
  for (const [id, us] of self) {
    const cf = original(nodes.get(id).callFrame)
    const key = `${cf.functionName || "(anonymous)"}\u0000${where(cf)}`
    byFunction.set(key, (byFunction.get(key) ?? 0) + us)
    const pkg = packageOf(cf)
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + us)
    const file = (cf.url ?? "").replace(/^file:\/\//, "").replace(`${root}/`, "").replace(/^node_modules\//, "") ||
      pkg
    byFile.set(file, (byFile.get(file) ?? 0) + us)
  }
  const ranked = (m) =>
    [...m.entries()].sort((a, b) => b[1] - a[1]).map(([key, us]) => ({
      key,
      ms: Math.round(us / 100) / 10,
      percent: Math.round((us / total) * 1000) / 10
    }))
  return {
    totalMs: Math.round(total / 1000),
    samples: profile.samples.length,
    functions: ranked(byFunction).slice(0, top).map(({ key, ms, percent }) => {
      const [name, location] = key.split("\u0000")
      return { function: name, location, selfMs: ms, selfPercent: percent }
    }),
    packages: ranked(byPackage).slice(0, Math.max(top, 12)).map(({ key, ms, percent }) => ({
      package: key,
      selfMs: ms,
      selfPercent: percent
    })),
    files: ranked(byFile).slice(0, Math.max(top, 15)).map(({ key, ms, percent }) => ({
      file: key,
      selfMs: ms,
      selfPercent: percent
    }))
  }
}

export const format = (s) => {
  const lines = [`${s.totalMs} ms of samples`, "", "top self time by function:"]
  lines.push(`  ${"self ms".padStart(8)} ${"%".padStart(5)}  function  (location)`)
  for (const f of s.functions) {
    lines.push(
      `  ${String(f.selfMs).padStart(8)} ${f.selfPercent.toFixed(1).padStart(5)}  ${f.function}  (${
        f.location || "native"
      })`
    )
  }
  lines.push("", "self time by package / category:")
  for (const p of s.packages) {
    lines.push(`  ${String(p.selfMs).padStart(8)} ${p.selfPercent.toFixed(1).padStart(5)}  ${p.package}`)
  }
  lines.push("", "self time by file:")
  for (const f of s.files) {
    lines.push(`  ${String(f.selfMs).padStart(8)} ${f.selfPercent.toFixed(1).padStart(5)}  ${f.file}`)
  }
  return lines.join("\n")
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2)
  const file = args.find((a) => !a.startsWith("--"))
  if (file === undefined) {
    console.error("usage: node bench/cpuprofile-summary.mjs FILE.cpuprofile [--top=10] [--from=US] [--to=US] [--json]")
    process.exit(2)
  }
  const opt = (name) => args.find((a) => a.startsWith(`--${name}=`))?.split("=")[1]
  const summary = summarise(JSON.parse(readFileSync(file, "utf8")), {
    top: Number(opt("top") ?? 10),
    from: opt("from") === undefined ? -Infinity : Number(opt("from")),
    to: opt("to") === undefined ? Infinity : Number(opt("to"))
  })
  console.log(args.includes("--json") ? JSON.stringify(summary, null, 2) : format(summary))
}
