// `cotal up` storage limits, through the shipped bundle: a full backlog refuses the sender with
// the limit named and keeps what was stored; bad sizes are refused; a running mesh keeps its limits.
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCli, freePort, runCotal, type CliResult } from "../../harness/cli.js";

let project: string;
const cotal = (...args: string[]) => runCotal(args, { cwd: project });
const ok = (r: CliResult) => expect(r.code, `exit code; stderr: ${r.stderr}`).toBe(0);

beforeAll(async () => {
  await buildCli();
  project = await mkdtemp(join(tmpdir(), "cotal-limits-"));
});

afterAll(async () => {
  await runCotal(["down"], { cwd: project }).catch(() => undefined);
  await rm(project, { recursive: true, force: true });
});

describe("storage limits from cotal up", () => {
  it("a size that is not one is refused before anything starts", async () => {
    const r = await cotal("up", "--detach", "--dm-bytes", "12XB");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--dm-bytes must be a size such as 512MiB");
  });

  it("the DM backlog per sender is enforced by the broker and named in the refusal", async () => {
    ok(await cotal("up", "--detach", "--port", String(await freePort()), "--dm-backlog", "3", "--dm-bytes", "8MiB"));
    const info = JSON.parse(readFileSync(join(project, ".cotal", "mesh.json"), "utf8")) as { limits?: Record<string, number> };
    expect(info.limits).toEqual({ backlogPerSender: 3, dmBytes: 8 * 1024 ** 2 });
    for (let i = 0; i < 3; i++) ok(await cotal("send", "dm", "ghost", `waiting ${i}`, "--as", "alice", "--impersonate"));
    const refused = await cotal("send", "dm", "ghost", "one too many", "--as", "alice", "--impersonate");
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/maximum messages per subject exceeded/);
    // Another recipient is a separate backlog.
    ok(await cotal("send", "dm", "carol", "still fine", "--as", "alice", "--impersonate"));
    const status = (await cotal("status", "--json")).json<{ streams: Array<{ name: string; messages: number }> }>();
    expect(status.streams.find((s) => s.name === "DM_default")?.messages).toBe(4);
  });

  it("changing a limit of the running mesh is refused, not silently ignored", async () => {
    const r = await cotal("up", "--detach", "--dm-backlog", "5");
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("storage limits");
    expect(r.stderr).toContain("cotal down");
  });
});
