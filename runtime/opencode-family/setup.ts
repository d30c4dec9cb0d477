// `cotal setup --runtime <cli>` for the OpenCode family (docs/runtimes.md): make a hand-started CLI
// a Cotal seat by writing into the user's own config (the file the CLI edits itself, in
// `$XDG_CONFIG_HOME/<app>`, default ~/.config/<app>) what a managed seat's private home has: the
// connector as MCP server (`mcp.cotal`) and Cotal's plugin in the `plugin` list (replacing only an
// earlier Cotal entry). Everything else in the file is kept. Running it again changes nothing. A
// hand-started session has a person at it: the plugin leaves the CLI's own asks to them (no
// unattended refusal).
import { existsSync, readFileSync } from "node:fs";
import type { Env, RuntimeSetupReport } from "../adapter.js";
import { RUNTIME_ENV } from "../runtime-env.js";
import { applySetupFile, setupAction } from "../setup-file.js";
import type { OpencodeFamily } from "./family.js";
import { isCotalPlugin, mcpEntry, pluginEntry } from "./launch.js";
import { PLUGIN_HOOKS } from "./plugin-hooks.js";
import { MCP_NAME } from "./posture.js";
import { editedFileIn, userConfigDir } from "./user-config.js";

/** The user's config with Cotal's MCP server and plugin in place, the rest kept. */
function merged(d: OpencodeFamily, text: string | undefined, file: string, connectorEntry: string): string {
  let doc: Record<string, unknown> = {};
  if (text !== undefined && text.trim() !== "") {
    try {
      const parsed: unknown = JSON.parse(text);
      if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw new Error("not a JSON object");
      doc = parsed as Record<string, unknown>;
    } catch (cause) {
      throw d.fail(`${file} is not a plain JSON object (comments or trailing commas?); Cotal leaves it as it is.`, {
        remedy: `Add "mcp": {"${MCP_NAME}": …} and Cotal's plugin yourself (see \`cotal setup --runtime ${d.runtime} --check --json\` on a copy without comments), or remove the comments.`,
        cause,
      });
    }
  }
  // The connector the CLI starts from it says which CLI it runs in (its card's runtime).
  const mcp = { ...(doc.mcp as Record<string, unknown> | undefined), [MCP_NAME]: mcpEntry(connectorEntry, { [RUNTIME_ENV]: d.runtime }) };
  const plugins = Array.isArray(doc.plugin) ? (doc.plugin as unknown[]).filter((p) => !isCotalPlugin(d, p)) : [];
  return `${JSON.stringify({ $schema: d.schema, ...doc, mcp, plugin: [...plugins, pluginEntry(d, connectorEntry, false)] }, null, 2)}\n`;
}

/** Install (or with `check`, only compare) Cotal's MCP server and plugin in the user's config of `d`. */
export async function setupOpencodeFamily(
  d: OpencodeFamily,
  o: { env: Env; connectorEntry: string; executable?: string | undefined; check: boolean },
): Promise<RuntimeSetupReport> {
  const dir = userConfigDir(d, o.env);
  const file = editedFileIn(d, dir);
  const now = existsSync(file) ? readFileSync(file, "utf8") : undefined;
  const want = merged(d, now, file, o.connectorEntry);
  const action = setupAction(now, want, o.check);
  applySetupFile(dir, file, want, action, o.check);
  const inPlace = !o.check || action === "ok";
  // The family has no hook trust: a plugin in the config runs as installed. Each of its hooks counts once it is in place.
  return { home: dir, files: [{ path: file, action }], ...(o.executable ? { trusted: inPlace ? PLUGIN_HOOKS.length : 0 } : {}) };
}
