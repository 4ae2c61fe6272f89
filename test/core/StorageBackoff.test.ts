import { assert, describe, it } from "@effect/vitest"
import { Duration } from "effect"
import { StorageBackoffCap, storageDelay } from "../../core/shared/StorageBackoff.ts"

describe("storageDelay", () => {
  it("waits at least 100 ms, grows with the failures, and never past the cap", () => {
    for (const random of [0, 0.5, 0.9999]) {
      for (let failures = 1; failures < 40; failures++) {
        const ms = Duration.toMillis(storageDelay(failures, random))
        assert.isAtLeast(ms, 100)
        assert.isAtMost(ms, Duration.toMillis(StorageBackoffCap))
      }
    }
    assert.isBelow(Duration.toMillis(storageDelay(1, 0.9999)), 1_000)
    assert.strictEqual(Duration.toMillis(storageDelay(30, 0.9999)), Duration.toMillis(StorageBackoffCap))
  })
})
