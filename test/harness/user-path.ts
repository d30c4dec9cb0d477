// The user's path to Claude runs and seats, shared by the e2e tests that walk it: a
// fresh folder with agent files in .cotal/agents/, a model double, the shell a user runs `claude`
// in (the double's ANTHROPIC_BASE_URL and an ANTHROPIC_API_KEY, a HOME of its own), `cotal up -d`
// from that shell, and every further step through the shipped CLI. The double is served from the
// test process, so every CLI call is asynchronous (a process waiting in spawnSync stops it).
import { mkdirSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { findNatsServer } from "../../broker/index.js";
import { claudeEnv } from "./claude-runner.js";
import { buildCli, CotalProcess, freePort, runCotal, type CliResult } from "./cli.js";
import { ModelDouble, type ModelDoubleOptions, type ScriptStep } from "../../testbed/model-double.js";
import { until } from "../../testbed/until.js";

/** An agent file's front matter (`name`, `model`, …; arrays as YAML flow lists) and its body. */
export interface AgentFile {
  fields: Record<string, string | readonly string[]>;
  body: string;
}

export interface UserPathOptions {
  /** Temp folder prefix, e.g. `cotal-user-wake-`. */
  prefix: string;
  /** Agent files written to `.cotal/agents/<persona>.md` before `cotal up`. */
  agents?: Record<string, AgentFile>;
  script?: ScriptStep[];
  double?: ModelDoubleOptions;
  /** Extra variables in the shell `cotal up` runs in (e.g. COTAL_DAILY_BUDGET_USD). */
  shell?: Record<string, string>;
}

/** Write `.cotal/agents/<persona>.md` under `dir`. */
export function writeAgentFile(dir: string, persona: string, a: AgentFile): void {
  const lines = Object.entries(a.fields).map(([k, v]) => `${k}: ${typeof v === "string" ? v : `[${v.join(", ")}]`}`);
  mkdirSync(join(dir, ".cotal", "agents"), { recursive: true });
  writeFileSync(join(dir, ".cotal", "agents", `${persona}.md`), ["---", ...lines, "---", a.body, ""].join("\n"));
}

/** Throw with the command's output unless it exited 0. */
export function ok(r: CliResult, what = "cotal"): CliResult {
  if (r.code !== 0) throw new Error(`${what} exited ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  return r;
}

/** A mesh started as a user starts it, and the shell they drive it from. */
export class UserPath {
  /** Managers started by hand (`cotal manager`), stopped at close. */
  private readonly managers: CotalProcess[] = [];
  private readonly background: CotalProcess[] = [];

  private constructor(
    readonly project: string,
    readonly double: ModelDouble,
    readonly shell: NodeJS.ProcessEnv,
  ) {}

  /** A fresh folder, its agent files, the double, and `cotal up -d` from the user's shell. */
  static async start(o: UserPathOptions): Promise<UserPath> {
    await buildCli(); // also copies the bundles into plugin/bin
    const project = await mkdtemp(join(tmpdir(), o.prefix));
    const double = await ModelDouble.start(o.script ?? [], o.double ?? {});
    for (const [persona, a] of Object.entries(o.agents ?? {})) writeAgentFile(project, persona, a);
    const u = new UserPath(project, double, {});
    Object.assign(u.shell, u.userShell(join(project, "home"), o.shell));
    ok(await u.cotal(["up", "-d", "--port", String(await freePort())]), "cotal up -d");
    return u;
  }

  /**
   * The shell a user runs `claude` in: the double's URL and a key, a HOME of its own, and where
   * nats-server is. TMPDIR is the folder's own too: seats' connectors keep their hook sockets in
   * a per-user control directory under it, named by space and seat only, so two meshes of the
   * default space on one host (two test files at once) would fight over `default.local.bob`.
   */
  userShell(home: string, over: Record<string, string> = {}): NodeJS.ProcessEnv {
    const tmp = join(this.project, "tmp");
    mkdirSync(home, { recursive: true });
    mkdirSync(tmp, { recursive: true, mode: 0o700 });
    return { ...claudeEnv({ baseUrl: this.double.url, home }), TMPDIR: tmp, NATS_SERVER_BIN: findNatsServer(), ...over };
  }

  /** `cotal <args>` in the project folder, from the user's shell (or `env`). */
  cotal(args: string[], env: NodeJS.ProcessEnv = this.shell, timeoutMs = 120_000): Promise<CliResult> {
    return runCotal(args, { cwd: this.project, env, timeoutMs });
  }

  /** `cotal <args>`, which must exit 0. */
  async ok(args: string[], env?: NodeJS.ProcessEnv): Promise<CliResult> {
    return ok(await this.cotal(args, env), `cotal ${args.join(" ")}`);
  }

  /** A long-running `cotal <args>` (listen, …) in the project folder, stopped at close. */
  spawn(args: string[]): CotalProcess {
    const p = CotalProcess.spawn(args, { cwd: this.project, env: this.shell });
    this.background.push(p);
    return p;
  }

  /** Another manager on this mesh, started by hand (`cotal manager`) in a shell of its own; resolves once ps lists it. */
  async startManager(instance: string, env: NodeJS.ProcessEnv): Promise<CotalProcess> {
    const stateDir = join(this.project, `state-${instance}`);
    mkdirSync(stateDir, { recursive: true });
    const m = CotalProcess.spawn(["manager", "--instance", instance, "--state-dir", stateDir, "--stop-seats"], { cwd: this.project, env });
    this.managers.push(m);
    await until(async () => (await this.cotal(["ps", "--json"])).stdout.includes(`"instance": "${instance}"`), 30_000, `manager ${instance} to be listed`);
    return m;
  }

  /** Stop what was started here, `cotal down`, the double; remove the folder. */
  async close(): Promise<void> {
    for (const p of this.background) await p.stop("SIGINT").catch(() => undefined);
    for (const m of this.managers) await m.stop("SIGTERM", 30_000).catch(() => undefined);
    await this.cotal(["down"]).catch(() => undefined);
    await this.double.close();
    await rm(this.project, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
  }
}
