// `cotal send … --attach FILE` and `cotal fetch <digest>` through the shipped bundle, on an open
// and on a static mesh (where an agent credential has no JetStream at all: the mesh service
// stores and serves the bytes). A 5 MB random file comes back byte-identical.
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCli, freePort, runCotal, type CliResult } from "../harness/cli.js";

const ok = (r: CliResult) => expect(r.code, `exit code; stderr: ${r.stderr}`).toBe(0);

beforeAll(async () => {
  await buildCli();
});

describe.each(["open", "static"] as const)("attachments on an %s mesh", (mode) => {
  let project: string;
  const cotal = (...args: string[]) => runCotal(args, { cwd: project, timeoutMs: 60_000 });
  const bytes = randomBytes(5 * 1024 * 1024);
  /** Credential flags of the sender and of the reader (static: two minted agents). */
  let sender: string[] = [];
  let reader: string[] = [];
  let digest = "";

  beforeAll(async () => {
    project = await mkdtemp(join(tmpdir(), `cotal-attach-${mode}-`));
    const port = await freePort();
    ok(await cotal("up", "--detach", "--port", String(port), ...(mode === "open" ? ["--open"] : [])));
    writeFileSync(join(project, "big.bin"), bytes);
    if (mode === "static") {
      const mint = async (name: string) =>
        (await cotal("mint", name, "--profile", "agent", "--allow-publish", "general", "--allow-subscribe", "general", "--provision", "--json")).json<{
          creds: string;
        }>().creds;
      sender = ["--creds", await mint("alice")];
      reader = ["--creds", await mint("bob")];
    }
  }, 120_000);

  afterAll(async () => {
    await runCotal(["down"], { cwd: project }).catch(() => undefined);
    await rm(project, { recursive: true, force: true });
  });

  it("send --attach stores the file and posts an artifact part beside the text", async () => {
    const r = await cotal("send", "msg", "general", "the build log", "--attach", "big.bin", "--json", ...sender);
    ok(r);
    const receipt = r.json<{ artifacts: Array<{ kind: string; name: string; digest: string; size: number; mediaType: string; uploaded: boolean }> }>();
    expect(receipt.artifacts).toHaveLength(1);
    expect(receipt.artifacts[0]).toMatchObject({
      kind: "artifact",
      name: "big.bin",
      size: bytes.length,
      mediaType: "application/octet-stream",
      uploaded: true,
    });
    digest = receipt.artifacts[0]!.digest;
    expect(digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    const h = await cotal("history", "general", "--json", ...reader);
    ok(h);
    const parts = h.json<Array<{ message: { parts: unknown[] } }>>().at(-1)!.message.parts;
    expect(parts).toEqual([
      { kind: "text", text: "the build log" },
      expect.objectContaining({ kind: "artifact", digest, size: bytes.length, name: "big.bin" }),
    ]);
    // The human view names the file and its digest, so a reader knows what to fetch.
    const shown = await cotal("history", "general", ...reader);
    ok(shown);
    expect(shown.stdout).toContain(`the build log [big.bin, ${bytes.length} bytes, ${digest}]`);
  });

  it("fetch <digest> -o FILE writes the same bytes, checked; attaching them again sends nothing", async () => {
    const r = await cotal("fetch", digest, "-o", "copy.bin", ...reader);
    ok(r);
    expect(r.stdout).toContain("sha256 checked");
    expect(readFileSync(join(project, "copy.bin")).equals(bytes)).toBe(true);
    const again = await cotal("send", "msg", "general", "--attach", "copy.bin", "--json", ...sender);
    ok(again);
    expect(again.json<{ artifacts: Array<{ digest: string; uploaded: boolean }> }>().artifacts).toEqual([expect.objectContaining({ digest, uploaded: false })]);
  });

  it("fetch -o - writes the bytes to standard output", async () => {
    writeFileSync(join(project, "note.txt"), "a small note\n");
    const sent = await cotal("send", "msg", "general", "--attach", "note.txt", "--json", ...sender);
    ok(sent);
    const small = sent.json<{ artifacts: Array<{ digest: string; mediaType: string }> }>().artifacts[0]!;
    expect(small.mediaType).toBe("text/plain");
    const r = await cotal("fetch", small.digest, "-o", "-", ...reader);
    ok(r);
    expect(r.stdout).toBe("a small note\n");
  });

  it("without -o it never writes over an existing file of the sender's name", async () => {
    const r = await cotal("fetch", digest, ...reader);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('Not writing "big.bin": a file of that name exists here');
    expect(readFileSync(join(project, "big.bin")).equals(bytes)).toBe(true);
  });

  it("an unknown digest fails (exit 1) and a malformed one is bad input (exit 2), writing nothing", async () => {
    const unknown = `sha256:${"0".repeat(64)}`;
    const r = await cotal("fetch", unknown, "-o", "never.bin", ...reader);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`No artifact ${unknown} is stored in space default`);
    const bad = await cotal("fetch", "sha256:abc", "-o", "never.bin", ...reader);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("<digest>");
    expect(existsSync(join(project, "never.bin"))).toBe(false);
    const nowhere = await cotal("fetch", digest, "-o", join("no-such-dir", "x.bin"), ...reader);
    expect(nowhere.code).toBe(2);
    expect(nowhere.stderr).toContain("Cannot write in");
  });

  it("--attach of a file that does not exist is refused before anything is sent", async () => {
    const r = await cotal("send", "msg", "general", "see file", "--attach", "missing.bin", ...sender);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("missing.bin");
  });
});
