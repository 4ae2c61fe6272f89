// mysql2's pool queues a request for a connection while all of its connections are out, and has no time-out on
// that wait: a request behind a black-holed pool, or behind more waiting requests than the pool serves in time,
// would wait for ever. Bounded here as pg-pool's connectionTimeoutMillis bounds it on PostgreSQL: a request that
// has not got a connection (a free one, or a new one) within `waitMs` fails with PoolWaitTimeoutMessage, a storage
// fault (adapters/sql/StorageFaults.ts). A connection that comes after that goes back to the pool at once.
//
// @effect/sql-mysql2 makes the pool itself and does not hand it out; mysql2 puts it on the configuration it gives
// the `stream` factory of each connection (`config.pool`), so the first connection made installs the bound. That
// first connection is made for a request that found the pool empty: it waits for the connect time-out only.
export const PoolWaitTimeoutMessage = "Timed out waiting for a connection of the pool"

type GetConnection = (callback: (error: Error | null, connection?: { release(): void }) => void) => void

const bounded = new WeakSet<object>()

export const boundPoolWait = (pool: unknown, waitMs: number): void => {
  const target = pool as { getConnection?: GetConnection } | undefined
  if (typeof target?.getConnection !== "function") {
    throw new Error("mysql2 gave no pool with the connection's configuration: the wait for a connection is unbounded")
  }
  if (bounded.has(target)) return
  bounded.add(target)
  const getConnection = target.getConnection.bind(target)
  target.getConnection = (callback) => {
    let answered = false
    const timer = setTimeout(() => {
      answered = true
      callback(new Error(PoolWaitTimeoutMessage))
    }, waitMs)
    getConnection((error, connection) => {
      if (answered) return void connection?.release()
      answered = true
      clearTimeout(timer)
      callback(error, connection)
    })
  }
}
