// What `cotal setup` does on disk: the local marketplace under the Cotal home (the rendered
// plugin tree plus the bundles), the seeded agent file, and the comparison `--check` reports.
// Claude itself is driven through connector/ (claude command lines are built only in claude/); the
// command's flags and output are cli/commands/setup.ts.
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmdirSync,
  statSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import {
  findClaudeCli,
  inspectPluginInstall,
  MARKETPLACE_MANIFEST,
  MARKETPLACE_PLUGIN_PATH,
  PLUGIN_BIN_DIR,
  PLUGIN_BUNDLES,
  PLUGIN_ID,
  PLUGIN_MARKETPLACE,
  pluginEnableCommandText,
  renderMarketplace,
  renderPlugin,
  type PluginInstallState,
  type PluginScope,
} from "../../connector/index.js";
import { COTAL_VERSION } from "../../schemas/index.js";
import { CommandFailedError } from "../terminal/errors.js";
import { packageRoot } from "./package-root.js";

/** `$COTAL_HOME`, else `~/.cotal`: Cotal's per-user folder. */
export function cotalHome(env: NodeJS.ProcessEnv = process.env): string {
  return env.COTAL_HOME ? path.resolve(env.COTAL_HOME) : path.join(env.HOME || os.homedir(), ".cotal");
}

/** The local marketplace `cotal setup` maintains. */
export function marketplaceDir(home: string): string {
  return path.join(home, "marketplace");
}

/** The package's own plugin tree (`<package root>/plugin`; `bin/` is filled by the build). */
export function packagePluginDir(root: string): string {
  return path.join(root, "plugin");
}

/** One file the marketplace must hold. */
export interface TreeFile {
  /** Relative to the marketplace folder, posix separators. */
  path: string;
  content: Buffer;
  mode: number;
}

/**
 * Every file of the marketplace: its manifest, the plugin tree rendered by this very build, and
 * the bundles (with their source maps) from `dist/`, else from the package's `plugin/bin/`.
 */
export function desiredMarketplace(root: string): TreeFile[] {
  const files: TreeFile[] = [{ path: MARKETPLACE_MANIFEST, content: Buffer.from(renderMarketplace()), mode: 0o644 }];
  for (const [rel, text] of Object.entries(renderPlugin())) files.push({ path: `${MARKETPLACE_PLUGIN_PATH}/${rel}`, content: Buffer.from(text), mode: 0o644 });
  const from = [path.join(root, "dist"), path.join(packagePluginDir(root), PLUGIN_BIN_DIR)].find((d) =>
    PLUGIN_BUNDLES.every((b) => existsSync(path.join(d, b))),
  );
  if (!from) {
    throw new CommandFailedError(
      `The plugin's bundles (${PLUGIN_BUNDLES.join(", ")}) are not built: neither ${path.join(root, "dist")} nor ${path.join(root, "plugin", PLUGIN_BIN_DIR)} holds them.`,
      {
        remedy: "Run `npm run build` in the Cotal package, then `cotal setup` again.",
      },
    );
  }
  for (const bundle of PLUGIN_BUNDLES) {
    for (const name of [bundle, `${bundle}.map`]) {
      const src = path.join(from, name);
      if (name !== bundle && !existsSync(src)) continue;
      files.push({ path: `${MARKETPLACE_PLUGIN_PATH}/${PLUGIN_BIN_DIR}/${name}`, content: readFileSync(src), mode: name === bundle ? 0o755 : 0o644 });
    }
  }
  return files;
}

/** How an on-disk file compares with what setup would write. */
export type FileState = "ok" | "missing" | "stale" | "extra";

/** Compare the marketplace folder with the files it should hold (every other file in it is `extra`). */
export function compareTree(dir: string, files: readonly TreeFile[]): Array<{ path: string; state: FileState }> {
  const out: Array<{ path: string; state: FileState }> = [];
  for (const f of files) {
    const abs = path.join(dir, f.path);
    let current: Buffer | undefined;
    try {
      current = readFileSync(abs);
    } catch {
      current = undefined;
    }
    out.push({ path: f.path, state: current === undefined ? "missing" : current.equals(f.content) ? "ok" : "stale" });
  }
  const wanted = new Set(files.map((f) => f.path));
  for (const rel of listFiles(dir)) if (!wanted.has(rel)) out.push({ path: rel, state: "extra" });
  return out;
}

/** Write what is missing or stale (atomically: a running session never reads half a bundle) and remove extras. */
export function applyTree(dir: string, files: readonly TreeFile[], states: ReadonlyArray<{ path: string; state: FileState }>): void {
  const byPath = new Map(files.map((f) => [f.path, f]));
  for (const s of states) {
    const abs = path.join(dir, s.path);
    if (s.state === "extra") {
      unlinkSync(abs);
      removeEmptyParents(path.dirname(abs), dir);
      continue;
    }
    if (s.state === "ok") continue;
    const f = byPath.get(s.path)!;
    mkdirSync(path.dirname(abs), { recursive: true });
    const tmp = `${abs}.tmp-${process.pid}`;
    writeFileSync(tmp, f.content, { mode: f.mode });
    renameSync(tmp, abs);
  }
}

/** What `cotal setup --check` (and `cotal doctor`) finds of the plugin's install. */
export interface SetupInspection {
  /** The local marketplace folder. */
  market: string;
  /** Each marketplace file against what this version writes. */
  states: Array<{ path: string; state: FileState }>;
  /** The claude CLI, when there is one (without it, Claude's record is not read). */
  cli: ReturnType<typeof findClaudeCli>;
  /** Claude's record of the marketplace and plugin at the scope asked. */
  state?: PluginInstallState;
  /** Each thing not in place, in words (empty: all is). */
  problems: string[];
}

/**
 * Compare the marketplace with what this version would write, and ask claude (when there is
 * one) whether the plugin is installed at this scope and version and enabled. Changes nothing.
 */
export async function inspectSetup(opts: { scope: PluginScope; projectDir: string }): Promise<SetupInspection> {
  const market = marketplaceDir(cotalHome());
  const states = compareTree(market, desiredMarketplace(packageRoot()));
  const problems: string[] = [];
  if (states.every((s) => s.state === "missing")) problems.push(`no marketplace at ${market}`);
  else for (const s of states) if (s.state !== "ok") problems.push(`${s.state} file ${path.join(market, s.path)}`);
  const cli = findClaudeCli();
  if (!cli.path) return { market, states, cli, problems };
  const target = { marketplaceDir: market, scope: opts.scope, projectDir: opts.projectDir, version: COTAL_VERSION };
  const state = await inspectPluginInstall(target, { bin: cli.path });
  if (state.marketplace === "absent") problems.push(`claude has no marketplace ${PLUGIN_MARKETPLACE}`);
  if (state.marketplace === "elsewhere")
    problems.push(`claude's marketplace ${PLUGIN_MARKETPLACE} points at ${state.marketplacePath ?? "another folder"}, not ${market}`);
  if (state.plugin === "absent")
    problems.push(`${PLUGIN_ID} is not installed (${opts.scope} scope${opts.scope === "project" ? ` for ${opts.projectDir}` : ""})`);
  if (state.plugin === "outdated") problems.push(`${PLUGIN_ID} is recorded at version ${state.installedVersion ?? "?"}, not ${COTAL_VERSION}`);
  if (state.enabled === false) problems.push(`${PLUGIN_ID} is disabled (${pluginEnableCommandText(opts.scope)})`);
  return { market, states, cli, state, problems };
}

function listFiles(dir: string, rel = ""): string[] {
  let entries;
  try {
    entries = readdirSync(path.join(dir, rel), { withFileTypes: true });
  } catch {
    return [];
  }
  return entries.flatMap((e) => {
    const r = rel ? `${rel}/${e.name}` : e.name;
    return e.isDirectory() ? listFiles(dir, r) : [r];
  });
}

function removeEmptyParents(from: string, stopAt: string): void {
  for (let d = from; d.startsWith(stopAt + path.sep); d = path.dirname(d)) {
    try {
      rmdirSync(d);
    } catch {
      return; // not empty
    }
  }
}

/** The agent file `cotal setup` seeds: valid frontmatter and a short persona. */
export const DEFAULT_AGENT_FILE = `---
name: default
description: A general-purpose teammate on the Cotal mesh.
---
You work alongside other agents and people on a Cotal mesh. Messages addressed to you reach
you in your context or through the cotal_inbox tool. Answer a person or agent with cotal_dm,
post to a channel with cotal_send, and ask whoever holds a role with cotal_anycast; cotal_roster
shows who is around. Keep messages short: say what you did, what you need, and what blocks you.
`;

/** Where the seeded agent file goes in a project. */
export function defaultAgentPath(projectDir: string): string {
  return path.join(projectDir, ".cotal", "agents", "default.md");
}

/** Create `.cotal/agents/default.md` unless a file is already there (never overwritten). */
export function seedDefaultAgent(projectDir: string): "created" | "kept" {
  const file = defaultAgentPath(projectDir);
  mkdirSync(path.dirname(file), { recursive: true });
  let fd: number;
  try {
    fd = openSync(file, "wx", 0o644);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return "kept";
    throw err;
  }
  try {
    writeSync(fd, DEFAULT_AGENT_FILE);
  } finally {
    closeSync(fd);
  }
  return "created";
}

/** Whether `dir` is an existing directory. */
export function isDirectory(dir: string): boolean {
  try {
    return statSync(dir).isDirectory();
  } catch {
    return false;
  }
}
