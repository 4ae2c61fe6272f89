// Which storage errors mean "the database cannot take this now; the same request later may succeed": the
// database is away (refused, reset, shutting down, starting, in recovery) or out of room (a full disk, an I/O
// error, a lock held past busy_timeout, a file it cannot open). The three drivers' errors (SQLite, PostgreSQL,
// MariaDB through mysql2) are classified here, where their codes are known; everything else (a constraint, a syntax error, a bug) stays an internal error.
// The stores turn every SqlError into a defect, so the fault is found on the defect's chain of causes.
const sqlitePrimary = new Set([5, 6, 7, 10, 13, 14]) // BUSY, LOCKED, NOMEM, IOERR, FULL, CANTOPEN
const sqliteNames = /^SQLITE_(BUSY|LOCKED|NOMEM|IOERR|FULL|CANTOPEN)/
// 57014: a statement cancelled, as statement_timeout does.
const pgClasses = /^(08|53|57P0[1-3]|57014)/
// MariaDB's (mysql2's): the connection lost or refused, the server shutting down or out of connections, a full
// disk or table, a lock wait past innodb_lock_wait_timeout, a statement past max_statement_time, a read-only server.
const mysqlCodes = new Set([
  "PROTOCOL_CONNECTION_LOST",
  "ER_SERVER_SHUTDOWN",
  "ER_CON_COUNT_ERROR",
  "ER_CONNECTION_KILLED",
  "ER_DISK_FULL",
  "ER_RECORD_FILE_FULL",
  "ER_OUT_OF_RESOURCES",
  "ER_LOCK_WAIT_TIMEOUT",
  "ER_QUERY_TIMEOUT",
  "ER_OPTION_PREVENTS_STATEMENT",
  "ER_READ_ONLY_MODE"
])
const systemCodes = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "EHOSTUNREACH", "ENETUNREACH"])
const faultMessages =
  /Connection terminated|connection timeout|timeout exceeded when trying to connect|waiting for a connection of the pool|Query read timeout|not queryable|database or disk is full|disk I\/O error|database is locked|connection is in closed state|Pool is closed|max_statement_time exceeded/i

const isFault = (e: unknown): boolean => {
  if (typeof e !== "object" || e === null) return false
  const { code, errcode, message } = e as { code?: unknown; errcode?: unknown; message?: unknown }
  if (typeof errcode === "number" && sqlitePrimary.has(errcode & 0xff)) return true
  if (
    typeof code === "string" &&
    (sqliteNames.test(code) || pgClasses.test(code) || systemCodes.has(code) || mysqlCodes.has(code))
  ) {
    return true
  }
  return typeof message === "string" && faultMessages.test(message)
}

// The error, or any of its causes (SqlError's `cause`, an AggregateError's `errors`), is such a fault.
export const isStorageUnavailable = (e: unknown, depth = 0): boolean => {
  if (depth > 5 || typeof e !== "object" || e === null) return false
  if (isFault(e)) return true
  const { cause, errors } = e as { cause?: unknown; errors?: unknown }
  return isStorageUnavailable(cause, depth + 1) ||
    (Array.isArray(errors) && errors.some((inner) => isStorageUnavailable(inner, depth + 1)))
}
