// The package as another project meets it: `npm pack` here, `npm install` of the tarball into an
// empty folder (from npm's cache: --prefer-offline; the bundles carry every dependency anyway),
// then its own `cotal` starts a mesh there, mints, sends, listens and stops it.
import { execFile } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCli, cleanEnv, freePort, projectRoot } from "../harness/cli.js";
import { until } from "../../testbed/until.js";

const run = promisify(execFile);
let work: string;
let project: string;
let cotalBin: string;

/** Run the installed package's `cotal` in the project folder. */
async function cotal(...args: string[]): Promise<{ stdout: string; stderr: string }> {
  return run(process.execPath, [cotalBin, ...args], { cwd: project, env: cleanEnv(), timeout: 30_000 });
}

beforeAll(async () => {
  await buildCli();
  work = await mkdtemp(join(tmpdir(), "cotal-pack-"));
  project = join(work, "project");
  // The bundles are built above: pack what is there (the prepare script would build again).
  await run("npm", ["pack", "--ignore-scripts", "--pack-destination", work], { cwd: projectRoot, timeout: 120_000 });
  const tarball = readdirSync(work).find((f) => f.endsWith(".tgz"));
  if (!tarball) throw new Error(`npm pack wrote no tarball into ${work}`);
  await mkdir(project);
  await writeFile(join(project, "package.json"), JSON.stringify({ name: "someone-elses-project", version: "1.0.0", private: true }));
  await run("npm", ["install", "--save-dev", "--prefer-offline", "--no-audit", "--no-fund", join(work, tarball)], { cwd: project, timeout: 180_000 });
  cotalBin = join(project, "node_modules", ".bin", "cotal");
}, 300_000);

afterAll(async () => {
  await cotal("down").catch(() => undefined);
  await rm(work, { recursive: true, force: true });
});

describe("the packed package installed into an empty project", () => {
  it("ships its bundles, plugin and docs, and nothing of the sources", () => {
    const pkg = join(project, "node_modules", "cotal");
    for (const f of [
      "dist/cotal.mjs",
      "dist/cotal.cjs",
      "dist/code-cache.mjs",
      "dist/console-ink.mjs",
      "dist/connector.mjs",
      "dist/hook.mjs",
      "plugin/.claude-plugin/plugin.json",
      "plugin/bin/connector.mjs",
      "docs/cli.md",
      "README.md",
    ]) {
      expect([f, existsSync(join(pkg, f))]).toEqual([f, true]);
    }
    expect(existsSync(join(pkg, "cli"))).toBe(false);
    expect(existsSync(cotalBin)).toBe(true);
  });

  it("starts a mesh, mints, sends, listens and stops, from the project folder", async () => {
    const port = await freePort();
    await cotal("up", "-d", "--port", String(port));
    expect(existsSync(join(project, ".cotal", "mesh.json"))).toBe(true);
    await cotal("mint", "bob", "--profile", "agent", "--allow-subscribe", "general", "--provision");
    await cotal("mint", "alice", "--profile", "agent", "--allow-publish", "general");

    const out: string[] = [];
    const listen = execFile(process.execPath, [cotalBin, "listen", "--json", "--channel", "general", "--creds", ".cotal/creds/bob.creds"], {
      cwd: project,
      env: cleanEnv(),
    });
    listen.stdout!.on("data", (c: Buffer) => out.push(...c.toString().split("\n").filter(Boolean)));
    try {
      await until(() => out.some((l) => l.includes('"type":"ready"')), 20_000, "listen to be ready");
      const sent = await cotal("send", "msg", "general", "hello from a packed cotal", "--creds", ".cotal/creds/alice.creds");
      expect(sent.stdout).toMatch(/^stored seq \d+ on general/);
      await until(() => out.some((l) => l.includes("hello from a packed cotal")), 20_000, "the post to reach the listener");
    } finally {
      listen.kill("SIGINT");
    }
    const setupDir = (await cotal("setup", "--print-plugin-dir")).stdout.trim();
    expect(setupDir).toBe(join(project, "node_modules", "cotal", "plugin"));
    const down = await cotal("down");
    expect(down.stdout).toContain("nats-server: stopped");
  });

  it("doctor without any agent CLI fails for Claude, the runtime seats run by default, and only warns for the others", async () => {
    // No agent CLI anywhere: none on PATH (this test's own node_modules/.bin left out), none in the package.
    const PATH = (process.env.PATH ?? "")
      .split(":")
      .filter((d) => !d.includes("node_modules"))
      .join(":");
    const r = await run(process.execPath, [cotalBin, "doctor", "--json"], { cwd: project, env: cleanEnv({ PATH }), timeout: 60_000 }).catch(
      (err: { code: number; stdout: string }) => ({ code: err.code, stdout: err.stdout }),
    );
    expect("code" in r ? r.code : 0).toBe(1);
    const report = JSON.parse(r.stdout) as { ok: boolean; checks: Array<{ id: string; verdict: string; detail: string }> };
    expect(report.ok).toBe(false);
    const runtimes = report.checks.filter((c) => c.id.startsWith("runtime:"));
    expect(runtimes.find((c) => c.id === "runtime:claude")).toMatchObject({
      verdict: "fail",
      detail: expect.stringMatching(/is not installed here.*Needed here: the default runtime/),
    });
    for (const c of runtimes.filter((x) => x.id !== "runtime:claude")) expect(c.verdict, c.id).toBe("warn");
  });
});
