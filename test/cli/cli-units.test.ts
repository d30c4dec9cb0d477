// The CLI's own logic without a broker: process identity, mesh root discovery, names, modes,
// flag validation, terminal-safe output, and the architectural rule on its imports.
import { spawn } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { exitCodeOf, UsageError } from "../../cli/errors.js";
import { defaultActorName } from "../../cli/identity.js";
import { findMeshRoot, MeshRoot } from "../../cli/mesh-root.js";
import { chooseMode } from "../../cli/mode.js";
import { renderServerConfig } from "../../cli/nats-process.js";
import { DEFAULT_SYNC, SyncInterval } from "../../cli/sync-interval.js";
import { oneLine } from "../../cli/output.js";
import { parseStartTime, processStartTime } from "../../claude/index.js";
import { isRunning, recordOf, stopProcess } from "../../cli/pid-file.js";
import { actorName, duration, parseInput, port } from "../../cli/validate.js";
import { InvalidTokenError } from "../../schemas/index.js";
import { AuthenticationRefusedError, MeshServiceUnavailableError, MeshUnavailableError, PermissionDeniedError } from "../../broker/index.js";
import { projectRoot } from "../harness/cli.js";
import { until } from "../harness/until.js";

describe("process identity", () => {
  it("reads field 22 of /proc/<pid>/stat even when the command name has spaces and parentheses", () => {
    const fields = Array.from({ length: 50 }, (_, i) => String(i + 3));
    const stat = `1234 (we (ird) name) S ${fields.slice(1).join(" ")}`;
    expect(parseStartTime(stat)).toBe("22");
    expect(parseStartTime(`1 (x) Z ${fields.slice(1).join(" ")}`)).toBeUndefined();
    expect(processStartTime(process.pid)).toMatch(/^\d+$/);
  });

  it("a recycled pid is never mistaken for ours: a record whose start time differs is not running and is never signalled", async () => {
    const child = spawn("sleep", ["30"], { stdio: "ignore" });
    try {
      const real = recordOf(child.pid!, ["sleep", "30"]);
      expect(isRunning(real)).toBe(true);
      const recycled = { ...real, startTime: String(Number(real.startTime) - 1) };
      expect(isRunning(recycled)).toBe(false);
      expect(await stopProcess(recycled, 100)).toBe("not-running");
      expect(isRunning(real)).toBe(true);
      expect(await stopProcess(real, 5_000)).toBe("stopped");
      await until(() => child.exitCode !== null || child.signalCode !== null, 5_000, "sleep to exit");
    } finally {
      child.kill("SIGKILL");
    }
  });
});

describe("mesh root", () => {
  it("is found by walking up from a subfolder to the .cotal/ that holds mesh.json", async () => {
    const dir = await mkdtemp(join(tmpdir(), "cotal-root-"));
    try {
      const deep = join(dir, "a", "b");
      mkdirSync(deep, { recursive: true });
      expect(findMeshRoot(deep)).toBeUndefined();
      const root = new MeshRoot(dir);
      root.ensure();
      expect(findMeshRoot(deep), "a .cotal/ without mesh.json is not a mesh").toBeUndefined();
      root.writeInfo({
        server: "nats://127.0.0.1:4999",
        space: "default",
        mode: "open",
        host: "127.0.0.1",
        port: 4999,
        storeDir: join(dir, "s"),
        startedAt: new Date().toISOString(),
      });
      expect(findMeshRoot(deep)?.project).toBe(dir);
      expect(readFileSync(join(dir, ".cotal", ".gitignore"), "utf8")).toContain("*");
      writeFileSync(root.meshJson, "{ not json");
      expect(() => root.readInfo()).toThrow(/not valid JSON/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("the server config turns JetStream on, syncs before every acknowledgement, and listens where asked", () => {
    const conf = renderServerConfig({ host: "127.0.0.1", port: 4333, storeDir: "/s", portsDir: "/r", space: "default", sync: DEFAULT_SYNC });
    expect(conf).toContain('listen: "127.0.0.1:4333"');
    expect(conf).toMatch(/jetstream \{\n {2}store_dir: "\/s"\n {2}sync_interval: always\n\}/);
    expect(renderServerConfig({ host: "127.0.0.1", port: "auto", storeDir: "/s", portsDir: "/r", space: "x", sync: "2m" })).toMatch(
      /listen: "127.0.0.1:-1"[\s\S]*sync_interval: "2m"/,
    );
  });

  it("--sync takes always or a positive duration with one unit, and refuses anything else saying what it takes", () => {
    for (const ok of ["always", "500ms", "30s", "2m", "1h"]) expect(SyncInterval.parse(ok)).toBe(ok);
    for (const bad of ["", "never", "0s", "2", "1m30s", "-1s", "2 m", "always;x"]) {
      const r = SyncInterval.safeParse(bad);
      expect(r.success, bad).toBe(false);
      expect(r.error?.issues[0]?.message).toMatch(/--sync must be `always`.*500ms/);
    }
  });
});

describe("names and modes", () => {
  it("the default --as name is the OS user name, refused (never rewritten) when it is not a valid name", () => {
    expect(defaultActorName(() => "alice_1")).toBe("alice_1");
    for (const bad of ["first.last", "first-last", "a b", ""]) {
      expect(() => defaultActorName(() => bad)).toThrow(/Pass --as <name>/);
    }
  });

  it("up is static (authenticated) by default, on any host; --open is silent on loopback and warns elsewhere", () => {
    expect(chooseMode({ host: "127.0.0.1" })).toEqual({ mode: "static", warnings: [] });
    expect(chooseMode({ host: "0.0.0.0" })).toEqual({ mode: "static", warnings: [] });
    expect(chooseMode({ open: true, host: "127.0.0.1" })).toEqual({ mode: "open", warnings: [] });
    expect(chooseMode({ open: true, host: "0.0.0.0" }).warnings).toEqual([expect.stringContaining("no authentication")]);
  });
});

describe("flag validation", () => {
  const schema = z.object({ as: actorName("--as name").optional(), port: port.optional(), since: duration.optional() });

  it("names each bad flag, what it got and what it accepts", () => {
    let err: unknown;
    try {
      parseInput(schema, { as: "a.b", port: "70000", since: "soon" });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(UsageError);
    const msg = (err as Error).message;
    expect(msg).toContain(`--as: --as name must use only letters, digits and '_' (got "a.b")`);
    expect(msg).toContain(`--port: port must be from 1 to 65535 (got "70000")`);
    expect(msg).toContain(`--since: use a number and a unit such as 30s`);
    expect(parseInput(schema, { port: "4333", since: "90s" })).toEqual({ port: 4333, since: 90_000 });
  });

  it("maps errors to exit codes: 2 bad input, 3 unreachable, 4 credential refused, 5 not permitted, 6 mesh service silent, 1 otherwise", () => {
    expect(exitCodeOf(new UsageError("x"))).toBe(2);
    expect(exitCodeOf(new InvalidTokenError("actor name", "a.b", "letters"))).toBe(2);
    expect(exitCodeOf(new MeshUnavailableError("nats://x:1", new Error("refused")))).toBe(3);
    expect(exitCodeOf(new AuthenticationRefusedError("nats://x:1", "expired", new Error("Authorization Violation")))).toBe(4);
    expect(exitCodeOf(new PermissionDeniedError("publish", "cotal.s.chat.x"))).toBe(5);
    expect(exitCodeOf(new MeshServiceUnavailableError("ping", new Error("timeout")))).toBe(6);
    expect(exitCodeOf(new Error("boom"))).toBe(1);
  });
});

describe("terminal output", () => {
  it("peer text cannot break out of its line or send terminal escapes", () => {
    expect(oneLine("a\nb\tc\u001b[31m\u009b")).toBe("a\\nb\\tc\\u001b[31m\\u009b");
  });
});

describe("architecture", () => {
  it("cli/ imports broker/ and schemas/ only through their index.ts, and nothing from connector/ or manager/ internals", () => {
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const f of readdirSync(dir)) {
        const p = join(dir, f);
        if (statSync(p).isDirectory()) walk(p);
        else if (p.endsWith(".ts")) files.push(p);
      }
    };
    walk(join(projectRoot, "cli"));
    expect(files.length).toBeGreaterThan(10);
    const offenders: string[] = [];
    for (const f of files) {
      for (const m of readFileSync(f, "utf8").matchAll(/from "(\.[^"]+)"/g)) {
        const spec = m[1]!;
        if (/\/(broker|schemas|connector|manager)\//.test(spec) && !/\/(broker|schemas|connector|manager)\/index\.js$/.test(spec)) {
          offenders.push(`${relative(projectRoot, f)}: ${spec}`);
        }
      }
    }
    expect(offenders).toEqual([]);
  });
});
