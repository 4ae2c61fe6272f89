import { Cause } from "effect"

// Which storage errors mean "the database cannot take this now; the same request later may succeed": the
// database is away (refused, reset, shutting down, starting, in recovery) or out of room (a full disk, an I/O
// error, a lock held past busy_timeout, a file it cannot open). Both drivers' errors are classified here,
// where their codes are known; everything else (a constraint, a syntax error, a bug) stays an internal error.
// The stores turn every SqlError into a defect, so the fault is found on the defect's chain of causes.
const sqlitePrimary = new Set([5, 6, 7, 10, 13, 14]) // BUSY, LOCKED, NOMEM, IOERR, FULL, CANTOPEN
const sqliteNames = /^SQLITE_(BUSY|LOCKED|NOMEM|IOERR|FULL|CANTOPEN)/
const pgClasses = /^(08|53|57P0[1-3])/
const systemCodes = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "EHOSTUNREACH", "ENETUNREACH"])
const pgMessages =
  /Connection terminated|connection timeout|timeout exceeded when trying to connect|not queryable|database or disk is full|disk I\/O error|database is locked/i

const isFault = (e: unknown): boolean => {
  if (typeof e !== "object" || e === null) return false
  const { code, errcode, message } = e as { code?: unknown; errcode?: unknown; message?: unknown }
  if (typeof errcode === "number" && sqlitePrimary.has(errcode & 0xff)) return true
  if (typeof code === "string" && (sqliteNames.test(code) || pgClasses.test(code) || systemCodes.has(code))) {
    return true
  }
  return typeof message === "string" && pgMessages.test(message)
}

// The error, or any of its causes (SqlError's `cause`, an AggregateError's `errors`), is such a fault.
export const isStorageUnavailable = (e: unknown, depth = 0): boolean => {
  if (depth > 5 || typeof e !== "object" || e === null) return false
  if (isFault(e)) return true
  const { cause, errors } = e as { cause?: unknown; errors?: unknown }
  return isStorageUnavailable(cause, depth + 1) ||
    (Array.isArray(errors) && errors.some((inner) => isStorageUnavailable(inner, depth + 1)))
}

// A failed request, pass or probe whose failures and defects are all storage faults.
export const causeIsStorageUnavailable = (cause: Cause.Cause<unknown>): boolean => {
  const all = [...Cause.failures(cause), ...Cause.defects(cause)]
  return all.length > 0 && all.every((e) => isStorageUnavailable(e))
}
