// `cotal setup --runtime copilot` (docs/runtimes.md): make a hand-started `copilot` a Cotal seat
// by writing into the user's own Copilot home (`$COPILOT_HOME`, default ~/.copilot) what a managed
// seat's private home has: the connector as MCP server `cotal` in mcp-config.json (the rest of the
// file kept) and Cotal's hooks in hooks/cotal.json (a file of Cotal's own). Running it again
// changes nothing. A hand-started session has a person at it: Copilot's own asks stay theirs.
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { applySetupFile, jsonObjectOf, RUNTIME_ENV, setupAction, type Env, type RuntimeSetupReport } from "../runtime/index.js";
import { copilotLaunchError } from "./errors.js";
import { userCopilotDir } from "./home.js";
import { COPILOT_HOOKS, hooksFile, HOOKS_FILE, mcpEntry } from "./launch.js";
import { MCP_NAME } from "./posture.js";

/** The user's mcp-config.json with Cotal's server in place, the rest kept. */
function mergedMcp(text: string | undefined, file: string, connectorEntry: string): string {
  const read = jsonObjectOf(text);
  if ("error" in read)
    throw copilotLaunchError(`${file} is not a plain JSON object (${read.error}); Cotal leaves it as it is.`, {
      remedy: `Fix it, or add "mcpServers": {"${MCP_NAME}": …} yourself (see \`cotal setup --runtime copilot --check --json\`).`,
    });
  const doc = read.doc;
  const servers = { ...(doc.mcpServers as Record<string, unknown> | undefined), [MCP_NAME]: mcpEntry(connectorEntry, { [RUNTIME_ENV]: "copilot" }) };
  return `${JSON.stringify({ ...doc, mcpServers: servers }, null, 2)}\n`;
}

/** Install (or with `check`, only compare) Cotal's MCP server and hooks in the user's Copilot home. */
export async function setupCopilot(o: { env: Env; connectorEntry: string; executable?: string | undefined; check: boolean }): Promise<RuntimeSetupReport> {
  const dir = userCopilotDir(o.env);
  const mcpFile = path.join(dir, "mcp-config.json");
  const hooksDir = path.join(dir, "hooks");
  const hookFile = path.join(hooksDir, HOOKS_FILE);
  const read = (f: string): string | undefined => (existsSync(f) ? readFileSync(f, "utf8") : undefined);
  const mcpNow = read(mcpFile);
  const mcpWant = mergedMcp(mcpNow, mcpFile, o.connectorEntry);
  const mcpAction = setupAction(mcpNow, mcpWant, o.check);
  const hooksNow = read(hookFile);
  const hooksWant = hooksFile(o.connectorEntry, true);
  const hooksAction = setupAction(hooksNow, hooksWant, o.check);
  applySetupFile(dir, mcpFile, mcpWant, mcpAction, o.check);
  applySetupFile(hooksDir, hookFile, hooksWant, hooksAction, o.check);
  const inPlace = !o.check || hooksAction === "ok";
  // Hooks in the user's Copilot home are the user's own: Copilot runs them without a trust step.
  return {
    home: dir,
    files: [
      { path: mcpFile, action: mcpAction },
      { path: hookFile, action: hooksAction },
    ],
    ...(o.executable ? { trusted: inPlace ? COPILOT_HOOKS.length : 0 } : {}),
  };
}
