// README.md's "Set up and run", run as written: every ```sh block of that section before
// its first subsection (the install-and-start block and the "Then, from another terminal" block),
// in order, in a fresh folder, on the default (secure) mesh. It fails when a command fails, and
// when the README gains a command this test does not know how to run.
//
// `npx cotal` is the real npx: the fresh folder holds node_modules/.bin/cotal, a link to this
// checkout's built dist/cotal.mjs (as a project that installed Cotal does), and npm runs offline
// (npm_config_offline) so it can never fetch the unrelated `cotal` package of the public registry.
// The folder also links the pinned Claude Code, as the clone has it after `npm ci`. HOME and
// COTAL_HOME are the folder's own, since `cotal setup` writes there. `npm ci` and
// `npm test` are skipped: the checkout is installed already, and `npm test` is the suite this
// test belongs to. Long-running commands (`up` in the foreground, `listen`, `logs --follow`, `web`)
// run in the background, each in its own process group as a terminal would run it, and are
// checked for what they should print; Ctrl-C is a SIGINT to that group.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, readFileSync, symlinkSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { claudeBin, OFFLINE_ENV } from "../harness/claude-runner.js";
import { buildCli, cotalBundle, projectRoot } from "../harness/cli.js";
import { findNatsServer } from "../../testbed/nats-server.js";
import { until } from "../../testbed/until.js";
import { dashboardLink, fetchDashboard } from "../harness/dashboard-link.js";

/** The commands of the README's "Set up and run" section before its first subsection, in order. */
function readmeCommands(): string[] {
  const readme = readFileSync(join(projectRoot, "README.md"), "utf8");
  const start = readme.indexOf("\n## Set up and run\n");
  expect(start, "README.md has a '## Set up and run' section").toBeGreaterThan(-1);
  const rest = readme.slice(start + 1);
  const end = rest.search(/\n##+ /);
  const section = end === -1 ? rest : rest.slice(0, end);
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
  expect(blocks.length, "the section's ```sh blocks").toBeGreaterThanOrEqual(2);
  return blocks
    .flatMap((b) => b.split("\n"))
    .map((l) => l.replace(/\s+#\s.*$/, "").trim())
    .filter(Boolean)
    .flatMap((l) => l.split(/\s*&&\s*/));
}

/** Words of a command line as sh would split it (double quotes only: all the README uses). */
function words(line: string): string[] {
  return [...line.matchAll(/"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2]!);
}

/** The value of `--name` in a command line. */
function flag(line: string, name: string): string | undefined {
  const w = words(line);
  const i = w.indexOf(name);
  return i === -1 ? undefined : w[i + 1];
}

/** A command of the README running in the background, its output collected. */
class Background {
  stdout = "";
  stderr = "";
  exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  readonly exited: Promise<void>;
  constructor(
    readonly line: string,
    readonly child: ChildProcess,
  ) {
    child.stdout!.setEncoding("utf8").on("data", (c: string) => (this.stdout += c));
    child.stderr!.setEncoding("utf8").on("data", (c: string) => (this.stderr += c));
    this.exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve(void (this.exit = { code, signal }))));
  }
  get output(): string {
    return `\`${this.line}\`\nstdout:\n${this.stdout}\nstderr:\n${this.stderr}`;
  }
  /** Ctrl-C: SIGINT to its process group (npm, sh and cotal), then wait, bounded. */
  async interrupt(): Promise<void> {
    if (this.exit) return;
    try {
      process.kill(-this.child.pid!, "SIGINT");
    } catch {
      // already gone
    }
    await until(() => this.exit !== undefined, 15_000, `${this.line} to exit on Ctrl-C\n${this.output}`);
  }
}

let root: string;
let folder: string;
let env: NodeJS.ProcessEnv;
const running: Background[] = [];

function start(line: string): Background {
  const child = spawn("sh", ["-c", line], { cwd: folder, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  const bg = new Background(line, child);
  running.push(bg);
  return bg;
}

/** Run a command to completion (bounded); fail with its output when it exits non-zero. */
async function run(line: string, timeoutMs = 60_000): Promise<Background> {
  const bg = start(line);
  await until(() => bg.exit !== undefined, timeoutMs, `\`${line}\` to finish\n${bg.output}`);
  expect(bg.exit, `\`${line}\` failed\n${bg.output}`).toEqual({ code: 0, signal: null });
  return bg;
}

/** Start a long-running command and wait until it printed `ready` (on stdout or stderr). */
async function background(line: string, ready: RegExp): Promise<Background> {
  const bg = start(line);
  await until(() => ready.test(bg.stdout + bg.stderr) || bg.exit !== undefined, 60_000, `\`${line}\` to print ${ready}\n${bg.output}`);
  expect(bg.exit, `\`${line}\` exited before it printed ${ready}\n${bg.output}`).toBeUndefined();
  return bg;
}

beforeAll(async () => {
  await buildCli();
  root = await mkdtemp(join(tmpdir(), "cotal-readme-"));
  folder = join(root, "project");
  mkdirSync(join(folder, "node_modules", ".bin"), { recursive: true });
  symlinkSync(cotalBundle, join(folder, "node_modules", ".bin", "cotal"));
  // And the pinned Claude Code, as the clone has it after `npm ci` (npx puts it on PATH for setup).
  symlinkSync(claudeBin(), join(folder, "node_modules", ".bin", "claude"));
  for (const d of ["home", "cotal-home"]) mkdirSync(join(root, d));
  env = {
    PATH: [dirname(process.execPath), "/usr/bin", "/bin"].join(":"),
    HOME: join(root, "home"),
    COTAL_HOME: join(root, "cotal-home"),
    LANG: "C.UTF-8",
    // The README needs a nats-server: the one the harness uses (>= 2.10), as a user's would be found.
    NATS_SERVER_BIN: findNatsServer(),
    npm_config_offline: "true",
    npm_config_update_notifier: "false",
    ...(process.env.TMPDIR ? { TMPDIR: process.env.TMPDIR } : {}),
    ...OFFLINE_ENV,
  };
}, 60_000);

afterAll(async () => {
  for (const bg of running) await bg.interrupt().catch(() => undefined);
  await run("npx cotal down").catch(() => undefined);
  if (root) await rm(root, { recursive: true, force: true });
}, 60_000);

describe("README.md, Set up and run", () => {
  it("every command works as written on a fresh folder's default (secure) mesh", async () => {
    const commands = readmeCommands();
    const listeners: Background[] = [];
    let up: Background | undefined;
    const done: string[] = [];
    for (const line of commands) {
      const w = words(line);
      if (line === "npm ci" || line === "npm test") continue; // installed already; the suite itself
      expect(w.slice(0, 2), `a README command this test does not know how to run: ${line}`).toEqual(["npx", "cotal"]);
      const [command, ...args] = w.slice(2);
      if (command === "up" && !args.some((a) => a === "-d" || a === "--detach")) {
        up = await background(line, /Attached: press Ctrl-C to stop the mesh/);
        expect(up.stdout).toMatch(/mode: +static/);
      } else if (command === "listen") {
        listeners.push(await background(line, /Listening as \S+/));
      } else if (command === "logs" && args.includes("--follow")) {
        // Human lines on a terminal, JSON lines when piped (as here): the same words either way.
        const logs = await background(line, /mesh service running/);
        expect(logs.stdout).toMatch(/Server is ready/);
      } else if (command === "web") {
        const web = await background(line, /dashboard: http:\/\/\S+/);
        // The printed link carries the dashboard's token; without it nothing of the mesh is shown.
        const dash = dashboardLink(web.stdout);
        expect((await fetch(new URL("api/state", dash.base))).status).toBe(401);
        const state = (await (await fetchDashboard(dash, "api/state")).json()) as { space: string; roster: Array<{ id: string; status: string }> };
        expect(state.space).toBe("default");
        // Whoever the README put on the mesh so far is on its roster, live.
        for (const l of listeners) expect(state.roster.find((r) => r.id === `local.${flag(l.line, "--as")}`)?.status, l.line).toBe("idle");
      } else {
        const r = await run(line);
        if (command === "send" && args[0] === "msg") {
          // What a send posts reaches every listener the README started on that channel.
          const text = args[2]!;
          for (const l of listeners) {
            if (flag(l.line, "--channel") !== args[1]) continue;
            await until(() => l.stdout.includes(text), 15_000, `\`${l.line}\` to print the posted "${text}"\n${l.output}`);
          }
          expect(r.stdout).toMatch(/stored seq \d+ on general/);
        }
        if (command === "status") expect(r.stdout).toMatch(/mode: +static/);
        if (command === "down") {
          if (up) {
            // The foreground `up` notices and returns by itself.
            await until(() => up!.exit !== undefined, 20_000, `the foreground \`up\` to return after down\n${up.output}`);
            expect(up.exit, up.output).toEqual({ code: 0, signal: null });
          }
        }
        if (command === "setup") expect(r.stdout).toMatch(/plugin cotal@cotal-local \(user scope\): installed/);
      }
      done.push(line);
    }
    // The commands whose output this test checks were all in the README (the section was read).
    const ran = new Set(done.map((l) => words(l)[2]));
    for (const c of ["up", "listen", "send", "status", "logs", "web", "down", "setup"]) expect(ran, `the README ran \`npx cotal ${c}\``).toContain(c);
  }, 300_000);
});
