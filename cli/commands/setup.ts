import { existsSync } from "node:fs";
import path from "node:path";
import type { Command } from "commander";
import { z } from "zod";
import {
  ensurePluginInstalled,
  findClaudeCli,
  installCommandText,
  MARKETPLACE_PLUGIN_PATH,
  PLUGIN_BIN_DIR,
  PLUGIN_ID,
  PLUGIN_MARKETPLACE,
  PLUGIN_TOOL_PREFIX,
  pluginDirCommandText,
  pluginEnableCommandText,
  PluginScope,
  type PluginInstallActions,
} from "../../connector/index.js";
import { askYesNo, atTerminal } from "../terminal/confirm.js";
import { jsonOption } from "../mesh-client/mesh-target.js";
import { CommandFailedError, EXIT, UsageError } from "../terminal/errors.js";
import { findRuntimeCli } from "../../manager/index.js";
import { DEFAULT_RUNTIME, pluginRuntime, RUNTIMES, runtimeNamed } from "../../runtimes/index.js";
import type { AllowRulePlan, RuntimeAdapter } from "../../runtime/index.js";
import { printJson, printLines } from "../terminal/output.js";
import { packageRoot } from "../install/package-root.js";
import {
  applyTree,
  compareTree,
  cotalHome,
  defaultAgentPath,
  desiredMarketplace,
  inspectSetup,
  isDirectory,
  marketplaceDir,
  packagePluginDir,
  seedDefaultAgent,
} from "../install/setup-files.js";
import { parseInput } from "../terminal/validate.js";
import { COTAL_VERSION, CotalError } from "../../schemas/index.js";

/** What Cotal's plugin needs of the CLI it plugs into (its allow rule and settings file), from the registry. */
const plugin = () => pluginRuntime().plugin;

/** How to get Claude Code when no claude CLI is found (it is not a dependency of Cotal). */
const CLAUDE_HOW_TO =
  "install Claude Code (`npm install -g @anthropic-ai/claude-code`, or `npm install --save-dev @anthropic-ai/claude-code` and run `npx claude`), or set COTAL_CLAUDE_BIN to its binary";

const SetupFlags = z.object({
  scope: z.enum(PluginScope.options, { message: "scope must be user or project" }).optional(),
  dir: z.string().min(1, "dir must not be empty").optional(),
  check: z.boolean().optional(),
  printPluginDir: z.boolean().optional(),
  allowTools: z.boolean().optional(),
  json: z.boolean().optional(),
  runtime: z.string().min(1, "runtime must not be empty").optional(),
});

/** `cotal setup`: install the Claude Code plugin (MCP tools + hooks) through a local marketplace. */
export function registerSetup(program: Command): void {
  const cmd = program
    .command("setup")
    .summary("install the Claude Code plugin (MCP tools + hooks); --check reports what is stale")
    .description(
      "Copy the Cotal plugin (manifest, hooks, MCP server entry, bundles) into a local marketplace under the Cotal home " +
        "($COTAL_HOME, default ~/.cotal) and install it with the claude CLI's own plugin commands (marketplace add, then " +
        "install or update); without a claude CLI it writes the files and prints the command to run. Seeds " +
        ".cotal/agents/default.md in the project unless it exists. Claude's settings files are written by claude itself, " +
        `except one rule: it offers to add the allow rule ${plugin().allowRule} (the plugin's own tools, so they run ` +
        "without an approval prompt) to the user's Claude settings, showing what it writes; --allow-tools adds it without " +
        "asking. Running it again changes nothing, or refreshes what an upgrade made stale.",
    )
    .option("--scope <scope>", "user (every project; default) or project (recorded in <dir>/.claude/settings.json by claude)")
    .option("--dir <path>", "the project folder (default: the working directory)")
    .option("--check", "report what is installed and what is stale; change nothing; exit 1 unless all is in place")
    .option(
      "--allow-tools",
      `add the allow rule ${plugin().allowRule} to the user's Claude settings (~/.claude/settings.json, or $CLAUDE_CONFIG_DIR) without asking`,
    )
    .option("--print-plugin-dir", `print the package's plugin folder, for one session without installing: ${pluginDirCommandText()}`)
    .option(
      "--runtime <runtime>",
      `the agent CLI to set up: ${RUNTIMES.map((r) => r.name).join(", ")} (default ${DEFAULT_RUNTIME.name}; docs/runtimes.md). codex: writes Cotal's MCP server into $CODEX_HOME/config.toml and its hooks into hooks.json (the user's entries kept), and trusts those hooks as Codex's /hooks review does`,
    );
  jsonOption(cmd).action(async (raw: Record<string, unknown>) => {
    const f = parseFlags(raw);
    const adapter = f.runtime === undefined ? DEFAULT_RUNTIME : runtimeNamed(f.runtime);
    if (!adapter)
      throw new UsageError(`--runtime: no runtime ${JSON.stringify(f.runtime)}.`, { remedy: `Use one of: ${RUNTIMES.map((r) => r.name).join(", ")}.` });
    if (adapter.setup) return runtimeSetup(adapter, !!f.check, !!f.json);
    if (f.printPluginDir) return printPluginDir(!!f.json);
    const opts = { scope: f.scope ?? "user", projectDir: path.resolve(f.dir ?? process.cwd()), json: !!f.json, allowTools: !!f.allowTools };
    if (!isDirectory(opts.projectDir)) throw new UsageError(`--dir: ${opts.projectDir} is not a folder.`, { remedy: "Pass an existing project folder." });
    if (f.check) await check(opts);
    else await setup(opts);
  });
}

function parseFlags(raw: Record<string, unknown>) {
  const f = parseInput(SetupFlags, raw);
  if (f.printPluginDir && (f.check || f.scope || f.dir || f.allowTools)) {
    throw new UsageError("--print-plugin-dir prints a path and does nothing else: it takes no --check, --scope, --dir or --allow-tools.");
  }
  if (f.check && f.allowTools)
    throw new UsageError("--check changes nothing: it takes no --allow-tools.", { remedy: "Run `cotal setup --allow-tools` to add the rule." });
  return f;
}

interface SetupOptions {
  scope: PluginScope;
  projectDir: string;
  json: boolean;
  allowTools?: boolean;
}

/** What setup did about the allow rule for the plugin's tools. */
interface AllowRuleOutcome {
  file: string;
  rule: string;
  state: "present" | "added" | "absent" | "declined" | "unreadable";
  /** permissions.allow as written (when added). */
  allow?: string[];
  error?: string;
}

/** The part of the settings file setup writes, as it is shown before (and after) writing. */
function allowRuleShown(plan: AllowRulePlan): string[] {
  return [
    `  ${plan.exists ? "in" : "new file"} ${plan.file}:`,
    ...JSON.stringify({ permissions: { allow: plan.allow } }, null, 2)
      .split("\n")
      .map((l) => `    ${l}`),
  ];
}

/**
 * Add the allow rule for the plugin's tools to the user's Claude settings: at once with
 * --allow-tools, after a yes at a terminal, otherwise only say how.
 */
async function allowRuleStep(opts: SetupOptions, lines: string[]): Promise<AllowRuleOutcome> {
  const file = plugin().settingsPath(process.env);
  let plan: AllowRulePlan;
  try {
    plan = plugin().planAllowRule(file);
  } catch (err) {
    if (opts.allowTools || !(err instanceof CotalError)) throw err;
    lines.push(`allow rule   ${err.message}`);
    return { file, rule: plugin().allowRule, state: "unreadable", error: err.message };
  }
  if (plan.state === "present") {
    lines.push(`allow rule   ${plugin().allowRule} is in ${file}: the cotal tools run without an approval prompt`);
    return { file, rule: plan.rule, state: "present" };
  }
  let yes = !!opts.allowTools;
  const ask = !yes && !opts.json && atTerminal(process.stdout);
  if (ask) {
    printLines(
      ...lines.splice(0),
      `Claude asks before every cotal_* call unless an allow rule covers the plugin's tools. Setup can add this rule:`,
      ...allowRuleShown(plan),
    );
    yes = await askYesNo("Add it?", process.stdout);
  }
  if (!yes) {
    lines.push(
      `allow rule   not set: Claude asks before every cotal_* call. \`cotal setup --allow-tools\` adds "${plugin().allowRule}" to permissions.allow in ${file}.`,
    );
    return { file, rule: plan.rule, state: ask ? "declined" : "absent" };
  }
  plugin().applyAllowRule(plan);
  lines.push(`allow rule   added "${plugin().allowRule}" (every other setting kept):`, ...allowRuleShown(plan));
  return { file, rule: plan.rule, state: "added", allow: plan.allow };
}

/** `cotal setup --runtime <r>` for a runtime whose adapter installs itself (docs/runtimes.md). */
async function runtimeSetup(adapter: RuntimeAdapter, check: boolean, json: boolean): Promise<void> {
  const root = packageRoot();
  const connectorEntry = path.join(packagePluginDir(root), PLUGIN_BIN_DIR, "connector.mjs");
  if (!existsSync(connectorEntry))
    throw new CommandFailedError(`The connector bundle ${connectorEntry} is missing.`, {
      remedy: "Run `npm run build` in the Cotal package (it copies the bundles into plugin/bin/).",
    });
  const env = { ...process.env, PATH: [process.env.PATH ?? "", path.join(root, "node_modules", ".bin")].join(path.delimiter) };
  const executable = findRuntimeCli(adapter, env).path;
  const report = await adapter.setup!({ env: process.env, connectorEntry, executable, check });
  const ready = report.files.every((f) => f.action !== "missing" && f.action !== "stale") && (report.trusted ?? 0) > 0;
  if (json) printJson({ runtime: adapter.name, ...report, executable: executable ?? null });
  else
    printLines(
      `${adapter.label} home  ${report.home}`,
      ...report.files.map((f) => `  ${f.action.padEnd(8)} ${f.path}`),
      executable === undefined
        ? `hooks    not trusted: no ${adapter.command} executable found (${adapter.installHint})`
        : `hooks    ${report.trusted ?? 0} of Cotal's hooks trusted by ${executable}`,
    );
  if (check && !ready) process.exitCode = EXIT.failed;
}

function printPluginDir(json: boolean): void {
  const dir = packagePluginDir(packageRoot());
  const missing = [path.join(".claude-plugin", "plugin.json"), path.join(PLUGIN_BIN_DIR, "connector.mjs"), path.join(PLUGIN_BIN_DIR, "hook.mjs")].filter(
    (f) => !existsSync(path.join(dir, f)),
  );
  if (missing.length > 0) {
    throw new CommandFailedError(`The plugin folder ${dir} is incomplete (no ${missing.join(", ")}).`, {
      remedy: "Run `npm run build` in the Cotal package (it copies the bundles into plugin/bin/), or install with `cotal setup`.",
    });
  }
  if (json) printJson({ pluginDir: dir });
  else printLines(dir);
}

async function setup(opts: SetupOptions): Promise<void> {
  const home = cotalHome();
  const market = marketplaceDir(home);
  const files = desiredMarketplace(packageRoot());
  const states = compareTree(market, files);
  applyTree(market, files, states);
  const written = states
    .filter((s) => s.state !== "ok")
    .map((s) => ({ path: s.path, action: s.state === "missing" ? "created" : s.state === "stale" ? "updated" : "removed" }));
  const agentFile = { path: defaultAgentPath(opts.projectDir), action: seedDefaultAgent(opts.projectDir) };

  const cli = findClaudeCli();
  const target = { marketplaceDir: market, scope: opts.scope, projectDir: opts.projectDir, version: COTAL_VERSION };
  let claude: PluginInstallActions | undefined;
  if (cli.path) claude = await ensurePluginInstalled(target, { bin: cli.path });
  const command = cli.path ? undefined : installCommandText(target);
  const allowLines: string[] = [];
  const allowRule = await allowRuleStep(opts, allowLines);
  const changed =
    written.length > 0 ||
    agentFile.action === "created" ||
    allowRule.state === "added" ||
    (claude !== undefined && (claude.marketplace !== "present" || claude.plugin !== "present"));

  if (opts.json) {
    printJson({
      changed,
      version: COTAL_VERSION,
      scope: opts.scope,
      projectDir: opts.projectDir,
      home,
      marketplace: market,
      pluginDir: path.join(market, MARKETPLACE_PLUGIN_PATH),
      files: written,
      agentFile,
      allowRule,
      claude: cli.path
        ? { bin: cli.path, marketplace: claude!.marketplace, plugin: claude!.plugin, enabled: claude!.state.enabled ?? null }
        : { bin: null, command },
      notes: cli.notes,
    });
    return;
  }
  const lines = [`marketplace  ${market} (${PLUGIN_MARKETPLACE}, plugin ${COTAL_VERSION})`];
  if (written.length === 0) lines.push(`  files up to date (${files.length})`);
  for (const w of written) lines.push(`  ${w.action.padEnd(8)} ${w.path}`);
  lines.push(`agent file   ${agentFile.path} (${agentFile.action === "created" ? "created" : "exists, kept"})`);
  lines.push(...allowLines);
  for (const n of cli.notes) lines.push(`note         ${n}`);
  if (claude) {
    lines.push(`claude       ${cli.path}`);
    lines.push(`  marketplace ${PLUGIN_MARKETPLACE}: ${claude.marketplace === "present" ? "already added" : claude.marketplace}`);
    lines.push(
      `  plugin ${PLUGIN_ID} (${opts.scope} scope): ${claude.plugin === "present" ? "already installed" : claude.plugin}${claude.state.installedVersion ? ` ${claude.state.installedVersion}` : ""}`,
    );
    if (claude.state.enabled === false) lines.push(`  it is disabled; setup leaves it so. To enable it: ${pluginEnableCommandText(opts.scope)}`);
    lines.push(
      changed
        ? `Done. New Claude Code sessions${opts.scope === "project" ? " in " + opts.projectDir : ""} load the Cotal hooks and MCP tools (${PLUGIN_TOOL_PREFIX}*).`
        : `Nothing changed: the Cotal plugin ${COTAL_VERSION} is installed (${opts.scope} scope) and up to date.`,
    );
  } else {
    lines.push(`claude       not found on PATH: ${CLAUDE_HOW_TO}`);
    lines.push("The plugin files are in place. To finish, run:", `  ${command}`);
  }
  printLines(...lines);
}

async function check(opts: SetupOptions): Promise<void> {
  const home = cotalHome();
  const { market, states, cli, state, problems } = await inspectSetup(opts);
  const agentFile = { path: defaultAgentPath(opts.projectDir), present: existsSync(defaultAgentPath(opts.projectDir)) };
  // For information, like the agent file: the rule is the user's choice, not part of the install.
  const settingsFile = plugin().settingsPath(process.env);
  let allowState: "present" | "absent" | "unreadable";
  try {
    allowState = plugin().planAllowRule(settingsFile).state === "present" ? "present" : "absent";
  } catch {
    allowState = "unreadable";
  }
  const allowRule = { file: settingsFile, rule: plugin().allowRule, state: allowState };

  if (opts.json) {
    printJson({
      ok: problems.length === 0,
      version: COTAL_VERSION,
      scope: opts.scope,
      projectDir: opts.projectDir,
      home,
      marketplace: market,
      files: states,
      claude: cli.path ? { bin: cli.path, ...state } : { bin: null },
      agentFile,
      allowRule,
      problems,
      notes: cli.notes,
    });
  } else {
    const bad = states.filter((s) => s.state !== "ok");
    const lines = [
      `marketplace  ${market}: ${bad.length === 0 ? `${states.length} files up to date` : `${bad.length} of ${states.length} files not up to date`}`,
    ];
    for (const s of bad) lines.push(`  ${s.state.padEnd(8)} ${s.path}`);
    for (const n of cli.notes) lines.push(`note         ${n}`);
    if (state) {
      lines.push(`claude       ${cli.path}`);
      lines.push(`  marketplace ${PLUGIN_MARKETPLACE}: ${state.marketplace}${state.marketplacePath ? ` (${state.marketplacePath})` : ""}`);
      lines.push(
        `  plugin ${PLUGIN_ID} (${opts.scope} scope): ${state.plugin}${state.installedVersion ? ` ${state.installedVersion}` : ""}${state.enabled === false ? ", disabled" : ""}`,
      );
    } else lines.push(`claude       not found on PATH, so the install in Claude is not checked: ${CLAUDE_HOW_TO}`);
    lines.push(`agent file   ${agentFile.path}: ${agentFile.present ? "present" : "absent (cotal setup seeds it)"}`);
    lines.push(
      `allow rule   ${plugin().allowRule} in ${settingsFile}: ${allowState === "present" ? "present" : allowState === "absent" ? "absent (Claude asks before every cotal_* call; cotal setup --allow-tools adds it)" : "the file cannot be read as JSON"}`,
    );
    lines.push(
      problems.length > 0
        ? `Not set up: ${problems.length} problem${problems.length === 1 ? "" : "s"}.`
        : state
          ? `OK: the Cotal plugin ${COTAL_VERSION} is set up (${opts.scope} scope).`
          : `OK: the plugin files are up to date; without a claude CLI its install in Claude is not checked.`,
    );
    printLines(...lines);
  }
  if (problems.length > 0) {
    throw new CommandFailedError(`The Cotal plugin is not set up: ${problems.join("; ")}.`, {
      remedy: `Run \`cotal setup${opts.scope === "project" ? " --scope project" : ""}\` to install or refresh it.`,
    });
  }
}
