// The allow rule for the plugin's own tools in the user's Claude settings, for `cotal setup
// --allow-tools`. Without it Claude 2.1.332 asks before every cotal_* call (auto mode cannot run
// its action check behind a custom base URL and falls back to asking, "No" preselected). The
// rule names the whole plugin server, so it covers every cotal tool and nothing else.
import { chmodSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { AllowRulePlan } from "../runtime/index.js";
import { CotalError } from "../schemas/index.js";
import { PLUGIN_ALLOW_RULE } from "./launch-builder.js";

/** Rules that already allow every plugin tool (the server rule, or its wildcard form). */
const COVERING_RULES = [PLUGIN_ALLOW_RULE, `${PLUGIN_ALLOW_RULE}__*`];

/** The user's Claude settings file: `$CLAUDE_CONFIG_DIR/settings.json`, else `~/.claude/settings.json`. */
export function claudeUserSettingsPath(env: NodeJS.ProcessEnv = process.env): string {
  const dir = env.CLAUDE_CONFIG_DIR ? path.resolve(env.CLAUDE_CONFIG_DIR) : path.join(env.HOME || os.homedir(), ".claude");
  return path.join(dir, "settings.json");
}

/** The settings file cannot be read as a JSON object: setup will not rewrite it. */
export class ClaudeSettingsError extends CotalError {
  constructor(file: string, why: string, cause?: unknown) {
    super("claude-settings", `Cannot add the Cotal allow rule to ${file}: ${why}.`, {
      remedy: `Fix the file by hand, or add "${PLUGIN_ALLOW_RULE}" to "permissions"."allow" in it yourself.`,
      ...(cause !== undefined ? { cause } : {}),
    });
  }
}

export type { AllowRulePlan };

/** Read the settings file and say whether the rule is there, and what the file would become. */
export function planAllowRule(file: string): AllowRulePlan {
  let text: string | undefined;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT")
      throw new ClaudeSettingsError(file, `it cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`, err);
  }
  let settings: Record<string, unknown> = {};
  if (text !== undefined && text.trim() !== "") {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      throw new ClaudeSettingsError(file, "it is not valid JSON", err);
    }
    if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw new ClaudeSettingsError(file, "it is not a JSON object");
    settings = parsed as Record<string, unknown>;
  }
  const permissions = settings.permissions ?? {};
  if (typeof permissions !== "object" || permissions === null || Array.isArray(permissions))
    throw new ClaudeSettingsError(file, `"permissions" is not an object`);
  const allowRaw = (permissions as Record<string, unknown>).allow ?? [];
  if (!Array.isArray(allowRaw) || allowRaw.some((r) => typeof r !== "string"))
    throw new ClaudeSettingsError(file, `"permissions"."allow" is not a list of rules`);
  const allow = allowRaw as string[];
  const exists = text !== undefined;
  if (allow.some((r) => COVERING_RULES.includes(r))) return { file, rule: PLUGIN_ALLOW_RULE, state: "present", exists, allow };
  const nextAllow = [...allow, PLUGIN_ALLOW_RULE];
  const next = { ...settings, permissions: { ...(permissions as Record<string, unknown>), allow: nextAllow } };
  return { file, rule: PLUGIN_ALLOW_RULE, state: "add", exists, content: JSON.stringify(next, null, 2) + "\n", allow: nextAllow };
}

/** Write a planned change: every other setting kept, through a temporary file and a rename, the file's mode kept. */
export function applyAllowRule(plan: AllowRulePlan): void {
  if (plan.state !== "add" || plan.content === undefined) return;
  let mode = 0o600;
  try {
    mode = statSync(plan.file).mode & 0o777;
  } catch {
    // a new file: private to the user
  }
  mkdirSync(path.dirname(plan.file), { recursive: true, mode: 0o700 });
  const tmp = `${plan.file}.cotal-${process.pid}.tmp`;
  writeFileSync(tmp, plan.content, { mode });
  chmodSync(tmp, mode);
  renameSync(tmp, plan.file);
}
