import { describe, it } from "@effect/vitest"
import { FaultProxy } from "../support/FaultProxy.ts"
import { type NetworkFault, runNetworkFault } from "./NetworkFaults.ts"
import { ThrowawayMariaDb, unavailableReason } from "./ThrowawayMariaDb.ts"

// The network between the service and MariaDB (a throwaway server), through the test's TCP proxy
// (test/support/FaultProxy.ts), checked as test/faults/NetworkFaults.ts says:
// (c) black-holed connections: the proxy stops forwarding in both directions and sends no RST, for 10 s;
// (b) connections reset in the middle of a transaction (test/support/FaultProxy.ts says where), for 5 s.
// Skipped, with the reason, where the server binaries are missing; with CI=true that fails instead.
if (unavailableReason !== undefined) {
  if (process.env.CI === "true") throw new Error(`MariaDbNetwork cannot run with CI=true: ${unavailableReason}`)
  console.warn(`MariaDbNetwork: skipped, ${unavailableReason}`)
}

// A free connection of the pool (mysql2 has no time-out on that wait: one frees up when its statement answers or
// gives up, after MARIADB_STATEMENT_TIMEOUT_MS + 1 s, 6 s), then MARIADB_CONNECT_TIMEOUT_MS (2 s) for a new one,
// then 6 s for a statement's answer, with room for the loaded machine: docs/operations.md.
const answerBoundMs = 20_000
const faults: ReadonlyArray<NetworkFault> = [
  { name: "black-holed connections", ms: 10_000, inject: (p) => p.blackHole(), answerBoundMs },
  {
    name: "connections reset in the middle of a transaction",
    ms: 5_000,
    inject: (p) => p.resetInTransactions(),
    answerBoundMs
  }
]

describe.skipIf(unavailableReason !== undefined)("the network between the service and MariaDB", () => {
  for (const fault of faults) {
    it(`${fault.name}: 503 with Retry-After within the bound, recovered within 5 s of the end`, async () => {
      const server = await ThrowawayMariaDb.start()
      const proxy = await FaultProxy.start(server.port, { protocol: "mariadb" })
      try {
        await runNetworkFault("MariaDbNetwork", fault, proxy, server.urlThrough(proxy.port))
      } finally {
        await proxy.close()
        server.destroy()
      }
    }, 150_000)
  }
})
