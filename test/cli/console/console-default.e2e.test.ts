// `cotal console` on the mesh host with no --creds reads as the person at the mesh host (their
// credential from `cotal up`); on a mesh with no person recorded, as an observer minted once next to
// the mesh. Never with the operator's own credential.
import { existsSync, rmSync, statSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { credentialScope } from "../../../cli/identity/credential-scope.js";
import { buildCli, CotalProcess, freePort, runCotal } from "../../harness/cli.js";
import { until } from "../../../testbed/until.js";

let project: string;

beforeAll(async () => {
  await buildCli();
  project = await mkdtemp(join(tmpdir(), "cotal-console-up-"));
  const up = await runCotal(["up", "--detach", "--port", String(await freePort())], { cwd: project, timeoutMs: 60_000 });
  expect(up.code, up.stderr).toBe(0);
}, 90_000);
afterAll(async () => {
  await runCotal(["down"], { cwd: project }).catch(() => undefined);
  await rm(project, { recursive: true, force: true });
});

describe("cotal console on the mesh host", () => {
  it("reads as the person at the mesh host: posts show, others' DMs never", async () => {
    expect((await runCotal(["send", "msg", "general", "hello from the person"], { cwd: project })).code).toBe(0);
    expect((await runCotal(["send", "dm", "bob", "a DM for bob", "--as", "alice", "--impersonate"], { cwd: project })).code).toBe(0);
    const p = CotalProcess.spawn(["console", "--plain", "--channel", "general"], { cwd: project });
    try {
      await until(() => p.stderr.includes("Live from here"), 20_000, `the console went live\n${p.lines.join("\n")}\n${p.stderr}`);
      expect(
        p.lines.some((l) => / #general \S+: hello from the person$/.test(l) && !l.includes("sent by the operator")),
        p.lines.join("\n"),
      ).toBe(true);
      expect(p.lines.join("\n")).not.toContain("a DM for bob");
    } finally {
      await p.stop();
    }
    expect(existsSync(join(project, ".cotal", "creds", "console.creds"))).toBe(false);
  }, 90_000);

  it("with no person recorded, reads with an observer credential minted once into .cotal/creds/console.creds; posts show, DMs never", async () => {
    expect((await runCotal(["send", "msg", "general", "hello from alice", "--as", "alice", "--impersonate"], { cwd: project })).code).toBe(0);
    expect((await runCotal(["send", "dm", "bob", "a private DM body", "--as", "alice", "--impersonate"], { cwd: project })).code).toBe(0);
    rmSync(join(project, ".cotal", "person.json"));
    const file = join(project, ".cotal", "creds", "console.creds");
    const minted: number[] = [];
    for (let round = 0; round < 2; round++) {
      const p = CotalProcess.spawn(["console", "--plain", "--channel", "general"], { cwd: project });
      try {
        await until(() => p.stderr.includes("Live from here"), 20_000, `the console went live\n${p.lines.join("\n")}\n${p.stderr}`);
        expect(
          p.lines.some((l) => /^\[history\] \S+ #general alice \(sent by the operator local\.cotal_cli\): hello from alice$/.test(l)),
          p.lines.join("\n"),
        ).toBe(true);
        expect(p.lines.join("\n")).not.toContain("a private DM body");
      } finally {
        await p.stop();
      }
      expect(credentialScope(file)).toMatchObject({ profile: "observer", principal: "local.console" });
      minted.push(statSync(file).mtimeMs);
    }
    expect(minted[1]).toBe(minted[0]);
  }, 90_000);
});
