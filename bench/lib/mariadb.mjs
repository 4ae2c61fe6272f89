// MariaDB for the harness (service-mariadb, ref-mariadb): throwaway databases, always dropped; the server's
// durability setting; and rows counted in a database.
import mysql from "mysql2/promise"

export const mariadbAdminUrl = process.env.MARIADB_ADMIN_URL ?? "mysql://root@127.0.0.1:3306/test"
const created = new Set()

// One connection to the database at `url` (mysql://user:password@host:port/database) for f.
export const withMariadb = async (url, f) => {
  const connection = await mysql.createConnection({ uri: url, connectTimeout: 5_000 })
  connection.on("error", () => {})
  try {
    return await f(connection)
  } finally {
    await connection.end().catch(() => {})
  }
}
const urlOf = (name) => {
  const url = new URL(mariadbAdminUrl)
  url.pathname = `/${name}`
  return url.toString()
}
export const createMariadbDatabase = async () => {
  const name = `paysub_bench_${process.pid}_${Date.now().toString(36)}`
  await withMariadb(
    mariadbAdminUrl,
    (c) => c.query(`CREATE DATABASE ${mysql.escapeId(name)} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`)
  )
  created.add(name)
  return urlOf(name)
}
export const dropMariadbDatabase = async (url) => {
  const name = decodeURIComponent(new URL(url).pathname.slice(1))
  await withMariadb(mariadbAdminUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${mysql.escapeId(name)}`))
  created.delete(name)
}
export const dropAllMariadbDatabases = async () => {
  for (const name of [...created]) await dropMariadbDatabase(urlOf(name)).catch(() => {})
}
export const mariadbAvailable = () =>
  withMariadb(mariadbAdminUrl, (c) => c.query("SELECT 1")).then(() => true, () => false)

// What makes a commit durable: innodb_flush_log_at_trx_commit=1 writes and flushes the redo log at every commit.
export const mariadbSettings = () =>
  withMariadb(mariadbAdminUrl, async (c) => {
    const [[row]] = await c.query(
      "SELECT VERSION() AS version, @@innodb_flush_log_at_trx_commit AS flush, @@sync_binlog AS sync_binlog, @@log_bin AS log_bin"
    )
    return {
      version: row.version,
      innodbFlushLogAtTrxCommit: Number(row.flush),
      logBin: Number(row.log_bin),
      syncBinlog: Number(row.sync_binlog)
    }
  })

// `queries`: name -> SELECT count(*) AS n ...; the counts, by name.
export const mariadbCounts = (url, queries) =>
  withMariadb(url, async (c) => {
    const out = {}
    for (const [k, q] of Object.entries(queries)) out[k] = Number((await c.query(q))[0][0].n)
    return out
  })
