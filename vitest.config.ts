import { defineConfig } from "vitest/config";
import { newestNatsServerPath } from "./testbed/nats-server.js";

/**
 * Tests that form JetStream clusters or run containers: their nodes elect leaders on raft timers,
 * and on a 2-core machine starved by the rest of the suite (real agent CLIs, many `cotal` calls)
 * elections stalled past any sane wait (three CI runs failed in these files, never alone). `npm
 * test` (scripts/test.mjs) runs them in a vitest process of their own beside the rest, which runs
 * at a lower CPU priority; a plain `vitest run` runs them after everything else (groupOrder), with
 * nothing else running (docs/testing.md "Vitest projects").
 */
const CLUSTER_FILES = [
  "test/cluster/**/*.test.ts",
  "test/containers/**/*.test.ts",
  "test/durability/power-loss.test.ts",
  "test/bench/cluster.test.ts",
  // Builds hosts out of network namespaces and runs fault schedules on them (docs/reliability.md).
  "test/faults/faults.test.ts",
  // Files that wait out credential lifetimes (a renewal due, an expiry) on the clock: mostly idle,
  // they held one of the rest's two workers for 60 and 34 s; here, at the higher priority, a
  // starved `cotal up` cannot miss the window they give it (docs/testing.md "Vitest projects").
  "test/cli/mesh-host/manager-renewal.e2e.test.ts",
  "test/manager/creds-renewal.test.ts",
];

/**
 * `npm run test:fast` (scripts/test-fast.mjs) sets COTAL_TEST_TIER=fast: the inner loop leaves out
 * what needs an agent CLI, a browser, a container or a cluster (docs/testing.md "Tiers"). `npm test`
 * stays the whole suite.
 */
const SLOW_FILES = [
  ...CLUSTER_FILES,
  "test/**/*.e2e.test.ts",
  "test/bench/**",
  "test/deploy/compose.test.ts",
  // Runs the real Claude Code against a model double.
  "test/claude/allow-tools.test.ts",
  // Load tests: presence at 200 endpoints, floods of revocations and control calls.
  "test/mesh/presence-scale.test.ts",
  "test/attacks/revocation-flood.test.ts",
  "test/attacks/flood.test.ts",
];
const LEFT_OUT = process.env.COTAL_TEST_TIER === "fast" ? SLOW_FILES : CLUSTER_FILES;

/**
 * The `nats-newest` project: the folders that prove the broker's side (its modules, the mesh core,
 * auth, the attacks, the connector) once more on the newest supported nats-server (2.15, Debian
 * sid's), beside the rest on 2.10. Left out: the files that run real agent CLIs (`*.e2e.test.ts`),
 * whose server traffic is what the other files of these folders already send (docs/testing.md
 * "Vitest projects").
 */
const NEWEST_FOLDERS = ["test/broker", "test/mesh", "test/auth", "test/attacks", "test/connector"];

/**
 * The `mesh-static` project: the mesh core again on static-auth meshes with real minted
 * credentials. The behaviour files (`test/mesh/`) and the broker's own modules (`test/broker/`'s
 * top level: the mesh service, the control rail, provisioning, quiet pulls, history, roster,
 * artifacts), which reach the mesh through `TestMesh` and so run either way; `test/broker/auth/`
 * is static auth already.
 */
const MESH_CORE = ["test/mesh/**/*.test.ts", "test/broker/*.test.ts"];

export default defineConfig({
  test: {
    // The mesh core runs twice: on open meshes, and on static-auth meshes with real minted
    // credentials (project mesh-static); with the broker's modules, auth, attacks and the connector
    // a third time, on the newest supported nats-server (project nats-newest).
    projects: [
      { extends: true, test: { name: "all", include: ["test/**/*.test.ts"], exclude: LEFT_OUT, sequence: { groupOrder: 0 } } },
      {
        extends: true,
        test: { name: "mesh-static", include: MESH_CORE, exclude: LEFT_OUT, env: { COTAL_TEST_MODE: "static" }, sequence: { groupOrder: 0 } },
      },
      { extends: true, test: { name: "cluster", include: CLUSTER_FILES, sequence: { groupOrder: 1 } } },
      {
        extends: true,
        test: {
          name: "nats-newest",
          include: NEWEST_FOLDERS.map((f) => `${f}/**/*.test.ts`),
          exclude: [...LEFT_OUT, "test/**/*.e2e.test.ts"],
          // The harness and every `cotal` a test runs take their server from NATS_SERVER_BIN.
          env: { NATS_SERVER_BIN: newestNatsServerPath() },
          globalSetup: ["./test/harness/nats-newest-setup.ts"],
          setupFiles: ["./test/harness/nats-newest-check.ts"],
          sequence: { groupOrder: 2 },
        },
      },
    ],
    // A supported nats-server, fetched once before the workers start when the machine has none.
    globalSetup: ["./test/harness/nats-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Two cores: two workers keep real nats-servers and real claude processes from starving.
    maxWorkers: 2,
    // A worker runs its files one after another in one process, modules loaded once: each file
    // importing vitest, zod and the NATS client afresh was a third of the CPU of the mesh tests
    // (docs/testing.md "What the suite costs"). Tests restore what they change (env, cwd).
    isolate: false,
    reporters: ["default", "./test/harness/summary-reporter.ts"],
    // Components log to stderr; keep test output to what matters (failures print server logs).
    env: { COTAL_LOG_LEVEL: process.env.COTAL_LOG_LEVEL ?? "warn" },
  },
});
