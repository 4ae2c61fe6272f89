import { assert, describe, it } from "@effect/vitest"
import { ESLint } from "eslint"

// The hexagon's boundary is the linter's (eslint.config.js): what it lets an adapter import from core, and what
// it refuses. Each case lints a file as if it sat in adapters/.
const eslint = new ESLint()
const problems = async (source: string, filePath = "adapters/memory/Boundary.ts") => {
  const [result] = await eslint.lintText(source, { filePath })
  return result!.messages.filter((m) => m.ruleId === "no-restricted-imports").map((m) => m.message)
}

describe("the adapters' boundary", () => {
  it("refuses a function of core that decides, and one that wires core's stores", async () => {
    const refused = await problems(
      `import { decideStart } from "../../core/payments/Idempotency.ts"\n` +
        `import { storesOver } from "../../core/shared/Stores.ts"\nexport const x = [decideStart, storesOver]\n`
    )
    assert.strictEqual(refused.length, 2)
    assert.match(refused[0]!, /core's functions decide/)
  })

  it("refuses a namespace import of a core module (it would reach every function)", async () => {
    const refused = await problems(
      `import * as Transfer from "../../core/payments/Transfer.ts"\nexport const x = Transfer\n`
    )
    assert.strictEqual(refused.length, 1)
  })

  it("lets a port, a schema, an error and any type through", async () => {
    assert.deepStrictEqual(
      await problems(
        `import { TransferStorage } from "../../core/payments/TransferStorage.ts"\n` +
          `import { Transfer } from "../../core/payments/Transfer.ts"\n` +
          `import { CardNetworkUnavailable } from "../../core/payments/CardNetwork.ts"\n` +
          `import type { decideStart } from "../../core/payments/Idempotency.ts"\n` +
          `export const x: [unknown, unknown, unknown, typeof decideStart | undefined] = ` +
          `[TransferStorage, Transfer, CardNetworkUnavailable, undefined]\n`
      ),
      []
    )
  })

  it("holds only in adapters/: the apps wire core's stores", async () => {
    assert.deepStrictEqual(
      await problems(
        `import { storesOver } from "../../core/shared/Stores.ts"\nexport const x = storesOver\n`,
        "apps/compose/Boundary.ts"
      ),
      []
    )
  })
})
