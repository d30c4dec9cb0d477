import { defineConfig } from "vitest/config";

// The suite Stryker runs for each mutant (`npm run test:mutation`): everything but the tests
// that start real claude processes or run the built bundles in child processes (*.e2e.test.ts,
// test/e2e, the mesh service's memory test): a mutant lives only in the in-process sources, so
// those could never kill one and would only make every run slower. One project (the
// mesh-static duplicate is left out: the static-auth paths have their own tests in test/auth).
export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    exclude: ["test/e2e/**", "test/**/*.e2e.test.ts", "test/attacks/history-memory.test.ts", "**/node_modules/**"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    env: { COTAL_LOG_LEVEL: process.env.COTAL_LOG_LEVEL ?? "warn" },
  },
});
