// A machine whose only nats-server is too old (Debian 12's 2.9.10, in /usr/sbin here): `cotal up`
// and the test harness fetch a supported one themselves, the way scripts/install-nats-server.sh
// does (Debian's package by name, into the user's own folder), and say what they fetched and
// where; where that cannot work (no apt-get) the error names the one command to run. HOME and
// COTAL_NATS_DIR point at temp folders, so the real ~/.local is never touched.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readlinkSync, readFileSync, symlinkSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { natsServerVersion } from "../../../broker/index.js";
import { newestNatsServer, NewestNatsServerError, testNatsServer } from "../../../testbed/nats-server.js";
import { buildCli, cleanEnv, freePort, projectRoot, runCotal } from "../../harness/cli.js";

const OLD_SERVER = "/usr/sbin/nats-server";
const dirs: string[] = [];

async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), "cotal-fetch-"));
  dirs.push(d);
  return d;
}

/** A user whose HOME (and so ~/.local/share/cotal/bin) is a fresh temp folder, with only the machine's old server on PATH. */
async function freshUser(path = "/usr/sbin:/usr/bin:/bin"): Promise<{ home: string; natsDir: string; env: NodeJS.ProcessEnv }> {
  const home = await tempDir();
  const natsDir = join(home, "nats-bin");
  return { home, natsDir, env: cleanEnv({ HOME: home, COTAL_NATS_DIR: natsDir, NATS_SERVER_BIN: "", PATH: path }) };
}

beforeAll(async () => {
  await buildCli();
  // The premise: the machine's own server is one Cotal refuses.
  expect(natsServerVersion(OLD_SERVER)?.minor).toBeLessThan(10);
});

afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe("where only a nats-server older than 2.10 is found", () => {
  it("cotal up -d fetches Debian's 2.10 package into the user's folder, says so, and starts it", async () => {
    const { home, natsDir, env } = await freshUser();
    const cwd = join(home, "project");
    mkdirSync(cwd);
    const up = await runCotal(["up", "--detach", "--port", String(await freePort())], { cwd, env, timeoutMs: 300_000 });
    try {
      expect(up.code, up.stderr).toBe(0);
      expect(up.stderr).toContain(`found only ${OLD_SERVER} v2.9.10`);
      expect(up.stderr).toContain(`fetching Debian's package nats-server into ${natsDir}`);
      expect(up.stderr).toMatch(new RegExp(`fetched nats-server v2\\.(1\\d|[2-9]\\d)\\.\\d+ to ${natsDir}/nats-server`));
      expect(natsServerVersion(join(natsDir, "nats-server"))?.minor).toBeGreaterThanOrEqual(10);
      // The server running is the fetched one.
      const { pid } = JSON.parse(readFileSync(join(cwd, ".cotal", "run", "nats-server.json"), "utf8")) as { pid: number };
      expect(readlinkSync(`/proc/${pid}/exe`)).toBe(join(natsDir, "nats-server"));
      const status = await runCotal(["status", "--json"], { cwd, env });
      expect(status.json<{ serverVersion: string }>().serverVersion).toMatch(/^2\.(1\d|[2-9]\d)\./);
    } finally {
      await runCotal(["down"], { cwd, env });
    }
  });

  it("without apt-get, cotal up names the one command to run and starts nothing", async () => {
    const tools = await tempDir();
    for (const [name, target] of [
      ["bash", "/bin/bash"],
      ["nats-server", OLD_SERVER],
    ] as const)
      symlinkSync(target, join(tools, name));
    const { home, env } = await freshUser(tools);
    const cwd = join(home, "project");
    mkdirSync(cwd);
    const up = await runCotal(["up", "--detach", "--port", String(await freePort())], { cwd, env });
    expect(up.code, up.stderr).not.toBe(0);
    expect(up.stderr).toContain("Fetching one failed: apt-get not found");
    expect(up.stderr).toContain(`Run \`bash ${join(projectRoot, "scripts", "install-nats-server.sh")}\``);
    expect(up.stderr).toContain("NATS_SERVER_BIN");
    expect(existsSync(join(cwd, ".cotal", "run", "nats-server.json"))).toBe(false);
  });

  it("the test harness fetches one the same way", async () => {
    const { natsDir, env } = await freshUser();
    const said: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string | Uint8Array) => (said.push(String(chunk)), true)) as typeof process.stderr.write;
    let bin: string;
    try {
      bin = testNatsServer(env);
    } finally {
      process.stderr.write = write;
    }
    expect(bin).toBe(join(natsDir, "nats-server"));
    expect(natsServerVersion(bin)?.minor).toBeGreaterThanOrEqual(10);
    expect(said.join("")).toContain(`fetched nats-server v2.`);
  });
});

// The suite's project nats-newest runs on the newest supported server, Debian sid's package fetched
// by the same installer into a folder of its own (docs/testing.md "Vitest projects").
describe("the newest supported nats-server, for project nats-newest", () => {
  it("is fetched from Debian sid beside the folder cotal up uses, which cotal up never searches", async () => {
    const { natsDir, env } = await freshUser();
    const said: string[] = [];
    const bin = newestNatsServer(env, (line) => said.push(line));
    expect(bin).toBe(join(`${natsDir}-sid`, "nats-server"));
    expect(natsServerVersion(bin)?.minor).toBeGreaterThanOrEqual(15);
    expect(said.join("\n")).toMatch(/fetching Debian sid's nats-server \(2\.15 or newer\)[\s\S]*fetched nats-server v2\.\d+\.\d+ to /);
    expect(existsSync(join(natsDir, "nats-server"))).toBe(false);
    // Found the second time, nothing fetched.
    const again: string[] = [];
    expect(newestNatsServer(env, (line) => again.push(line))).toBe(bin);
    expect(again).toEqual([]);
  });

  it("the installer refuses a package older than COTAL_NATS_MIN_MINOR and leaves DEST as it was", async () => {
    const { natsDir, env } = await freshUser();
    const r = await runInstaller([natsDir], { ...env, COTAL_NATS_MIN_MINOR: "15" });
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toMatch(/gave nats-server: v2\.10\.\d+, not >= 2\.15/);
    expect(existsSync(join(natsDir, "nats-server"))).toBe(false);
  });

  it("a COTAL_NATS_NEWEST_BIN older than 2.15 is refused, naming it, never replaced by a fetched one", async () => {
    const { env } = await freshUser();
    const older = findOlder();
    const err = (() => {
      try {
        return newestNatsServer({ ...env, COTAL_NATS_NEWEST_BIN: older });
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(NewestNatsServerError);
    expect((err as Error).message).toMatch(new RegExp(`COTAL_NATS_NEWEST_BIN: ${older} is v2\\.\\d+\\.\\d+, not nats-server 2\\.15 or newer`));
  });
});

/** The machine's 2.10 (what every other project runs on): older than the newest supported. */
function findOlder(): string {
  const bin = testNatsServer();
  expect(natsServerVersion(bin)?.minor).toBeLessThan(15);
  return bin;
}

function runInstaller(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", [join(projectRoot, "scripts", "install-nats-server.sh"), ...args], { env, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, stderr }));
  });
}
