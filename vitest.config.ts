import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Builds the bundle (dist/) that the black-box suites start, once per run.
    globalSetup: ["test/support/globalSetup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Suites that start app processes and SMTP servers get their own process each.
    pool: "forks"
  }
})
