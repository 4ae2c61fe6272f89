import { Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"

// Processes racing on one SQLite file, as several app instances on one file would: each script prints "ready"
// when its connection is open and waits for "go" on stdin, so that they all start at once.
export interface ProcessResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

// Starts `count` processes of the script (tsx), process i with `args(i)`, lets them all go at once when every
// one is ready, and answers how each ended. The processes are killed if the test ends first.
export const runProcesses = (script: string, count: number, args: (i: number) => ReadonlyArray<string>) =>
  Effect.async<ReadonlyArray<ProcessResult>>((resume) => {
    const children: Array<ChildProcess> = []
    const results: Array<ProcessResult> = []
    let ready = 0
    let done = 0
    for (let i = 0; i < count; i++) {
      const child = spawn(
        process.execPath,
        ["--import", "tsx", script, ...args(i)],
        { stdio: ["pipe", "pipe", "pipe"] }
      )
      children.push(child)
      let stdout = ""
      let stderr = ""
      child.stdout!.on("data", (chunk) => {
        const before = stdout
        stdout += String(chunk)
        if (!before.includes("ready\n") && stdout.includes("ready\n") && ++ready === count) {
          for (const c of children) c.stdin!.write("go\n")
        }
      })
      child.stderr!.on("data", (chunk) => (stderr += String(chunk)))
      child.on("close", (code) => {
        results[i] = { code, stdout, stderr }
        if (++done === count) resume(Effect.succeed(results))
      })
    }
    return Effect.sync(() => {
      for (const child of children) if (child.exitCode === null) child.kill("SIGKILL")
    })
  })
