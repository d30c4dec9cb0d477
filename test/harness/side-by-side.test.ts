// `npm test` runs the cluster project, then nats-newest, beside the rest (scripts/test-side-by-side.mjs,
// docs/testing.md "How npm test runs"). Run here on a small vitest config of the same four
// projects: the two processes run at the same time, the rest ten steps of niceness below the
// cluster lane, which runs at the runner's own priority, nats-newest after cluster; the lane's
// output comes whole after the rest's, one closing line counts both, and a failure in either fails the run.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { getPriority } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { projectRoot } from "./build.js";
import { cleanEnv } from "./cli.js";

const runner = join(projectRoot, "scripts", "test-side-by-side.mjs");
// Inside the checkout, so the fixture's config resolves vitest from its node_modules.
mkdirSync(join(projectRoot, "test-artifacts"), { recursive: true });
const fixtures = mkdtempSync(join(projectRoot, "test-artifacts", "side-by-side-"));
afterAll(() => rmSync(fixtures, { recursive: true, force: true }));

/** The niceness the runner starts at (this worker's: 10 under npm test), and the one it gives the rest. */
const own = getPriority();
const beside = Math.min(19, own + 10);

/** A folder with a vitest config of the projects `npm test` runs, and one small file each. */
function fixture(name: string, clusterFails: boolean): string {
  const dir = join(fixtures, name);
  const file = (path: string, text: string) => {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), text);
  };
  const reporter = JSON.stringify(join(projectRoot, "test", "harness", "summary-reporter.ts"));
  file(
    "vitest.config.ts",
    `import { defineConfig } from "vitest/config";
// Each side waits for the other (vitest's default 5 s is less than a loaded machine may take to start one).
export default defineConfig({ test: { testTimeout: 90_000, reporters: ["default", ${reporter}], projects: [
  { extends: true, test: { name: "all", include: ["rest/*.test.ts"] } },
  { extends: true, test: { name: "mesh-static", include: ["static/*.test.ts"] } },
  { extends: true, test: { name: "cluster", include: ["cluster/*.test.ts"], sequence: { groupOrder: 1 } } },
  { extends: true, test: { name: "nats-newest", include: ["newest/*.test.ts"], sequence: { groupOrder: 2 } } },
] } });
`,
  );
  const started = JSON.stringify(join(dir, "cluster-started"));
  file(
    "cluster/node.test.ts",
    `import { existsSync, writeFileSync } from "node:fs";
import { getPriority } from "node:os";
import { expect, it } from "vitest";
it("runs at the runner's priority, while the rest runs", async () => {
  writeFileSync(${started}, "");
  expect(getPriority()).toBe(${own});
  // The rest's test ends once this file exists: had the two run one after the other, it never would.
  while (!existsSync(${JSON.stringify(join(dir, "rest-saw-cluster"))})) await new Promise((r) => setTimeout(r, 50));
  writeFileSync(${JSON.stringify(join(dir, "cluster-ended"))}, "");
});
${clusterFails ? `it("fails", () => expect("cluster").toBe("passing"));\n` : ""}`,
  );
  file(
    "rest/one.test.ts",
    `import { existsSync, writeFileSync } from "node:fs";
import { getPriority } from "node:os";
import { expect, it } from "vitest";
it("runs at nice ${beside}, while the cluster project runs", async () => {
  expect(getPriority()).toBe(${beside});
  const until = Date.now() + 80_000;
  while (!existsSync(${started}) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
  expect(existsSync(${started}), "the cluster project started while the rest ran").toBe(true);
  writeFileSync(${JSON.stringify(join(dir, "rest-saw-cluster"))}, "");
});
`,
  );
  file(
    "newest/one.test.ts",
    `import { existsSync } from "node:fs";
import { getPriority } from "node:os";
import { expect, it } from "vitest";
it("runs in the cluster lane once the cluster project has ended", () => {
  expect(getPriority()).toBe(${own});
  expect(existsSync(${JSON.stringify(join(dir, "cluster-ended"))}), "the cluster project ended first").toBe(true);
});
`,
  );
  file(
    "static/one.test.ts",
    `import { getPriority } from "node:os";
import { expect, it } from "vitest";
it("runs beside the cluster project too", () => expect(getPriority()).toBe(${beside}));
`,
  );
  return dir;
}

function run(cwd: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    // Without this run's COTAL_TEST_TIMINGS and COTAL_TEST_SUMMARY, which the runner would overwrite.
    const child = spawn(process.execPath, [runner], { cwd, env: cleanEnv({ NO_COLOR: "1" }), stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (out += d));
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, out }));
  });
}

describe("npm test's two vitest processes", () => {
  it("run the cluster project, then nats-newest, at the same time as the rest, at a higher priority, and print their output whole after the rest's", async () => {
    const { code, out } = await run(fixture("green", false));
    expect(code, out).toBe(0);
    const clusterBlock = out.indexOf("── projects cluster and nats-newest, run beside the rest: passed");
    expect(clusterBlock, out).toBeGreaterThan(out.indexOf("rest/one.test.ts"));
    expect(out.indexOf("cluster/node.test.ts"), out).toBeGreaterThan(clusterBlock);
    expect(out.indexOf("newest/one.test.ts"), out).toBeGreaterThan(clusterBlock);
    expect(out).toMatch(/npm test: the projects all and mesh-static [\d.]+ s \(exit 0\), cluster and nats-newest beside them [\d.]+ s \(exit 0\)/);
    expect(out.trimEnd().split("\n").at(-1)).toBe("4 passed, 0 failed, 0 skipped");
    expect(out).toMatch(/slowest files \(tests and hooks\):[\s\S]* s {2}cluster cluster\/node\.test\.ts/);
  }, 120_000);

  it("fail the run when a cluster test fails, counting it in the one closing line", async () => {
    const { code, out } = await run(fixture("red", true));
    expect(code, out).toBe(1);
    expect(out).toContain("── projects cluster and nats-newest, run beside the rest: FAILED (exit 1)");
    expect(out.trimEnd().split("\n").at(-1)).toBe("4 passed, 1 failed, 0 skipped");
  }, 120_000);
});
