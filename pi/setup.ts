// `cotal setup --runtime pi` (docs/runtimes.md): make a hand-started `pi` a Cotal seat by naming
// Cotal's extension in the `extensions` list of the user's own settings.json (in
// `$PI_CODING_AGENT_DIR`, default ~/.pi/agent), replacing only an earlier Cotal entry. Everything
// else in the file is kept. Running it again changes nothing. The extension starts the connector
// (its tools become pi's) and relays pi's events to it; it says it runs in pi (the card's runtime).
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { applySetupFile, jsonObjectOf, setupAction, type Env, type RuntimeSetupReport } from "../runtime/index.js";
import { piLaunchError } from "./errors.js";
import { EXTENSION_HOOKS } from "./extension-env.js";
import { userPiDir } from "./home.js";
import { extensionEntryOf, isCotalExtension } from "./launch.js";

/** The user's settings with Cotal's extension in place, the rest kept. */
function merged(text: string | undefined, file: string, connectorEntry: string): string {
  const read = jsonObjectOf(text);
  if ("error" in read)
    throw piLaunchError(`${file} is not a plain JSON object (${read.error}); Cotal leaves it as it is.`, {
      remedy: `Fix it, or add ${JSON.stringify(extensionEntryOf(connectorEntry))} to its "extensions" list yourself.`,
    });
  const doc = read.doc;
  const extensions = Array.isArray(doc.extensions) ? (doc.extensions as unknown[]).filter((e) => !isCotalExtension(e)) : [];
  return `${JSON.stringify({ ...doc, extensions: [...extensions, extensionEntryOf(connectorEntry)] }, null, 2)}\n`;
}

/** Install (or with `check`, only compare) Cotal's extension in the user's pi settings. */
export async function setupPi(o: { env: Env; connectorEntry: string; executable?: string | undefined; check: boolean }): Promise<RuntimeSetupReport> {
  const dir = userPiDir(o.env);
  const file = path.join(dir, "settings.json");
  const now = existsSync(file) ? readFileSync(file, "utf8") : undefined;
  const want = merged(now, file, o.connectorEntry);
  const action = setupAction(now, want, o.check);
  applySetupFile(dir, file, want, action, o.check);
  const inPlace = !o.check || action === "ok";
  // pi has no extension trust: an extension in the settings runs as installed. Each relayed hook counts once it is in place.
  return { home: dir, files: [{ path: file, action }], ...(o.executable ? { trusted: inPlace ? EXTENSION_HOOKS.length : 0 } : {}) };
}
