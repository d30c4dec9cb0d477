/**
 * The runtime registry (docs/runtimes.md, "Adding a runtime"): every agent CLI Cotal can seat, one
 * line each, and the only component that imports the adapter folders. The manager starts seats and
 * runs from it, the connector reads its CLI's facet from it, the CLI lists it in help, doctor and
 * setup, and the contract test and the docs' tests run over it.
 */
import { claudeRuntime } from "../claude/index.js";
import { codexRuntime } from "../codex/index.js";
import { copilotRuntime } from "../copilot/index.js";
import { geminiRuntime } from "../gemini/index.js";
import { kiloRuntime } from "../kilo/index.js";
import { opencodeRuntime } from "../opencode/index.js";
import { piRuntime } from "../pi/index.js";
import type { RuntimeAdapter } from "../runtime/index.js";

export { AgentFileError, loadAgentFile, parseAgentFile, personaDigests, type AgentFile } from "./agent-file.js";

export const RUNTIMES: readonly RuntimeAdapter[] = [claudeRuntime, codexRuntime, opencodeRuntime, geminiRuntime, piRuntime, copilotRuntime, kiloRuntime];

/** The adapter named `name` (an agent file's `runtime:`, a spawn's `--agent`), or undefined. */
export function runtimeNamed(name: string): RuntimeAdapter | undefined {
  return RUNTIMES.find((r) => r.name === name);
}

/**
 * The runtime whose sessions transcript carry stages and whose seats fork them: the first that can
 * resume a carried session and has a session store.
 */
export function carryRuntime(): RuntimeAdapter & { sessions: NonNullable<RuntimeAdapter["sessions"]> } {
  const r = RUNTIMES.find((a) => a.capabilities.carry && a.sessions);
  if (!r?.sessions) throw new Error("no runtime of the registry can resume a carried session");
  return r as RuntimeAdapter & { sessions: NonNullable<RuntimeAdapter["sessions"]> };
}

/** The runtime whose users install Cotal as a plugin of its CLI (the plugin the connector ships, `cotal setup`). */
export function pluginRuntime(): RuntimeAdapter & { plugin: NonNullable<RuntimeAdapter["plugin"]> } {
  const r = RUNTIMES.find((a) => a.plugin);
  if (!r?.plugin) throw new Error("no runtime of the registry has a plugin");
  return r as RuntimeAdapter & { plugin: NonNullable<RuntimeAdapter["plugin"]> };
}

/** The runtime a persona runs on when its agent file names none, and a spawn whose agent is not named. */
export const DEFAULT_RUNTIME: RuntimeAdapter = RUNTIMES[0]!;
