// `cotal --help` (and every command's --help) runs from the built bundle, without compiling
// TypeScript at run time and without a mesh.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { buildCli, runCotal } from "../harness/cli.js";

const commands = ["up", "down", "status", "send", "listen", "history", "fetch", "roster", "channels", "deliver", "mint", "revoke", "hook"];
let cwd: string;

beforeAll(async () => {
  await buildCli();
  cwd = mkdtempSync(join(tmpdir(), "cotal-help-"));
});

describe("cotal --help from the built bundle", () => {
  it("lists every command", async () => {
    const r = await runCotal(["--help"], { cwd });
    expect(r.code).toBe(0);
    for (const c of commands) expect(r.stdout).toMatch(new RegExp(`^\\s+${c}\\b`, "m"));
  });

  it.each(commands)("cotal %s --help explains the command", async (c) => {
    const r = await runCotal([c, "--help"], { cwd });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`Usage: cotal ${c}`);
  });

  it("cotal down's help, in the list and its own, names every process it stops", async () => {
    const list = (await runCotal(["--help"], { cwd })).stdout;
    const own = (await runCotal(["down", "--help"], { cwd })).stdout.replace(/\s+/g, " ");
    // The command's entry, with the lines its summary wraps onto.
    const listed = (/^ {2}down\b.*(\n {4,}.*)*/m.exec(list)?.[0] ?? "").replace(/\s+/g, " ");
    for (const what of ["seats", "web", "manager", "mesh service", "nats-server"]) {
      expect(listed, `cotal --help: ${what}`).toContain(what);
      expect(own, `cotal down --help: ${what}`).toContain(what);
    }
    expect(own).toContain("the manager (it stops and retires every seat it runs)");
  });

  it("cotal spawn's help offers --terminal for the seat's terminal host, not the old name --runtime", async () => {
    const own = (await runCotal(["spawn", "--help"], { cwd })).stdout.replace(/\s+/g, " ");
    expect(own).toContain("--terminal <host> the terminal host: tmux (default for agent CLIs), pty");
    // The old name still works (test/cli/manager.e2e.test.ts), but is no longer offered.
    expect(own).not.toContain("--runtime");
  });

  it("an unknown command is a usage error naming it", async () => {
    const r = await runCotal(["frobnicate"], { cwd });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/unknown command 'frobnicate'/);
  });
});
