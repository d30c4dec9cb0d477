// `cotal setup --runtime opencode` (docs/runtimes.md): make a hand-started `opencode` a Cotal seat
// by writing into the user's own OpenCode config (opencode.json in $XDG_CONFIG_HOME/opencode,
// default ~/.config/opencode) what a managed seat's private home has: the connector as MCP server
// (`mcp.cotal`) and Cotal's plugin in the `plugin` list (replacing only an earlier Cotal entry).
// Everything else in the file is kept. Running it again changes nothing. A hand-started session
// has a person at it: the plugin leaves OpenCode's own asks to them (no unattended refusal).
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { applySetupFile, RUNTIME_ENV, setupAction, type Env, type RuntimeSetupReport } from "../runtime/index.js";
import { opencodeLaunchError } from "./errors.js";
import { userConfigDir } from "./home.js";
import { isCotalPlugin, mcpEntry, pluginEntry } from "./launch.js";
import { MCP_NAME } from "./posture.js";
import { PLUGIN_HOOKS } from "./plugin-hooks.js";

/** The user's config with Cotal's MCP server and plugin in place, the rest kept. */
function merged(text: string | undefined, file: string, connectorEntry: string): string {
  let doc: Record<string, unknown> = {};
  if (text !== undefined && text.trim() !== "") {
    try {
      const parsed: unknown = JSON.parse(text);
      if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw new Error("not a JSON object");
      doc = parsed as Record<string, unknown>;
    } catch (cause) {
      throw opencodeLaunchError(`${file} is not a plain JSON object (comments or trailing commas?); Cotal leaves it as it is.`, {
        remedy: `Add "mcp": {"${MCP_NAME}": …} and Cotal's plugin yourself (see \`cotal setup --runtime opencode --check --json\` on a copy without comments), or remove the comments.`,
        cause,
      });
    }
  }
  // The connector OpenCode starts from it says it runs in OpenCode (its card's runtime).
  const mcp = { ...(doc.mcp as Record<string, unknown> | undefined), [MCP_NAME]: mcpEntry(connectorEntry, { [RUNTIME_ENV]: "opencode" }) };
  const plugins = Array.isArray(doc.plugin) ? (doc.plugin as unknown[]).filter((p) => !isCotalPlugin(p)) : [];
  return `${JSON.stringify({ $schema: "https://opencode.ai/config.json", ...doc, mcp, plugin: [...plugins, pluginEntry(connectorEntry, false)] }, null, 2)}\n`;
}

/** Install (or with `check`, only compare) Cotal's MCP server and plugin in the user's OpenCode config. */
export async function setupOpencode(o: { env: Env; connectorEntry: string; executable?: string | undefined; check: boolean }): Promise<RuntimeSetupReport> {
  const dir = userConfigDir(o.env);
  const jsonc = path.join(dir, "opencode.jsonc");
  const file = !existsSync(path.join(dir, "opencode.json")) && existsSync(jsonc) ? jsonc : path.join(dir, "opencode.json");
  const now = existsSync(file) ? readFileSync(file, "utf8") : undefined;
  const want = merged(now, file, o.connectorEntry);
  const action = setupAction(now, want, o.check);
  applySetupFile(dir, file, want, action, o.check);
  const inPlace = !o.check || action === "ok";
  // OpenCode has no hook trust: a plugin in the config runs as installed. Each of its hooks counts once it is in place.
  return { home: dir, files: [{ path: file, action }], ...(o.executable ? { trusted: inPlace ? PLUGIN_HOOKS.length : 0 } : {}) };
}
