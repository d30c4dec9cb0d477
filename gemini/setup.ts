// `cotal setup --runtime gemini` (docs/runtimes.md): make a hand-started `gemini` a Cotal seat by
// writing into the user's own settings.json (`$GEMINI_CLI_HOME/.gemini`, default ~/.gemini) what a
// managed seat's private home has: the connector as MCP server (`mcpServers.cotal`, trusted) and
// the connector's hook command on Gemini's hook events (beside the user's own hooks, replacing
// only earlier Cotal ones). Everything else in the file is kept. Running it again changes nothing.
// A hand-started session has a person at it: their own policy decides (no Cotal posture, no floor).
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { applySetupFile, RUNTIME_ENV, setupAction, type Env, type RuntimeSetupReport } from "../runtime/index.js";
import { geminiLaunchError } from "./errors.js";
import { parseSettings, userGeminiDir } from "./home.js";
import { COTAL_HOOK_MARK, cotalHooks, GEMINI_HOOKS, GEMINI_RUNTIME_NAME, mcpEntry } from "./launch.js";
import { MCP_NAME } from "./posture.js";

type HookGroup = { hooks?: Array<{ command?: unknown }> };

const isCotal = (g: HookGroup): boolean => (g.hooks ?? []).some((h) => typeof h.command === "string" && h.command.includes(COTAL_HOOK_MARK));

/** The user's settings with Cotal's MCP server and hooks in place, the rest kept. */
function merged(text: string | undefined, file: string, connectorEntry: string): string {
  const parsed = parseSettings(text ?? "");
  if ("error" in parsed)
    throw geminiLaunchError(`${file} is not a plain JSON object (${parsed.error}; comments?); Cotal leaves it as it is.`, {
      remedy: `Add "mcpServers": {"${MCP_NAME}": …} and Cotal's hooks yourself (see \`cotal setup --runtime gemini --check\` on a copy without comments), or remove the comments.`,
    });
  const doc = parsed.doc;
  // The connector Gemini starts from it says it runs in Gemini (its card's runtime).
  const mcpServers = {
    ...(doc.mcpServers as Record<string, unknown> | undefined),
    [MCP_NAME]: mcpEntry(connectorEntry, { [RUNTIME_ENV]: GEMINI_RUNTIME_NAME }),
  };
  const hooks: Record<string, unknown> = { ...(doc.hooks as Record<string, unknown> | undefined) };
  for (const [event, ours] of Object.entries(cotalHooks(connectorEntry))) {
    const theirs = Array.isArray(hooks[event]) ? (hooks[event] as HookGroup[]).filter((g) => !isCotal(g)) : [];
    hooks[event] = [...theirs, ...ours];
  }
  return `${JSON.stringify({ ...doc, mcpServers, hooks }, null, 2)}\n`;
}

/** Install (or with `check`, only compare) Cotal's MCP server and hooks in the user's Gemini settings. */
export async function setupGemini(o: { env: Env; connectorEntry: string; executable?: string | undefined; check: boolean }): Promise<RuntimeSetupReport> {
  const dir = userGeminiDir(o.env);
  const file = path.join(dir, "settings.json");
  const now = existsSync(file) ? readFileSync(file, "utf8") : undefined;
  const want = merged(now, file, o.connectorEntry);
  const action = setupAction(now, want, o.check);
  applySetupFile(dir, file, want, action, o.check);
  const inPlace = !o.check || action === "ok";
  // Gemini runs hooks of the user's own settings as they are (only a project's hooks get a warning first).
  return { home: dir, files: [{ path: file, action }], ...(o.executable ? { trusted: inPlace ? GEMINI_HOOKS.length : 0 } : {}) };
}
