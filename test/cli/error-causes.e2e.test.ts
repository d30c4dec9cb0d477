// Errors that name their cause, through the shipped CLI: a restore that stops part-way says why
// (the server's refusal) and what to do, not "fix what the cause names"; `send --impersonate` to a
// server where nothing answers says nothing answers, not that --impersonate was wrong.
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cliFolder, freePort, runCotal, type CliResult } from "../harness/cli.js";

const { dir, cotal } = cliFolder("cotal-error-causes-", 120_000);

const ok = (r: CliResult, what: string): CliResult => {
  expect(r.code, `${what}: exit code\nstdout: ${r.stdout}\nstderr: ${r.stderr}`).toBe(0);
  return r;
};

describe("errors name their cause", () => {
  it("a restore that stops part-way names the stream, the server's reason and the fix", async () => {
    const from = join(dir, "from");
    const onto = join(dir, "onto");
    const backup = join(dir, "backup");
    mkdirSync(from);
    mkdirSync(onto);
    const inFrom = (...args: string[]) => runCotal(args, { cwd: from, timeoutMs: 120_000 });
    const inOnto = (...args: string[]) => runCotal(args, { cwd: onto, timeoutMs: 120_000 });
    try {
      // A space whose channel store may grow to 3 GiB (its account holds 8 GiB).
      ok(await inFrom("up", "-d", "--port", String(await freePort()), "--chat-bytes", "3GiB", "--max-disk", "8GiB"), "up (from)");
      ok(await inFrom("send", "msg", "general", "hello", "--as", "op", "--impersonate"), "send");
      ok(await inFrom("backup", backup), "backup");
    } finally {
      await inFrom("down");
    }
    // The backup's account allowed 3.5 GiB: its streams' limits no longer fit, from the second stream on.
    const limits = join(backup, "identity", "accounts", "default.limits.json");
    const text = Buffer.from('{"diskBytes": 3758096384, "memoryBytes": 268435456}');
    writeFileSync(limits, text);
    const manifest = JSON.parse(readFileSync(join(backup, "manifest.json"), "utf8")) as { files: Array<{ path: string; bytes: number; sha256: string }> };
    const entry = manifest.files.find((f) => f.path.endsWith("default.limits.json"))!;
    Object.assign(entry, { bytes: text.length, sha256: `sha256:${createHash("sha256").update(text).digest("hex")}` });
    writeFileSync(join(backup, "manifest.json"), JSON.stringify(manifest, null, 2));
    try {
      ok(await inOnto("up", "-d", "--port", String(await freePort())), "up (onto)");
      const r = await inOnto("restore", backup);
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr).toMatch(/The restore stopped at stream DM_default: .*insufficient storage resources available/);
      expect(r.stderr).not.toContain("Fix what the cause names");
      expect(r.stderr).toContain(`\`cotal restore ${backup} --force\` starts over.`);
    } finally {
      await inOnto("down");
    }
  }, 240_000);

  it("up whose streams do not fit --max-disk names the cause and the flags, and leaves the folder as it found it", async () => {
    const fresh = join(dir, "small");
    mkdirSync(fresh);
    const r = await runCotal(["up", "-d", "--port", String(await freePort()), "--max-disk", "1GiB"], { cwd: fresh, timeoutMs: 60_000 });
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toContain("The space's streams do not fit the JetStream storage this mesh may use: insufficient storage resources available");
    expect(r.stderr).toContain("Give the space more storage (--max-disk");
    expect(readdirSync(fresh)).toEqual([]);
  });

  it("send --impersonate where nothing answers: says nothing answers there (exit 3), not that --impersonate is wrong", async () => {
    const r = await cotal("send", "msg", "general", "hi", "--server", "127.0.0.1:1", "--space", "default", "--as", "bob", "--impersonate");
    expect(r.code, r.stderr).toBe(3);
    expect(r.stderr).toContain("Cannot reach the mesh at nats://127.0.0.1:1. Nothing answers there");
    expect(r.stderr).not.toContain("--impersonate");
  });

  it("send --impersonate on an open mesh that answers: --impersonate needs a credential, exit 2", async () => {
    const port = await freePort();
    ok(await cotal("up", "-d", "--open", "--port", String(port)), "up --open");
    const r = await cotal("send", "msg", "general", "hi", "--as", "bob", "--impersonate");
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain(`--impersonate needs a credential: the mesh at nats://127.0.0.1:${port} is open and verifies no names.`);
  });
});
