// Imported first by the Node app and the CLI, so that it runs before any other module: on an older Node the
// native SQLite driver crashes the process without a word (a segmentation fault) instead of failing with a message.
// The lines are package.json's engines: Node 22 from 22.19, and 24 or newer.
export const unsupportedNode = (version: string): string | undefined => {
  const [major = 0, minor = 0] = version.split(".").map(Number)
  return (major === 22 && minor >= 19) || major >= 24
    ? undefined
    : `paysub runs on Node.js 24 LTS or 22 (22.19 or newer); this is Node.js ${version} (${process.execPath})`
}

const refusal = unsupportedNode(process.versions.node)
if (refusal !== undefined) {
  process.stderr.write(`${refusal}\n`)
  process.exit(1)
}
