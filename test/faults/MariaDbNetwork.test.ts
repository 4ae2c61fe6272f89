import { describe, it } from "@effect/vitest"
import { FaultProxy } from "../support/FaultProxy.ts"
import { type NetworkFault, runNetworkFault } from "./NetworkFaults.ts"
import { ThrowawayMariaDb, unavailableReason } from "./ThrowawayMariaDb.ts"

// The network between the service and MariaDB (a throwaway server), through the test's TCP proxy
// (test/support/FaultProxy.ts), checked as test/faults/NetworkFaults.ts says:
// (c) black-holed connections: the proxy stops forwarding in both directions and sends no RST, for 10 s;
// (d) the pool's connections black-holed while new ones are forwarded, for 10 s;
// (b) connections reset in the middle of a transaction (test/support/FaultProxy.ts says where), for 5 s;
// (a) 2 s added to every chunk in each direction, for 20 s.
// Skipped, with the reason, where the server binaries are missing; with CI=true that fails instead.
if (unavailableReason !== undefined) {
  if (process.env.CI === "true") throw new Error(`MariaDbNetwork cannot run with CI=true: ${unavailableReason}`)
  console.warn(`MariaDbNetwork: skipped, ${unavailableReason}`)
}

// MARIADB_CONNECT_TIMEOUT_MS (2 s) for a connection (a free one of the pool, or a new one), then
// MARIADB_STATEMENT_TIMEOUT_MS + 1 s (6 s) for each of a request's statements that meets the fault (two at most
// here), with room for the loaded machine: docs/operations.md.
const answerBoundMs = 16_000
const faults: ReadonlyArray<NetworkFault> = [
  { name: "black-holed connections", ms: 10_000, inject: (p) => p.blackHole(), answerBoundMs },
  {
    name: "the pool's connections black-holed, new ones forwarded",
    ms: 10_000,
    inject: (p) => p.blackHoleOpen(),
    answerBoundMs
  },
  {
    name: "connections reset in the middle of a transaction",
    ms: 5_000,
    inject: (p) => p.resetInTransactions(),
    answerBoundMs
  },
  { name: "2 s of latency each way", ms: 20_000, inject: (p) => p.delay(2_000), answerBoundMs: 40_000 }
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
