// docs/cli.md: without dist/cotal-service.mjs beside the CLI's bundle (a copy of dist/cotal.mjs,
// the launcher, with the bundle it runs and nothing else), `cotal up` runs the mesh service and the manager from the CLI itself, with the services'
// V8 flag, and `down` stops them. Through that copy, as a user who has only it would run it.
import { execFile } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SERVICE_NODE_FLAGS } from "../../../cli/mesh-host/service-process.js";
import { buildCli, cleanEnv, cotalBundle, freePort } from "../../harness/cli.js";

let root: string;
let lone: string;
let project: string;
const run = (...args: string[]) => promisify(execFile)(process.execPath, [lone, ...args], { cwd: project, env: cleanEnv(), timeout: 60_000 });

beforeAll(async () => {
  await buildCli();
  root = await mkdtemp(join(tmpdir(), "cotal-lone-"));
  // The CLI's bundle alone, under a package.json named cotal (what packageRoot() looks for).
  mkdirSync(join(root, "pkg", "dist"), { recursive: true });
  lone = join(root, "pkg", "dist", "cotal.mjs");
  copyFileSync(cotalBundle, lone);
  for (const f of ["cotal.cjs", "code-cache.mjs"]) copyFileSync(join(dirname(cotalBundle), f), join(root, "pkg", "dist", f));
  writeFileSync(join(root, "pkg", "package.json"), JSON.stringify({ name: "cotal", version: "0.0.0", type: "module" }));
  project = join(root, "project");
  mkdirSync(project);
}, 120_000);

afterAll(async () => {
  await run("down").catch(() => undefined);
  await rm(root, { recursive: true, force: true });
});

describe("a CLI bundle without the services' bundle beside it", () => {
  it("cotal up runs the mesh service and the manager from the CLI itself, with the services' flag; down stops them", async () => {
    expect(existsSync(join(root, "pkg", "dist", "cotal-service.mjs"))).toBe(false);
    await run("up", "--detach", "--port", String(await freePort()));
    const pids: number[] = [];
    for (const name of ["mesh-service", "manager"]) {
      const { pid } = JSON.parse(readFileSync(join(project, ".cotal", "run", `${name}.json`), "utf8")) as { pid: number };
      const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      expect([name, argv.slice(1, 3)]).toEqual([name, [...SERVICE_NODE_FLAGS, lone]]);
      pids.push(pid);
    }
    const status = await run("status");
    expect(status.stdout).toMatch(/mesh service pid \d+ running; manager pid \d+ running/);
    await run("down");
    for (const pid of pids)
      expect(existsSync(`/proc/${pid}`) && !/\) [ZX] /.test(readFileSync(`/proc/${pid}/stat`, "utf8")), `pid ${pid} after down`).toBe(false);
  }, 120_000);
});
