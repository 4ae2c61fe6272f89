import { spawnSync } from "node:child_process"
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs"
import { userInfo } from "node:os"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { freePort } from "../support/AppProcess.ts"

// A PostgreSQL cluster of the test's own, made with the server binaries on the machine (initdb, pg_ctl) in a
// temporary directory and on a free port, so that it can be crashed and restarted: never the shared server.
// As root, the binaries run as the `postgres` user (initdb refuses root).
const binDir = (() => {
  const root = "/usr/lib/postgresql"
  if (!existsSync(root)) return undefined
  const version = readdirSync(root).sort((a, b) => Number(b) - Number(a))[0]
  const bin = version === undefined ? undefined : join(root, version, "bin")
  return bin !== undefined && existsSync(join(bin, "initdb")) ? bin : undefined
})()

// Why the suite cannot run here, or undefined.
export const unavailableReason: string | undefined = binDir === undefined
  ? "no PostgreSQL server binaries (initdb, pg_ctl) under /usr/lib/postgresql/*/bin"
  : userInfo().uid === 0 && spawnSync("id", ["postgres"]).status !== 0
  ? "running as root and there is no postgres user to run initdb as"
  : undefined

const asServerUser = (command: string, args: ReadonlyArray<string>) => {
  const full = join(binDir!, command)
  const result = userInfo().uid === 0
    ? spawnSync("runuser", ["-u", "postgres", "--", full, ...args], { encoding: "utf8" })
    : spawnSync(full, args, { encoding: "utf8" })
  if (result.status !== 0) throw new Error(`${command} failed: ${result.stderr}${result.stdout}`)
}

export class ThrowawayPostgres {
  private constructor(readonly dir: string, readonly port: number) {}

  static async start(): Promise<ThrowawayPostgres> {
    const dir = mkdtempSync(join(tmpdir(), "paysub-pg-"))
    chmodSync(dir, 0o755)
    if (userInfo().uid === 0) {
      const id = spawnSync("id", ["-u", "postgres"], { encoding: "utf8" }).stdout.trim()
      const gid = spawnSync("id", ["-g", "postgres"], { encoding: "utf8" }).stdout.trim()
      chownSync(dir, Number(id), Number(gid))
    }
    const cluster = new ThrowawayPostgres(dir, await freePort())
    asServerUser("initdb", ["-D", cluster.data, "-A", "trust", "-U", "postgres", "--no-sync"])
    cluster.start()
    return cluster
  }

  get data(): string {
    return join(this.dir, "data")
  }
  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`
  }

  start(): void {
    asServerUser("pg_ctl", [
      "-D",
      this.data,
      "-l",
      join(this.dir, "server.log"),
      "-o",
      `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
      "-w",
      "start"
    ])
  }

  // What a crash does: no checkpoint, no goodbye to the clients.
  crash(): void {
    asServerUser("pg_ctl", ["-D", this.data, "-m", "immediate", "-w", "stop"])
  }

  destroy(): void {
    try {
      this.crash()
    } catch {
      // not running
    }
    rmSync(this.dir, { recursive: true, force: true })
  }
}
