// docs/cli.md "Start-up and the code cache": `cotal` runs its CommonJS bundle from a V8 code cache
// in the user's cache folder (cli/code-cache.ts). The user's side: the first call writes it, 0600
// in a 0700 folder, the next ones run from it and print the same, a damaged one is compiled past
// and written anew, two installs keep their own. The attacker's: a cache is bytecode V8 runs, so one
// that anybody but this user could have written (another owner, a group- or world-writable file or
// folder, a symbolic link) is never handed to V8, and nothing is written into a folder others may
// write. COTAL_CODE_CACHE=report makes each call say on stderr what it did with the cache.
import { spawnSync } from "node:child_process";
import {
  chmodSync,
  chownSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCli, cleanEnv, cotalBundle, freePort, runCotal, type CliResult } from "../harness/cli.js";

let work: string;
let n = 0;
beforeAll(async () => {
  await buildCli();
  work = mkdtempSync(join(tmpdir(), "cotal-code-cache-"));
}, 120_000);
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** A fresh cache home (XDG_CACHE_HOME) and `cotal` run against it, reporting what it did with the cache. */
function cacheHome(mode = "report") {
  const home = join(work, `home-${++n}`);
  mkdirSync(home, { mode: 0o700 });
  const dir = join(home, "cotal");
  const cotal = (args: string[]): Promise<CliResult> => runCotal(args, { cwd: work, env: cleanEnv({ XDG_CACHE_HOME: home, COTAL_CODE_CACHE: mode }) });
  return { home, dir, cotal, files: () => readdirSync(dir).filter((f) => f.endsWith(".v8")) };
}

/** `cotal` from another install of the bundle (a copy of dist's launcher, bundle and cache runner). */
function runCotalFrom(launcher: string, args: string[], home: string, mode: string): CliResult {
  const r = spawnSync(process.execPath, [launcher, ...args], { cwd: work, env: cleanEnv({ XDG_CACHE_HOME: home, COTAL_CODE_CACHE: mode }), encoding: "utf8" });
  return { code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr, json: () => JSON.parse(r.stdout) as never };
}

/** What the call said it did with the cache (its stderr's report line). */
const outcome = (r: CliResult): string => /cotal: code cache (\w+)/.exec(r.stderr)?.[1] ?? `no report in: ${r.stderr}`;
const mode = (p: string): number => statSync(p).mode & 0o777;
const version = (JSON.parse(readFileSync(join(dirname(cotalBundle), "..", "package.json"), "utf8")) as { version: string }).version;

describe("the code cache, as a user meets it", () => {
  it("the first call writes it, 0600 in a 0700 folder; the next run from it and print the same", async () => {
    const c = cacheHome();
    const first = await c.cotal(["status", "--help"]);
    expect([first.code, outcome(first)]).toEqual([0, "written"]);
    expect(c.files()).toHaveLength(1);
    expect(mode(c.dir)).toBe(0o700);
    expect(mode(join(c.dir, c.files()[0]!))).toBe(0o600);
    const again = await c.cotal(["status", "--help"]);
    expect([again.code, outcome(again)]).toEqual([0, "used"]);
    expect(again.stdout).toBe(first.stdout);
    // Compiled from source, without a cache: the same help.
    const off = cacheHome("off");
    const plain = await off.cotal(["status", "--help"]);
    expect([plain.code, plain.stdout]).toEqual([0, first.stdout]);
    expect(() => readdirSync(off.dir)).toThrow(/ENOENT/);
  });

  it("a damaged cache is compiled past and written anew", async () => {
    const c = cacheHome();
    await c.cotal(["--version"]);
    const file = join(c.dir, c.files()[0]!);
    writeFileSync(file, "not bytecode");
    const r = await c.cotal(["--version"]);
    expect([r.code, outcome(r), r.stdout.trim()]).toEqual([0, "rejected", version]);
    expect(statSync(file).size).toBeGreaterThan(1000);
    expect(outcome(await c.cotal(["--version"]))).toBe("used");
  });

  it("a command that loads modules as it runs works from the cache its own first run wrote (up -d, down)", async () => {
    // Node 20 drops a script's dynamic-import callback when its code comes from a cache: the
    // functions that ran in the first `up -d` (the auth store's, the Object Store's hashing) are in
    // the cache the second one runs. The build turns such imports into require (scripts/build.mjs).
    const c = cacheHome();
    const project = join(work, `project-${n}`);
    mkdirSync(project);
    const env = cleanEnv({ XDG_CACHE_HOME: c.home, COTAL_CODE_CACHE: "report" });
    const run = (...args: string[]) => runCotal(args, { cwd: project, env, timeoutMs: 60_000 });
    const port = String(await freePort());
    for (const expected of ["written", "used"]) {
      const up = await run("up", "-d", "--port", port);
      expect([up.code, outcome(up), up.stderr]).toEqual([0, expected, expect.not.stringContaining("dynamic import")]);
      const down = await run("down");
      expect([down.code, outcome(down)]).toEqual([0, "used"]);
    }
  }, 120_000);

  it("a cache folder that cannot be made costs nothing but the compile: the command runs and says so", async () => {
    const blocker = join(work, "a-file");
    writeFileSync(blocker, "");
    const env = cleanEnv({ XDG_CACHE_HOME: join(blocker, "cache"), COTAL_CODE_CACHE: "report" });
    const r = await runCotal(["--version"], { cwd: work, env });
    expect([r.code, outcome(r), r.stdout.trim()]).toEqual([0, "unwritten", version]);
  });

  it("two installs of the CLI keep their own caches and never evict each other's", async () => {
    const c = cacheHome();
    const other = join(work, "other-install", "dist");
    mkdirSync(other, { recursive: true });
    for (const f of ["cotal.mjs", "cotal.cjs", "code-cache.mjs"]) copyFileSync(join(dirname(cotalBundle), f), join(other, f));
    const launcher = join(other, "cotal.mjs");
    expect(outcome(await c.cotal(["--version"]))).toBe("written");
    expect(outcome(runCotalFrom(launcher, ["--version"], c.home, "report"))).toBe("written");
    expect(c.files()).toHaveLength(2);
    expect(outcome(await c.cotal(["--version"]))).toBe("used");
    expect(outcome(runCotalFrom(launcher, ["--version"], c.home, "report"))).toBe("used");
  });
});

describe("a code cache belongs to one build", () => {
  // V8 checks only a source's length against a cache, and npm gives every installed file the same
  // mtime: a cache found by anything but the bundle's content would run the old build's code.
  it("another build of the same length, in the same place and with the same mtime, does not run the old build's cache", () => {
    const c = cacheHome();
    const install = join(work, "rebuilt-install", "dist");
    mkdirSync(install, { recursive: true });
    for (const f of ["cotal.mjs", "cotal.cjs", "code-cache.mjs"]) copyFileSync(join(dirname(cotalBundle), f), join(install, f));
    const launcher = join(install, "cotal.mjs");
    const bundle = join(install, "cotal.cjs");
    const first = runCotalFrom(launcher, ["--help"], c.home, "report");
    expect([first.code, outcome(first)]).toEqual([0, "written"]);
    expect(first.stdout).toContain("an agent mesh on NATS JetStream");
    const { atime, mtime } = statSync(bundle);
    const text = readFileSync(bundle, "utf8");
    const rebuilt = text.replaceAll("an agent mesh on NATS JetStream", "AN AGENT MESH ON NATS JETSTREAM");
    expect([rebuilt.length, rebuilt === text]).toEqual([text.length, false]);
    writeFileSync(bundle, rebuilt);
    utimesSync(bundle, atime, mtime);
    const second = runCotalFrom(launcher, ["--help"], c.home, "report");
    expect([second.code, outcome(second)]).toEqual([0, "written"]);
    expect(second.stdout).toContain("AN AGENT MESH ON NATS JETSTREAM");
    expect(c.files()).toHaveLength(1); // the old build's cache made way
  });
});

describe("a code cache somebody else could have written is never run", () => {
  /** A cache home holding a good cache, written by a first call. */
  async function withGoodCache() {
    const c = cacheHome();
    expect(outcome(await c.cotal(["--version"]))).toBe("written");
    return { ...c, file: join(c.dir, c.files()[0]!) };
  }

  it("a cache file others may write is not read, and is replaced by this user's own", async () => {
    const c = await withGoodCache();
    chmodSync(c.file, 0o666);
    const r = await c.cotal(["--version"]);
    expect([r.code, outcome(r)]).toEqual([0, "untrusted"]);
    expect(mode(c.file)).toBe(0o600);
    expect(outcome(await c.cotal(["--version"]))).toBe("used");
  });

  it("in a cache folder others may write, nothing is read and nothing is written", async () => {
    const c = await withGoodCache();
    chmodSync(c.dir, 0o777);
    const before = readFileSync(c.file);
    const r = await c.cotal(["--version"]);
    expect([r.code, outcome(r)]).toEqual([0, "untrusted"]);
    expect(readFileSync(c.file).equals(before)).toBe(true);
    expect(c.files()).toHaveLength(1);
  });

  it("a symbolic link in place of the cache is not followed", async () => {
    const c = await withGoodCache();
    const elsewhere = join(c.home, "planted.v8");
    copyFileSync(c.file, elsewhere);
    chmodSync(elsewhere, 0o600);
    rmSync(c.file);
    symlinkSync(elsewhere, c.file);
    expect(outcome(await c.cotal(["--version"]))).toBe("untrusted");
  });

  it.skipIf(process.getuid?.() !== 0)("a cache file another user owns is not read (checked as root, who can give one away)", async () => {
    const c = await withGoodCache();
    chownSync(c.file, 65534, 65534);
    const r = await c.cotal(["--version"]);
    expect([r.code, outcome(r)]).toEqual([0, "untrusted"]);
  });
});
