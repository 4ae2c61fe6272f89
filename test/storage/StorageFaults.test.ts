import { SqlError } from "@effect/sql/SqlError"
import { assert, describe, it } from "@effect/vitest"
import { isStorageUnavailable } from "../../adapters/sql/StorageFaults.ts"

// What the time-outs on PostgreSQL and MariaDB leave behind is a fault the request answers 503 for, not a bug
// (docs/operations.md).
describe("isStorageUnavailable on the time-outs of PostgreSQL and MariaDB", () => {
  const wrapped = (cause: unknown) => new SqlError({ cause, message: "Failed to execute statement" })

  it("a statement whose answer never came (pg's query_timeout) is a fault", () => {
    assert.isTrue(isStorageUnavailable(wrapped(new Error("Query read timeout"))))
  })

  it("a statement cancelled by statement_timeout (57014) is a fault", () => {
    const cancelled = Object.assign(new Error("canceling statement due to statement timeout"), { code: "57014" })
    assert.isTrue(isStorageUnavailable(wrapped(cancelled)))
  })

  it("a request that got no connection of MariaDB's pool in time (adapters/mariadb/PoolWait.ts) is a fault", () => {
    const waited = new SqlError({
      cause: new Error("Timed out waiting for a connection of the pool"),
      message: "Failed to acquire connection"
    })
    assert.isTrue(isStorageUnavailable(waited))
  })

  it("a unique violation (23505) is not", () => {
    const duplicate = Object.assign(new Error("duplicate key value violates unique constraint"), { code: "23505" })
    assert.isFalse(isStorageUnavailable(wrapped(duplicate)))
  })
})
