// The `claude plugin …` commands `cotal setup` runs, and the ones it prints. They live here, next
// to the launch builder, because nothing outside the Claude binding builds a claude command line.
import { spawn } from "node:child_process";
import { realpathSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { CotalError } from "../../schemas/index.js";
import { pluginRuntime } from "../../runtimes/index.js";
import { findCli } from "../../runtime/index.js";
import { PLUGIN_ID, PLUGIN_MARKETPLACE } from "./plugin.js";

/** Where a plugin install is recorded: Claude's user settings, or the project's `.claude/settings.json`. */
export const PluginScope = z.enum(["user", "project"]);
export type PluginScope = z.infer<typeof PluginScope>;

/** The environment variable that names the claude executable (tests; unusual installs). */
export const CLAUDE_BIN_ENV = "COTAL_CLAUDE_BIN";

/** A `claude` subcommand failed or could not be started. */
export class PluginInstallError extends CotalError {
  constructor(message: string, options: { remedy?: string; cause?: unknown } = {}) {
    super("plugin-install-failed", message, options);
  }
}

/** The claude executable that would run, and why another candidate was passed over. */
export interface ClaudeCliLookup {
  /** Absolute path, or undefined when there is none. */
  path: string | undefined;
  /** Candidates that were named but unusable (e.g. a COTAL_CLAUDE_BIN that is not executable). */
  notes: string[];
}

/** Find the claude CLI: `$COTAL_CLAUDE_BIN` when it is an executable file, else `claude` on PATH. */
export function findClaudeCli(env: Readonly<Record<string, string | undefined>> = process.env): ClaudeCliLookup {
  return findCli({ binEnv: CLAUDE_BIN_ENV, command: "claude" }, env);
}

/** `claude plugin marketplace add <dir>`. */
export function marketplaceAddArgs(marketplaceDir: string): string[] {
  return ["plugin", "marketplace", "add", marketplaceDir];
}

/** `claude plugin install cotal@cotal-local --scope <scope>` (project scope runs in the project). */
export function pluginInstallArgs(scope: PluginScope): string[] {
  return ["plugin", "install", PLUGIN_ID, "--scope", scope];
}

/** `claude plugin update cotal@cotal-local --scope <scope>`: re-records a new version. */
export function pluginUpdateArgs(scope: PluginScope): string[] {
  return ["plugin", "update", PLUGIN_ID, "--scope", scope];
}

/** The one shell line that finishes an install when setup could not run claude itself. */
export function installCommandText(opts: { marketplaceDir: string; scope: PluginScope; projectDir?: string }): string {
  const line = (args: string[]) => ["claude", ...args].map(shellQuote).join(" ");
  const steps = [line(marketplaceAddArgs(opts.marketplaceDir)), line(pluginInstallArgs(opts.scope))];
  if (opts.scope === "project" && opts.projectDir) steps.unshift(`cd ${shellQuote(opts.projectDir)}`);
  return steps.join(" && ");
}

/** How to enable the plugin again after the user disabled it (setup never does that itself). */
export function pluginEnableCommandText(scope: PluginScope): string {
  return ["claude", "plugin", "enable", PLUGIN_ID, "--scope", scope].join(" ");
}

/** How to load a plugin tree for one session without installing it. */
export function pluginDirCommandText(printCommand = "cotal setup --print-plugin-dir"): string {
  return `claude --plugin-dir "$(${printCommand})"`;
}

function shellQuote(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/** What one claude command printed. */
export interface ClaudeCliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface ClaudeCliOptions {
  /** The claude executable. */
  bin: string;
  /** Working directory (the project, for project scope). */
  cwd: string;
  /** The user's environment; the host-session markers are dropped. */
  env?: Readonly<Record<string, string | undefined>>;
  /** Kill it after this long (default 60 s). */
  timeoutMs?: number;
}

/** Run `claude <args>` to completion, stdin closed. Rejects only when it cannot be started or times out. */
export function runClaudeCli(args: string[], opts: ClaudeCliOptions): Promise<ClaudeCliResult> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(opts.env ?? process.env)) if (v !== undefined) env[k] = v;
  for (const k of pluginRuntime().plugin.nestedSessionEnv) delete env[k];
  const what = `claude ${args.join(" ")}`;
  return new Promise((resolve, reject) => {
    const child = spawn(opts.bin, args, { cwd: opts.cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c));
    child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
    const timeoutMs = opts.timeoutMs ?? 60_000;
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(
        new PluginInstallError(`\`${what}\` did not finish within ${timeoutMs / 1000} s.`, {
          remedy: `Run it yourself to see what it waits for: ${installHint(args)}`,
        }),
      );
    }, timeoutMs);
    child.once("error", (cause) => {
      clearTimeout(timer);
      reject(new PluginInstallError(`Could not start ${opts.bin}.`, { cause }));
    });
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

function installHint(args: string[]): string {
  return ["claude", ...args].map(shellQuote).join(" ");
}

const MarketplaceList = z.array(z.looseObject({ name: z.string(), path: z.string().optional(), installLocation: z.string().optional() }));
const PluginList = z.array(
  z.looseObject({
    id: z.string(),
    version: z.string().optional(),
    scope: z.string().optional(),
    enabled: z.boolean().optional(),
    projectPath: z.string().optional(),
  }),
);

/** A marketplace as `claude plugin marketplace list --json` reports it. */
export type ListedMarketplace = z.infer<typeof MarketplaceList>[number];
/** An installed plugin as `claude plugin list --json` reports it. */
export type ListedPlugin = z.infer<typeof PluginList>[number];

/** `claude plugin marketplace list --json`; undefined when the CLI cannot say (failed, not JSON). */
export async function listMarketplaces(opts: ClaudeCliOptions): Promise<ListedMarketplace[] | undefined> {
  return listJson(["plugin", "marketplace", "list", "--json"], MarketplaceList, opts);
}

/** `claude plugin list --json`; undefined when the CLI cannot say. */
export async function listPlugins(opts: ClaudeCliOptions): Promise<ListedPlugin[] | undefined> {
  return listJson(["plugin", "list", "--json"], PluginList, opts);
}

async function listJson<T>(args: string[], schema: z.ZodType<T>, opts: ClaudeCliOptions): Promise<T | undefined> {
  const r = await runClaudeCli(args, opts);
  if (r.code !== 0) return undefined;
  try {
    const parsed = schema.safeParse(JSON.parse(r.stdout));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** The state of the Cotal plugin in Claude, for one scope. */
export interface PluginInstallState {
  /** The marketplace: declared at our folder, declared elsewhere, absent, or the CLI could not say. */
  marketplace: "present" | "elsewhere" | "absent" | "unknown";
  /** Where Claude's marketplace points, when it points elsewhere. */
  marketplacePath?: string;
  /** The plugin at this scope: installed at the current version, an older/other version, not installed, or unknown. */
  plugin: "current" | "outdated" | "absent" | "unknown";
  /** The version Claude recorded, when installed. */
  installedVersion?: string;
  /** False when the user disabled the plugin. */
  enabled?: boolean;
}

export interface PluginInstallTarget {
  /** The marketplace folder (holds `.claude-plugin/marketplace.json`). */
  marketplaceDir: string;
  scope: PluginScope;
  /** The project folder (project scope: the install is recorded for it and claude runs in it). */
  projectDir: string;
  /** The version the marketplace offers now. */
  version: string;
}

/** Ask Claude what it has installed. Changes nothing. */
export async function inspectPluginInstall(target: PluginInstallTarget, cli: Omit<ClaudeCliOptions, "cwd">): Promise<PluginInstallState> {
  const opts = { ...cli, cwd: target.projectDir };
  const [markets, plugins] = await Promise.all([listMarketplaces(opts), listPlugins(opts)]);
  const state: PluginInstallState = { marketplace: "unknown", plugin: "unknown" };
  if (markets) {
    const m = markets.find((x) => x.name === PLUGIN_MARKETPLACE);
    const where = m?.path ?? m?.installLocation;
    if (!m) state.marketplace = "absent";
    else if (where !== undefined && samePath(where, target.marketplaceDir)) state.marketplace = "present";
    else {
      state.marketplace = "elsewhere";
      if (where !== undefined) state.marketplacePath = where;
    }
  }
  if (plugins) {
    const project = target.scope === "project" ? target.projectDir : undefined;
    const p = plugins.find(
      (x) => x.id === PLUGIN_ID && x.scope === target.scope && (project === undefined || (x.projectPath !== undefined && samePath(x.projectPath, project))),
    );
    if (!p) state.plugin = "absent";
    else {
      state.plugin = p.version === target.version ? "current" : "outdated";
      if (p.version !== undefined) state.installedVersion = p.version;
      state.enabled = p.enabled !== false;
    }
  }
  return state;
}

/** What `ensurePluginInstalled` did. */
export interface PluginInstallActions {
  marketplace: "added" | "repointed" | "present";
  plugin: "installed" | "updated" | "present";
  /** The state after the actions (re-read when something ran). */
  state: PluginInstallState;
}

/**
 * Make Claude list the marketplace at our folder and have the plugin installed at this scope and
 * version: `marketplace add`, then `install` or `update`, each only when needed. It never
 * enables a plugin the user disabled.
 */
export async function ensurePluginInstalled(target: PluginInstallTarget, cli: Omit<ClaudeCliOptions, "cwd">): Promise<PluginInstallActions> {
  const opts = { ...cli, cwd: target.projectDir };
  const before = await inspectPluginInstall(target, cli);
  let marketplace: PluginInstallActions["marketplace"] = "present";
  if (before.marketplace !== "present") {
    await mustRun(marketplaceAddArgs(target.marketplaceDir), opts);
    marketplace = before.marketplace === "elsewhere" ? "repointed" : "added";
  }
  let plugin: PluginInstallActions["plugin"] = "present";
  if (before.plugin === "absent" || before.plugin === "unknown") {
    await mustRun(pluginInstallArgs(target.scope), opts);
    plugin = "installed";
  } else if (before.plugin === "outdated") {
    await mustRun(pluginUpdateArgs(target.scope), opts);
    plugin = "updated";
  }
  const changed = marketplace !== "present" || plugin !== "present";
  const state = changed ? await inspectPluginInstall(target, cli) : before;
  if (state.plugin === "absent" || state.plugin === "outdated" || state.marketplace === "absent" || state.marketplace === "elsewhere") {
    throw new PluginInstallError(`Claude does not list ${PLUGIN_ID} at version ${target.version} (${target.scope} scope) after installing it.`, {
      remedy: `Run it yourself and read what claude says: ${installCommandText(target)}`,
    });
  }
  return { marketplace, plugin, state };
}

async function mustRun(args: string[], opts: ClaudeCliOptions): Promise<void> {
  const r = await runClaudeCli(args, opts);
  if (r.code === 0) return;
  const said = (r.stderr.trim() || r.stdout.trim()).split("\n").slice(-3).join(" ");
  throw new PluginInstallError(`\`${installHint(args)}\` failed (exit ${r.code}): ${said}`, {
    remedy: "The plugin files are in place; fix what claude reports and run `cotal setup` again.",
  });
}

function samePath(a: string, b: string): boolean {
  return real(a) === real(b);
}

function real(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}
