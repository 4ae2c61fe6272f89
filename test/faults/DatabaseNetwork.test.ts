import { describe, it } from "@effect/vitest"
import { FaultProxy } from "../support/FaultProxy.ts"
import { type NetworkFault, runNetworkFault } from "./NetworkFaults.ts"
import { ThrowawayPostgres, unavailableReason } from "./ThrowawayPostgres.ts"

// The network between the service and PostgreSQL (a throwaway cluster), through a TCP proxy of the test's own
// (test/support/FaultProxy.ts), checked as test/faults/NetworkFaults.ts says:
// (c) black-holed connections: the proxy stops forwarding in both directions and sends no RST, for 10 s;
// (d) the pool's connections black-holed while new ones are forwarded, for 10 s;
// (b) connections reset in the middle of a transaction (test/support/FaultProxy.ts says where), for 5 s;
// (a) 2 s added to every chunk in each direction, for 20 s.
// Skipped, with the reason, where the server binaries are missing; with CI=true that fails instead.
if (unavailableReason !== undefined) {
  if (process.env.CI === "true") throw new Error(`DatabaseNetwork cannot run with CI=true: ${unavailableReason}`)
  console.warn(`DatabaseNetwork: skipped, ${unavailableReason}`)
}

// PG_CONNECT_TIMEOUT_MS (2 s) for a connection, then PG_STATEMENT_TIMEOUT_MS + 1 s (6 s) for each of a request's
// statements that meets the fault (two at most here), with room for the loaded machine (the test's client measured
// up to 3 s more than the app's own access log): docs/operations.md.
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

describe.skipIf(unavailableReason !== undefined)("the network between the service and PostgreSQL", () => {
  for (const fault of faults) {
    it(`${fault.name}: 503 with Retry-After within the bound, recovered within 5 s of the end`, async () => {
      const pg = await ThrowawayPostgres.start()
      const proxy = await FaultProxy.start(pg.port)
      try {
        await runNetworkFault("DatabaseNetwork", fault, proxy, `postgres://postgres@127.0.0.1:${proxy.port}/postgres`)
      } finally {
        await proxy.close()
        pg.destroy()
      }
    }, 150_000)
  }
})
