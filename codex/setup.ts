// `cotal setup --runtime codex` (docs/runtimes.md): make a hand-started `codex` a Cotal seat by
// writing into the user's own Codex home ($CODEX_HOME, default ~/.codex) what a managed seat's
// private home has: the connector as MCP server (`[mcp_servers.cotal]` in config.toml) and its
// hooks (in hooks.json, next to any of the user's), trusted the way Codex's `/hooks` review
// trusts them. Everything else in those files is kept. Running it again changes nothing.
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { applySetupFile, connectorCommand, hookEntryOf, RUNTIME_ENV, setupAction, type Env, type RuntimeSetupReport } from "../runtime/index.js";
import { codexLaunchError } from "./errors.js";
import { COTAL_HOOK_MARK, listHooks, trustSeatHooks } from "./hook-trust.js";
import { MCP_TABLE, renderMcpTable, upsertTable, userCodexHome } from "./home.js";
import { CODEX_RUNTIME_NAME, COTAL_HOOK_COUNT, cotalHookGroups } from "./launch.js";

type HookGroup = { matcher?: string; hooks: Array<{ type?: string; command?: string; timeout?: number }> };

/** hooks.json with Cotal's groups in place of any earlier Cotal groups, the user's kept. */
function mergedHooks(text: string | undefined, ours: Record<string, HookGroup[]>, file: string): string {
  let doc: { hooks?: Record<string, HookGroup[]> } = {};
  if (text !== undefined) {
    try {
      doc = JSON.parse(text) as typeof doc;
    } catch (cause) {
      throw codexLaunchError(`${file} is not JSON; Cotal leaves it as it is.`, {
        remedy: "Fix or remove the file, then run `cotal setup --runtime codex` again.",
        cause,
      });
    }
  }
  const hooks: Record<string, HookGroup[]> = { ...doc.hooks };
  const isOurs = (g: HookGroup): boolean => g.hooks.some((h) => typeof h.command === "string" && h.command.includes(COTAL_HOOK_MARK));
  for (const [event, groups] of Object.entries(ours)) hooks[event] = [...(hooks[event] ?? []).filter((g) => !isOurs(g)), ...groups];
  return `${JSON.stringify({ ...doc, hooks }, null, 2)}\n`;
}

/**
 * Install (or with `check`, only compare) Cotal's MCP server and hooks in the user's Codex home,
 * then trust the hooks with `executable` (when given). Returns what each file needed.
 */
export async function setupCodex(o: { env: Env; connectorEntry: string; executable?: string | undefined; check: boolean }): Promise<RuntimeSetupReport> {
  const home = userCodexHome(o.env);
  const configPath = path.join(home, "config.toml");
  const hooksPath = path.join(home, "hooks.json");
  const read = (f: string): string | undefined => (existsSync(f) ? readFileSync(f, "utf8") : undefined);
  const config = read(configPath);
  const hooks = read(hooksPath);
  const wantConfig = upsertTable(
    config ?? "",
    MCP_TABLE,
    renderMcpTable({ ...connectorCommand(o.connectorEntry), env: { [RUNTIME_ENV]: CODEX_RUNTIME_NAME } }),
  );
  const wantHooks = mergedHooks(hooks, cotalHookGroups(hookEntryOf(o.connectorEntry)), hooksPath);
  const configFile = { path: configPath, action: setupAction(config, wantConfig, o.check) };
  const hooksFile = { path: hooksPath, action: setupAction(hooks, wantHooks, o.check) };
  const report: RuntimeSetupReport = { home, files: [configFile, hooksFile] };
  applySetupFile(home, configPath, wantConfig, configFile.action, o.check);
  applySetupFile(home, hooksPath, wantHooks, hooksFile.action, o.check);
  if (o.executable && (!o.check || hooksFile.action === "ok")) {
    const env = Object.fromEntries(Object.entries({ ...o.env, CODEX_HOME: home }).filter((e): e is [string, string] => e[1] !== undefined));
    report.trusted = o.check ? await countTrusted(o.executable, env, hooksPath) : await trustSeatHooks(o.executable, env, home, hooksPath, COTAL_HOOK_COUNT);
  }
  return report;
}

async function countTrusted(codex: string, env: Record<string, string>, hooksPath: string): Promise<number> {
  const { hooks } = await listHooks(codex, env, path.dirname(hooksPath));
  return hooks.filter((h) => h.key?.startsWith(`${hooksPath}:`) && h.trustStatus === "trusted" && (h.command ?? COTAL_HOOK_MARK).includes(COTAL_HOOK_MARK))
    .length;
}
