// The Claude Code plugin, rendered from code: the manifest (version, author and license from
// package.json), hooks/hooks.json from the hook registry (HOOKS), .mcp.json with the connector
// entry, and a README. The committed plugin/ folder is exactly this render (a golden test fails
// when it drifts; `npm run plugin:render` rewrites it); the build copies the bundles into its bin/.
import pkg from "../../package.json" with { type: "json" };
import { HOOKS, renderHooksSettings } from "../hooks.js";
import type { HookEvent } from "../protocol.js";
import { pluginRuntime } from "../../runtimes/index.js";
import { COTAL_MCP_SERVER, CONNECTOR_NODE_FLAGS, RUNTIME_ENV } from "../../runtime/index.js";

/** The plugin's name: its MCP tools are `mcp__plugin_cotal_cotal__<tool>`. */
export const PLUGIN_NAME = "cotal";
/** The local marketplace `cotal setup` creates under the Cotal home. */
export const PLUGIN_MARKETPLACE = "cotal-local";
/** How Claude names the plugin installed from that marketplace. */
export const PLUGIN_ID = `${PLUGIN_NAME}@${PLUGIN_MARKETPLACE}`;
/** Where the plugin tree sits inside the marketplace folder (relative, posix). */
export const MARKETPLACE_PLUGIN_PATH = `plugins/${PLUGIN_NAME}`;
/** The marketplace manifest inside the marketplace folder. */
export const MARKETPLACE_MANIFEST = ".claude-plugin/marketplace.json";
/** The bundles the plugin runs, shipped in its `bin/` (their `.map` files go along when present). */
export const PLUGIN_BUNDLES = ["connector.mjs", "hook.mjs"] as const;
/** The folder of the plugin tree holding the bundles (not rendered, not committed). */
export const PLUGIN_BIN_DIR = "bin";
/** Prefix of the MCP tool names the plugin's connector serves. */
export const PLUGIN_TOOL_PREFIX = `mcp__plugin_${PLUGIN_NAME}_${COTAL_MCP_SERVER}__`;

/** Claude substitutes this with the plugin's folder (in hook commands and .mcp.json args). */
const ROOT = "${CLAUDE_PLUGIN_ROOT}";

const DESCRIPTION =
  "Cotal agent mesh for Claude Code: the connector's MCP tools (send, DM, anycast, inbox, roster) and the hooks that report presence and deliver waiting mail into the session.";

/** What the manifest takes from package.json. */
export interface PluginPackageInfo {
  version: string;
  license: string;
  /** package.json `author`: a string (`Name <mail> (url)`) or `{ name }`. */
  author: string | { name: string };
}

/** The package's own version, license and author. */
export function packageInfo(): PluginPackageInfo {
  return { version: pkg.version, license: pkg.license, author: pkg.author };
}

/**
 * The hook command for one event. Shell form with the placeholder quoted: Claude runs it through
 * sh, so a plugin folder with a space still works. (2.1.332 also takes an exec form, `command` +
 * `args`, but older CLIs would run a bare `node` reading the hook payload as a script.)
 */
export function pluginHookCommand(event: HookEvent): string {
  return `node "${ROOT}/${PLUGIN_BIN_DIR}/hook.mjs" ${event}`;
}

/** Render the plugin tree: relative posix path → file text. Pure. */
export function renderPlugin(info: PluginPackageInfo = packageInfo()): Record<string, string> {
  const manifest = {
    name: PLUGIN_NAME,
    version: info.version,
    description: DESCRIPTION,
    author: { name: authorName(info.author) },
    license: info.license,
  };
  const hooks = {
    description: "Cotal presence and mail delivery (rendered from the HOOKS registry in connector/hooks.ts).",
    hooks: renderHooksSettings({ command: pluginHookCommand }),
  };
  const mcp = {
    mcpServers: {
      // The connector learns it runs in Claude Code (its card's `runtime`): a seat the manager launched reads it from its launch material.
      [COTAL_MCP_SERVER]: {
        command: "node",
        args: [...CONNECTOR_NODE_FLAGS, `${ROOT}/${PLUGIN_BIN_DIR}/connector.mjs`],
        env: { [RUNTIME_ENV]: pluginRuntime().name },
      },
    },
  };
  return {
    ".claude-plugin/plugin.json": json(manifest),
    ".mcp.json": json(mcp),
    "README.md": renderReadme(info),
    "hooks/hooks.json": json(hooks),
  };
}

/** The marketplace manifest listing the plugin with a relative source. */
export function renderMarketplace(info: PluginPackageInfo = packageInfo()): string {
  return json({
    name: PLUGIN_MARKETPLACE,
    owner: { name: authorName(info.author) },
    metadata: { description: "The Cotal plugin, installed from this machine by `cotal setup`.", version: info.version },
    plugins: [{ name: PLUGIN_NAME, source: `./${MARKETPLACE_PLUGIN_PATH}`, description: DESCRIPTION, version: info.version }],
  });
}

function authorName(author: PluginPackageInfo["author"]): string {
  if (typeof author !== "string") return author.name;
  // "Name <mail> (url)" → "Name"
  return author.replace(/\s*[<(].*$/, "").trim();
}

function json(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

function renderReadme(info: PluginPackageInfo): string {
  const rows = HOOKS.map(
    (h) => `| \`${h.event}\` | ${h.matcher ? `\`${h.matcher}\`` : "all"} | ${h.timeoutSec} s | ${h.drains ? "yes" : "no"} | ${h.purpose} |`,
  );
  return [
    `# Cotal plugin for Claude Code (${info.version})`,
    "",
    "<!-- Generated by connector/claude/plugin.ts (`npm run plugin:render`). Do not edit by hand. -->",
    "",
    "Cotal is an agent mesh on NATS JetStream: coding agents join a shared space as peers, with",
    "presence, channels, direct messages and anycast. This plugin puts a Claude Code session on the",
    "mesh. It starts the Cotal connector as an MCP server and registers the hooks that report the",
    "session's presence and deliver mail that waited while the model was busy.",
    "",
    "## Install",
    "",
    "```sh",
    "npx cotal setup                    # user scope; --scope project for this project only",
    "npx cotal setup --check            # what is installed, and what is stale",
    "npx cotal setup --allow-tools      # also allow the plugin's tools without an approval prompt",
    "```",
    "",
    "`cotal setup` copies this plugin into a local marketplace under the Cotal home (`$COTAL_HOME`,",
    "default `~/.cotal`) and installs it with Claude Code's own `plugin install`. To try it for one",
    "session without installing, pass this folder with `--plugin-dir` (the path comes from",
    "`cotal setup --print-plugin-dir`).",
    "",
    "## What it adds",
    "",
    `- **MCP server \`${COTAL_MCP_SERVER}\`**: \`node ${CONNECTOR_NODE_FLAGS.join(" ")} bin/connector.mjs\`. Its tools are`,
    `  named \`${PLUGIN_TOOL_PREFIX}<tool>\`. Without a Cotal identity in the environment it starts`,
    "  not joined and serves one tool, `cotal_join_help`, which explains how to join a mesh.",
    `  Claude asks before each call unless an allow rule covers them: \`${pluginRuntime().plugin.allowRule}\` (the whole`,
    "  server) in `permissions.allow` of your Claude settings (`cotal setup --allow-tools` adds it), or",
    `  \`--allowedTools ${pluginRuntime().plugin.allowRule}\` for one session.`,
    "  The connector joins the mesh on the session's first hook or tool call, so `claude mcp list`",
    "  (which starts the server only to check it) takes no mail and leaves presence alone.",
    "- **Hooks**: `node bin/hook.mjs <Event>` on these events. A hook never blocks the session: when",
    "  no connector answers in time it prints `{}`.",
    "",
    "| event | matcher | timeout | drains mail | what the connector does |",
    "|---|---|---|---|---|",
    ...rows,
    "",
    "`bin/` holds the bundles (`connector.mjs`, `hook.mjs`); the build copies them there.",
    "",
    "Documentation: `docs/setup.md` and `docs/connector.md` in the Cotal package.",
    "",
  ].join("\n");
}
