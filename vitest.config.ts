import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Two cores: two workers keep real nats-servers and real claude processes from starving.
    maxWorkers: 2,
    reporters: ["default"],
    // Components log to stderr; keep test output to what matters (failures print server logs).
    env: { COTAL_LOG_LEVEL: process.env.COTAL_LOG_LEVEL ?? "warn" },
  },
});
