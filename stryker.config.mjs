// Mutation testing (`npm run test:mutation`; not part of `npm test` or CI): Stryker changes
// one operator, condition or literal at a time in the files below and checks that some test
// fails. Results and how to read them: docs/testing.md.
//
// The mutated files are used by nearly every test, so a mutant run against the whole suite
// costs minutes. Each folder set is therefore measured against the tests written for it
// (`testFiles`), one set per run: COTAL_MUTATE=schemas|connector|broker (default schemas).
import os from "node:os";
import path from "node:path";
import process from "node:process";

const SETS = {
  schemas: {
    mutate: ["schemas/*.ts", "!schemas/index.ts"],
    // subject-patterns.ts is held against the builders by the permissions property test (no server).
    testFiles: ["test/schemas/*.test.ts", "test/auth/permissions-property.test.ts"],
  },
  connector: {
    // The seat's inbox and everything that acks mail: hook receipts (control socket) and MCP receipts.
    mutate: ["connector/inbox.ts", "connector/written-reply.ts", "connector/hook-socket.ts", "connector/ndjson.ts"],
    testFiles: ["test/connector/*.test.ts"],
  },
  broker: {
    mutate: ["broker/verify.ts", "broker/control.ts", "broker/mesh-service.ts"],
    testFiles: ["test/mesh/*.test.ts", "test/auth/*.test.ts", "test/attacks/*.test.ts"],
  },
};

const name = process.env.COTAL_MUTATE ?? "schemas";
const set = SETS[name];
if (!set) throw new Error(`COTAL_MUTATE=${name}: use one of ${Object.keys(SETS).join(", ")}`);

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: "vitest",
  vitest: { configFile: "vitest.mutation.config.ts", related: true },
  // Each mutant runs only the tests that reached it in the initial run.
  coverageAnalysis: "perTest",
  // Mutants in module-level code (zod schemas, alphabets, constants) would each rerun every
  // test of the set; they are left out (docs/testing.md says what that hides).
  ignoreStatic: true,
  // Two cores, and the tests start real nats-servers: one mutant at a time (raise it with --concurrency).
  concurrency: 1,
  mutate: set.mutate,
  testFiles: set.testFiles,
  ignorePatterns: ["dist", "coverage", ".cotal", "plugin/bin"],
  // The sandbox lives outside the project, so lint, typecheck and `vitest run` never see it.
  tempDirName: path.join(os.tmpdir(), `cotal-stryker-${name}`),
  timeoutMS: 20_000,
  reporters: ["clear-text", "progress", "html", "json"],
  htmlReporter: { fileName: `coverage/mutation/${name}.html` },
  jsonReporter: { fileName: `coverage/mutation/${name}.json` },
  thresholds: { high: 80, low: 70, break: null },
};
