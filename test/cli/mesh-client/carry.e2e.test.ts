// Transcript carry through the shipped CLI on a static mesh: `cotal up --detach` runs
// the mesh service (with its xfer endpoint) and the host's manager; `cotal spawn -d --resume <id>
// --on <instance>` finds the session under CLAUDE_CONFIG_DIR, carries it (a 2.5 MB transcript,
// bigger than the max payload) and says so; a second run sends 0 bytes; piped, no progress bar is
// drawn, on a terminal a bar shows bytes, rate and time left; a title instead of an id is refused (exit 2) listing the candidate; a duplicate id is
// refused (exit 1).
import { spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect, credsAuthenticator } from "@nats-io/transport-node";
import { CARRY_CHUNK_BYTES, names, xferChunkIndex, xferObjectFilter } from "../../../schemas/index.js";
import { buildCli, cleanEnv, CotalProcess, cotalBundle, freePort, runCotal } from "../../harness/cli.js";
import { until } from "../../../testbed/until.js";

const SESSION = "0b6c3a52-7d1e-4c55-9f0a-3e2b1c4d5e6f";
const OTHER = "11111111-2222-4333-8444-555555555555";
let project: string;
let config: string;
let instance: string;
const cotal = (...args: string[]) =>
  runCotal(args, { cwd: project, timeoutMs: 120_000, env: cleanEnv({ CLAUDE_CONFIG_DIR: config, COTAL_LOG_LEVEL: "warn" }) });

beforeAll(async () => {
  await buildCli();
  project = await mkdtemp(join(tmpdir(), "cotal-carry-cli-"));
  config = join(project, "laptop-claude");
  const up = await cotal("up", "--detach", "--port", String(await freePort()));
  expect(up.code, up.stderr).toBe(0);
  const ps = await cotal("ps", "--json");
  instance = (JSON.parse(ps.stdout) as Array<{ instance: string }>)[0]!.instance;
}, 120_000);

afterAll(async () => {
  if (existsSync(join(project, ".cotal", "mesh.json"))) await cotal("down").catch(() => undefined);
  await rm(project, { recursive: true, force: true });
});

function session(dir: string, id: string, body: string): string {
  mkdirSync(join(config, "projects", dir), { recursive: true });
  const file = join(config, "projects", dir, `${id}.jsonl`);
  writeFileSync(file, body);
  return file;
}

describe("cotal spawn --resume", () => {
  it("carries a session bigger than the max payload and says what it sent; a second run sends 0 bytes; piped, no bar", async () => {
    const body = `${JSON.stringify({ type: "summary", summary: "Fix the login bug" })}\n${Array.from({ length: 2_000 }, () => JSON.stringify({ type: "user", text: randomBytes(900).toString("base64") })).join("\n")}\n`;
    session("-work-app", SESSION, body);
    const digest = `sha256:${createHash("sha256").update(body).digest("hex")}`;
    const size = Buffer.byteLength(body);
    expect(size).toBeGreaterThan(1024 * 1024);

    // The seat itself may not start here (no model); the carry happens first and is reported.
    const first = await cotal("spawn", "-d", "--resume", SESSION, "--on", instance, "--wait-ms", "1000");
    expect(first.stdout, first.stderr).toContain(
      `carried session ${SESSION} to ${instance}: ${digest}, ${size} of ${size} bytes sent in ${Math.ceil(size / CARRY_CHUNK_BYTES)} chunks`,
    );
    expect(first.stderr).not.toContain("carrying");

    const second = await cotal("spawn", "-d", "--resume", SESSION, "--on", instance, "--wait-ms", "1000");
    expect(second.stdout, second.stderr).toContain(`carried session ${SESSION} to ${instance}: ${digest}, 0 of ${size} bytes sent in 0 chunks`);
  }, 180_000);

  it("on a terminal (util-linux script gives it a pty) a progress bar shows bytes, rate and time left, then the line", () => {
    const id = "33333333-2222-4333-8444-555555555555";
    session("-tty", id, `${Array.from({ length: 4_000 }, () => JSON.stringify({ t: randomBytes(900).toString("base64") })).join("\n")}\n`);
    const cmd = [process.execPath, cotalBundle, "spawn", "-d", "--resume", id, "--on", instance, "--wait-ms", "500"].map((a) => `'${a}'`).join(" ");
    const r = spawnSync("script", ["-qfec", cmd, "/dev/null"], {
      cwd: project,
      env: cleanEnv({ CLAUDE_CONFIG_DIR: config, COTAL_LOG_LEVEL: "warn" }),
      encoding: "utf8",
      timeout: 120_000,
    });
    expect(r.stdout).toMatch(/carrying .*\d+% \| \d+\/\d+ bytes \| [\d.]+ MB\/s \| ETA \d+s/);
    expect(r.stdout).toContain(`carried session ${id} to ${instance}:`);
  }, 180_000);

  it("a session not found here is resolved on the manager's host (cotal up gave its manager this CLAUDE_CONFIG_DIR)", async () => {
    const id = "44444444-2222-4333-8444-555555555555";
    session("-on-host", id, '{"type":"user"}\n');
    const elsewhere = join(project, "empty-claude");
    mkdirSync(elsewhere, { recursive: true });
    const r = await runCotal(["spawn", "-d", "--resume", id, "--on", instance, "--wait-ms", "500"], {
      cwd: project,
      timeoutMs: 120_000,
      env: cleanEnv({ CLAUDE_CONFIG_DIR: elsewhere, COTAL_LOG_LEVEL: "warn" }),
    });
    expect(r.stdout, r.stderr).toContain(
      `session ${id} found on ${instance}'s host: sha256:${createHash("sha256").update('{"type":"user"}\n').digest("hex")}, 16 bytes, nothing sent`,
    );
  }, 120_000);

  it("a CLI killed halfway (SIGKILL), run again, sends only what the broker did not store", async () => {
    const id = "55555555-2222-4333-8444-555555555555";
    const chunk = randomBytes(96 * 1024).toString("base64");
    const body = `${Array.from({ length: 900 }, (_, i) => JSON.stringify({ i, t: chunk })).join("\n")}\n`;
    session("-big", id, body);
    const size = Buffer.byteLength(body);
    const digest = createHash("sha256").update(body).digest("hex");
    // Watch the bucket as the data account does (the mesh service's own credential on this host).
    const mesh = JSON.parse(readFileSync(join(project, ".cotal", "mesh.json"), "utf8")) as { server: string; space: string };
    const data = await connect({
      servers: mesh.server,
      authenticator: credsAuthenticator(readFileSync(join(project, ".cotal", "auth", "creds", mesh.space, "mesh.creds"))),
    });
    try {
      const jsm = await jetstreamManager(data);
      const filter = xferObjectFilter(mesh.space, instance, `sha256:${digest}`);
      const chunks = async () =>
        Object.keys(
          (await jsm.streams.info(names.xferStream(mesh.space, instance), { subjects_filter: filter }).catch(() => undefined))?.state.subjects ?? {},
        ).map((s) => xferChunkIndex(s)!);
      const stored = async () => (await chunks()).length;
      const cli = CotalProcess.spawn(["spawn", "-d", "--resume", id, "--on", instance, "--wait-ms", "500"], {
        cwd: project,
        env: cleanEnv({ CLAUDE_CONFIG_DIR: config, COTAL_LOG_LEVEL: "warn" }),
      });
      await until(async () => (await stored()) >= 5, 60_000, "the first run to store 5 chunks", 20);
      cli.child.kill("SIGKILL");
      await cli.exited;
      // A chunk in flight at the kill may still land: take the count once it holds still.
      let kept = await stored();
      await until(
        async () => {
          await new Promise((r) => setTimeout(r, 300));
          const now = await stored();
          const still = now === kept;
          kept = now;
          return still;
        },
        10_000,
        "the stored chunk count to hold still",
      );
      const total = Math.ceil(size / CARRY_CHUNK_BYTES);
      expect(kept).toBeGreaterThanOrEqual(5);
      expect(kept).toBeLessThan(total);
      const keptBytes = (await chunks()).reduce((n, i) => n + Math.min(CARRY_CHUNK_BYTES, size - i * CARRY_CHUNK_BYTES), 0);

      const again = await cotal("spawn", "-d", "--resume", id, "--on", instance, "--wait-ms", "500");
      const m = /(\d+) of (\d+) bytes sent in (\d+) chunks/.exec(again.stdout);
      expect(m, again.stdout + again.stderr).not.toBeNull();
      expect(Number(m![2])).toBe(size);
      expect(Number(m![1])).toBe(size - keptBytes);
      expect(Number(m![3])).toBe(total - kept);
    } finally {
      await data.close();
    }
  }, 180_000);

  it("a title instead of an id is refused with the candidates; an id in two projects is refused; --resume needs --on when detached", async () => {
    const byName = await cotal("spawn", "-d", "--resume", "login bug", "--on", instance);
    expect(byName.code).toBe(2);
    expect(byName.stderr).toContain(SESSION);
    expect(byName.stderr).toMatch(/sha256:[0-9a-f]{64}/);

    session("-a", OTHER, "{}\n");
    session("-b", OTHER, "{}\n");
    const dup = await cotal("spawn", "-d", "--resume", OTHER, "--on", instance);
    expect(dup.code).toBe(1);
    expect(dup.stderr).toMatch(/is in 2 projects/);

    const unpinned = await cotal("spawn", "-d", "--resume", SESSION);
    expect(unpinned.code).toBe(2);
    expect(unpinned.stderr).toContain("--on");
  }, 120_000);
});
