// Mutation testing (`npm run test:mutation`; not part of `npm test` or CI): Stryker changes
// one operator, condition or literal at a time in the files below and checks that some test
// fails. Results and how to read them: docs/testing.md.
//
// The mutated files are used by nearly every test, so a mutant run against the whole suite
// costs minutes. Each folder set is therefore measured against the tests written for it
// (`testFiles`), one set per run: COTAL_MUTATE=schemas|connector|broker|auth (default schemas).
import { readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import process from "node:process";

/**
 * Stryker's `file:start-end` ranges of the named members of `file`, found by the line that opens
 * each (a regular expression) and ending where its indentation closes: the authorization code of a
 * file that holds other things too, kept right while others edit the file around it.
 */
function rangesOf(file, openers) {
  const lines = readFileSync(file, "utf8").split("\n");
  const indent = (l) => /^\s*/.exec(l)[0].length;
  return openers.map((opener) => {
    const start = lines.findIndex((l) => opener.test(l));
    if (start < 0) throw new Error(`stryker.config.mjs: nothing in ${file} matches ${opener}`);
    // The first line back at the opener's indentation that does not open a block (`): T {` does).
    let end = lines.findIndex((l, i) => i > start && l.trim() !== "" && indent(l) <= indent(lines[start]) && !l.trimEnd().endsWith("{"));
    if (end < 0) end = lines.length;
    else if (!/^\s*[}\])]/.test(lines[end])) end -= 1;
    return `${file}:${start + 1}-${end + 1}`;
  });
}

const SETS = {
  schemas: {
    mutate: ["schemas/*.ts", "!schemas/index.ts"],
    // subject-patterns.ts is held against the builders by the permissions property test (no server).
    testFiles: ["test/schemas/*.test.ts", "test/broker/auth/permissions.test.ts"],
  },
  connector: {
    // The seat's inbox and everything that acks mail: hook receipts (control socket) and MCP receipts.
    mutate: ["connector/inbox.ts", "connector/written-reply.ts", "connector/hook-socket.ts", "connector/ndjson.ts"],
    testFiles: ["test/connector/*.test.ts"],
  },
  broker: {
    mutate: ["broker/verify.ts", "broker/control.ts", "broker/mesh-service.ts", "broker/auth/credential-authority.ts"],
    testFiles: ["test/broker/**/*.test.ts", "test/mesh/*.test.ts", "test/auth/*.test.ts", "test/attacks/*.test.ts"],
  },
  // Who may publish, subscribe and call: the permission builders, and the mesh service's
  // decisions on who may call what (the sender check, mint/revoke, read scope, roles, whoami).
  auth: {
    mutate: [
      "broker/auth/permissions.ts",
      // What a leaf host's connection may carry: the identities that run there.
      "broker/auth/leaf-scope.ts",
      // What the mesh service lets a reader call.
      "broker/auth/reader-calls.ts",
      ...rangesOf("broker/auth/request-info.ts", [/^export function senderOf\(/, /^function leafOf\(/, /^export async function checkSender\(/]),
      ...rangesOf("broker/auth/identity-registry.ts", [/^ {2}async mayRead\(/]),
      ...rangesOf("broker/mesh-service.ts", [
        /^ {4}const authenticated = opts\.auth/,
        /^ {2}async grantedRole\(/,
        /^ {4}if \(member !== undefined && this\.opts\.auth\)/,
        /^ {4}if \(this\.opts\.authorizeRead && !\(await/,
        /^ {4}const allowed = this\.opts\.authorizeRead/,
      ]),
      ...rangesOf("broker/auth/credential-authority.ts", [
        /^ {4}const auth = await this\.requireMinter\(/,
        /^ {4}const via = sender/,
        /^ {4}const through = rec/,
        /^ {2}private async requireMinter\(/,
        /^ {2}requireOperator\(/,
        /^ {2}async whoami\(/,
        // What a name was minted with, which a manager judges a helper's spawn by.
        /^ {2}async grant\(/,
        /^function mintedByOther\(/,
      ]),
      // The manager's helper policy: which personas, how many, never wider than the spawner.
      "manager/helpers.ts",
    ],
    // Quick tests that reach them on a real server (no dist/ needed); the profile table tries every profile.
    testFiles: [
      "test/broker/auth/permissions.test.ts",
      "test/broker/auth/request-info.test.ts",
      "test/auth/profile-table.test.ts",
      "test/auth/operator-only.test.ts",
      "test/attacks/leaf-credential.test.ts",
      "test/broker/auth/leaf-scope.test.ts",
      "test/attacks/least-privilege.test.ts",
      "test/attacks/limits-and-records.test.ts",
      "test/attacks/reader-profile.test.ts",
      "test/manager/spawn-policy.test.ts",
    ],
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
