// Raw launch options (`--opt key=value`, an agent file's `launchOptions`): which Claude flags
// pass through, and which are refused because they would override Cotal's wiring or deny floor.
import { LaunchOptionError } from "./errors.js";

/** Claude's permission modes (2.1.332 accepts these for `--permission-mode`). */
export const PERMISSION_MODES = ["default", "acceptEdits", "auto", "bypassPermissions", "manual", "dontAsk", "plan"] as const;
export type PermissionMode = (typeof PERMISSION_MODES)[number];

type OptionKind = { kind: "flag" } | { kind: "string" } | { kind: "number"; min?: number; integer?: boolean } | { kind: "enum"; values: readonly string[] };

/** Claude flags a launch may set, by flag name (kebab-case, no dashes). */
export const PASS_THROUGH_OPTIONS: Readonly<Record<string, OptionKind>> = Object.freeze({
  model: { kind: "string" },
  "fallback-model": { kind: "string" },
  agent: { kind: "string" },
  effort: { kind: "enum", values: ["low", "medium", "high", "xhigh", "max"] },
  "permission-mode": { kind: "enum", values: PERMISSION_MODES },
  "dangerously-skip-permissions": { kind: "flag" },
  "allow-dangerously-skip-permissions": { kind: "flag" },
  "permission-prompts": { kind: "enum", values: ["host", "none"] },
  "max-turns": { kind: "number", min: 1, integer: true },
  "max-budget-usd": { kind: "number", min: 0 },
  "add-dir": { kind: "string" },
  tools: { kind: "string" },
  verbose: { kind: "flag" },
  name: { kind: "string" },
  betas: { kind: "string" },
  "setting-sources": { kind: "string" },
  "disable-slash-commands": { kind: "flag" },
  "exclude-dynamic-system-prompt-sections": { kind: "flag" },
  "no-session-persistence": { kind: "flag" },
  resume: { kind: "string" },
  "fork-session": { kind: "flag" },
  "session-id": { kind: "string" },
  autocompact: { kind: "string" },
});

/**
 * Flags a launch may never set: Cotal sets them itself (MCP wiring, allow and deny rules, the
 * persona, the output contract of `run`), or they would switch that wiring off (`--bare` and
 * `--safe-mode` skip hooks and MCP servers; `--settings` and plugins can load hooks and modes).
 */
export const RESERVED_OPTIONS: Readonly<Record<string, string>> = Object.freeze({
  "mcp-config": "Cotal wires its own MCP server",
  "strict-mcp-config": "isolation is a launch setting, not a raw option",
  "allowed-tools": "Cotal sets the allow rules (mcp__cotal__*); add others in a Claude settings file",
  "disallowed-tools": "the deny floor is fixed; add deny rules in a Claude settings file",
  settings: "a settings file could change hooks and permission defaults under Cotal",
  "plugin-dir": "plugins are installed by `cotal setup`",
  "plugin-url": "plugins are installed by `cotal setup`",
  "system-prompt": "the persona comes from the agent file",
  "system-prompt-file": "the persona comes from the agent file",
  "append-system-prompt": "the persona comes from the agent file (and must not sit in argv)",
  "append-system-prompt-file": "the persona comes from the agent file",
  "dangerously-load-development-channels": "Cotal decides the channel wiring",
  print: "the profile decides print mode",
  p: "the profile decides print mode",
  "output-format": "the profile decides the output format",
  "input-format": "the profile decides the input format",
  "json-schema": "a run's JSON schema is a run setting (`--json-schema FILE`)",
  bare: "--bare skips hooks, so the connector would never hear from Claude",
  "safe-mode": "--safe-mode disables MCP servers and hooks",
  debug: "debug logs may record the persona",
  "debug-file": "debug logs may record the persona",
});

/** A launch option key as Claude spells the flag: no leading dashes, camelCase → kebab-case. */
export function normaliseOptionKey(key: string): string {
  return key
    .trim()
    .replace(/^-+/, "")
    .replace(/([a-z0-9])([A-Z])/g, "$1-$2")
    .toLowerCase();
}

export type LaunchOptionValue = string | boolean | number;

/** A validated option: the flag name and the argv it becomes (empty when a flag is `false`). */
export interface ValidatedOption {
  flag: string;
  value: LaunchOptionValue;
  argv: string[];
}

const ALLOWED_LIST = (): string => Object.keys(PASS_THROUGH_OPTIONS).sort().join(", ");

/** Validate every option (all refusals are typed {@link LaunchOptionError}s); returns them by flag name, in the given order. */
export function validateLaunchOptions(options: Readonly<Record<string, LaunchOptionValue>>): Map<string, ValidatedOption> {
  const out = new Map<string, ValidatedOption>();
  for (const [rawKey, value] of Object.entries(options)) {
    const flag = normaliseOptionKey(rawKey);
    const reserved = Object.hasOwn(RESERVED_OPTIONS, flag)
      ? RESERVED_OPTIONS[flag]
      : flag.startsWith("dangerously-load-")
        ? "Cotal decides the channel wiring"
        : undefined;
    if (reserved !== undefined) {
      throw new LaunchOptionError(
        rawKey,
        "reserved",
        `Launch option ${JSON.stringify(rawKey)} is refused: it would override what Cotal sets itself (${reserved}).`,
        "Drop the option: Cotal always sets the MCP wiring, the mcp__cotal__* allow rule, the deny floor and the persona itself.",
      );
    }
    const kind = Object.hasOwn(PASS_THROUGH_OPTIONS, flag) ? PASS_THROUGH_OPTIONS[flag] : undefined;
    if (!kind) {
      throw new LaunchOptionError(
        rawKey,
        "unknown",
        `Unknown launch option ${JSON.stringify(rawKey)}: it is not a Claude flag Cotal passes through.`,
        `Use one of: ${ALLOWED_LIST()}.`,
      );
    }
    if (out.has(flag)) {
      throw new LaunchOptionError(rawKey, "conflict", `Launch option ${JSON.stringify(rawKey)} is given twice (as ${flag}).`, "Give each option once.");
    }
    out.set(flag, { flag, value, argv: toArgv(rawKey, flag, kind, value) });
  }
  return out;
}

function badValue(rawKey: string, value: LaunchOptionValue, expected: string): LaunchOptionError {
  return new LaunchOptionError(
    rawKey,
    "bad-value",
    `Launch option ${JSON.stringify(rawKey)} has value ${JSON.stringify(value)}, but it takes ${expected}.`,
    `Give ${rawKey} ${expected}.`,
  );
}

function toArgv(rawKey: string, flag: string, kind: OptionKind, value: LaunchOptionValue): string[] {
  switch (kind.kind) {
    case "flag": {
      const on = value === true || value === "true" ? true : value === false || value === "false" ? false : undefined;
      if (on === undefined) throw badValue(rawKey, value, "true or false");
      return on ? [`--${flag}`] : [];
    }
    case "number": {
      const n = typeof value === "number" ? value : typeof value === "string" && value.trim() !== "" ? Number(value) : NaN;
      if (!Number.isFinite(n) || (kind.integer && !Number.isInteger(n)) || (kind.min !== undefined && n < kind.min)) {
        throw badValue(rawKey, value, `a${kind.integer ? "n integer" : " number"}${kind.min !== undefined ? ` of at least ${kind.min}` : ""}`);
      }
      return [`--${flag}=${n}`];
    }
    case "enum": {
      if (typeof value !== "string" || !kind.values.includes(value)) throw badValue(rawKey, value, `one of ${kind.values.join(", ")}`);
      return [`--${flag}=${value}`];
    }
    case "string": {
      // `--flag=value` keeps a value that starts with `-` from being read as another flag.
      if (typeof value !== "string" || value.trim() === "" || /[\0\r\n]/.test(value)) throw badValue(rawKey, value, "a non-empty single-line string");
      return [`--${flag}=${value}`];
    }
  }
}
