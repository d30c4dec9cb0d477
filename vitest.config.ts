import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // The Mesh core suite runs twice: on open meshes, and on static-auth meshes with real
    // minted credentials (project mesh-static).
    projects: [
      { extends: true, test: { name: "all", include: ["test/**/*.test.ts"] } },
      { extends: true, test: { name: "mesh-static", include: ["test/mesh/**/*.test.ts"], env: { COTAL_TEST_MODE: "static" } } },
    ],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Two cores: two workers keep real nats-servers and real claude processes from starving.
    maxWorkers: 2,
    reporters: ["default", "./test/harness/summary-reporter.ts"],
    // Components log to stderr; keep test output to what matters (failures print server logs).
    env: { COTAL_LOG_LEVEL: process.env.COTAL_LOG_LEVEL ?? "warn" },
  },
});
