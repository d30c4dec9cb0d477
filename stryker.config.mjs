// Mutation testing (`npm run test:mutation`; not part of `npm test` or CI): Stryker changes
// one operator, condition or literal at a time in the files below and checks that some test
// fails. Results and how to read them: docs/testing.md.
import os from "node:os";
import path from "node:path";

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: "vitest",
  vitest: { configFile: "vitest.mutation.config.ts", related: true },
  // Each mutant runs only the tests that reached it in the initial run.
  coverageAnalysis: "perTest",
  // Mutants in module-level code (zod schemas, alphabets) would each rerun every test that
  // imports the file — most of the suite. They are left out; docs/testing.md says what that hides.
  ignoreStatic: true,
  // Two cores, and the tests start real nats-servers: one mutant at a time (raise it with --concurrency).
  concurrency: 1,
  mutate: [
    "schemas/*.ts",
    "!schemas/index.ts",
    "broker/verify.ts",
    "broker/control.ts",
    "broker/mesh-service.ts",
    "connector/inbox.ts",
    "connector/receipts.ts",
    "connector/control-server.ts",
  ],
  ignorePatterns: ["dist", "coverage", ".cotal", "plugin/bin", "bench"],
  // The sandbox lives outside the project, so lint, typecheck and `vitest run` never see it.
  tempDirName: path.join(os.tmpdir(), "cotal-stryker"),
  timeoutMS: 20_000,
  reporters: ["clear-text", "progress", "html", "json"],
  htmlReporter: { fileName: "coverage/mutation/mutation.html" },
  jsonReporter: { fileName: "coverage/mutation/mutation.json" },
  thresholds: { high: 80, low: 70, break: null },
};
