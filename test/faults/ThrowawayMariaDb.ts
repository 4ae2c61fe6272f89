import mysql from "mysql2/promise"
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { chownSync, existsSync, mkdtempSync, rmSync } from "node:fs"
import { connect } from "node:net"
import { tmpdir, userInfo } from "node:os"
import { join } from "node:path"
import { freePort } from "../support/AppProcess.ts"

// A MariaDB server of the test's own, made with the server binaries on the machine (mariadb-install-db, mariadbd)
// in a temporary directory and on a free port: never the shared server. As root, the server runs as the `mysql`
// user (mariadbd refuses root unless told).
const server = "/usr/sbin/mariadbd"
const installer = ["/usr/bin/mariadb-install-db", "/usr/bin/mysql_install_db"].find(existsSync)

// Why the suite cannot run here, or undefined.
export const unavailableReason: string | undefined = !existsSync(server) || installer === undefined
  ? "no MariaDB server binaries (/usr/sbin/mariadbd, mariadb-install-db)"
  : userInfo().uid === 0 && spawnSync("id", ["mysql"]).status !== 0
  ? "running as root and there is no mysql user to run mariadbd as"
  : undefined

const asRoot = userInfo().uid === 0
const accepting = (port: number) =>
  new Promise<boolean>((ok) => {
    const socket = connect({ port, host: "127.0.0.1" })
    socket.once("connect", () => (socket.destroy(), ok(true)))
    socket.once("error", () => ok(false))
  })

export class ThrowawayMariaDb {
  private constructor(readonly dir: string, readonly port: number, private readonly child: ChildProcess) {}

  static async start(): Promise<ThrowawayMariaDb> {
    const dir = mkdtempSync(join(tmpdir(), "paysub-mariadb-"))
    if (asRoot) {
      const id = spawnSync("id", ["-u", "mysql"], { encoding: "utf8" }).stdout.trim()
      const gid = spawnSync("id", ["-g", "mysql"], { encoding: "utf8" }).stdout.trim()
      chownSync(dir, Number(id), Number(gid))
    }
    const data = join(dir, "data")
    const user = asRoot ? ["--user=mysql"] : []
    const install = spawnSync(installer!, [
      "--no-defaults",
      `--datadir=${data}`,
      ...user,
      "--auth-root-authentication-method=normal",
      "--skip-test-db"
    ], { encoding: "utf8" })
    if (install.status !== 0) throw new Error(`mariadb-install-db failed: ${install.stderr}${install.stdout}`)
    const port = await freePort()
    const child = spawn(server, [
      "--no-defaults",
      `--datadir=${data}`,
      ...user,
      `--port=${port}`,
      "--bind-address=127.0.0.1",
      `--socket=${join(dir, "mariadb.sock")}`,
      `--pid-file=${join(dir, "mariadb.pid")}`,
      `--log-error=${join(dir, "error.log")}`,
      "--skip-log-bin",
      "--innodb-buffer-pool-size=32M",
      "--innodb-flush-log-at-trx-commit=0"
    ], { stdio: "ignore" })
    const server_ = new ThrowawayMariaDb(dir, port, child)
    for (let waited = 0; !(await accepting(port)); waited += 100) {
      if (waited > 60_000 || child.exitCode !== null) {
        server_.destroy()
        throw new Error(`mariadbd did not start on port ${port}`)
      }
      await new Promise((r) => setTimeout(r, 100))
    }
    const admin = await mysql.createConnection({ host: "127.0.0.1", port, user: "root" })
    await admin.query("CREATE DATABASE paysub")
    await admin.end()
    return server_
  }

  // The service's database, reached through `port` (the server's own, or a proxy's in front of it).
  urlThrough(port: number): string {
    return `mysql://root@127.0.0.1:${port}/paysub`
  }

  destroy(): void {
    this.child.kill("SIGKILL")
    rmSync(this.dir, { recursive: true, force: true })
  }
}
