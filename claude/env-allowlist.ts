// The environment a Claude child gets: an allow-list, never the launcher's whole environment.
// Names come from the Claude Code environment-variable reference and the provider pages
// (Bedrock, Vertex AI, Microsoft Foundry); each is also a string the 2.1.332 binary reads.
import { ClaudeAuthMode, MODE_SWITCH, MODE_SWITCHES } from "./auth.js";
import { claudeLaunchError } from "./errors.js";

/** Process basics: where things are, who the user is, how the terminal and locale look. */
export const BASE_VARS = [
  "PATH",
  "HOME",
  "USER",
  "LOGNAME",
  "SHELL",
  "TMPDIR",
  "TZ",
  "LANG",
  "LANGUAGE",
  "TERM",
  "COLORTERM",
  "TERM_PROGRAM",
  "TERM_PROGRAM_VERSION",
  "NO_COLOR",
  "FORCE_COLOR",
  "EDITOR",
  "VISUAL",
  "XDG_CONFIG_HOME",
  "XDG_DATA_HOME",
  "XDG_STATE_HOME",
  "XDG_CACHE_HOME",
  "XDG_RUNTIME_DIR",
] as const;

/** Anthropic API and Claude login. `ANTHROPIC_API_KEY` is handled by the auth mode. */
export const ANTHROPIC_VARS = [
  "CLAUDE_CODE_OAUTH_TOKEN",
  "ANTHROPIC_AUTH_TOKEN",
  "ANTHROPIC_BASE_URL",
  "ANTHROPIC_CUSTOM_HEADERS",
  "ANTHROPIC_MODEL",
  "ANTHROPIC_DEFAULT_OPUS_MODEL",
  "ANTHROPIC_DEFAULT_SONNET_MODEL",
  "ANTHROPIC_DEFAULT_HAIKU_MODEL",
  "ANTHROPIC_SMALL_FAST_MODEL",
  // Where the Claude login (and settings) live when not under $HOME/.claude.
  "CLAUDE_CONFIG_DIR",
] as const;

/** Amazon Bedrock: the switch and the AWS SDK credential chain. */
export const BEDROCK_VARS = [
  "CLAUDE_CODE_USE_BEDROCK",
  "CLAUDE_CODE_SKIP_BEDROCK_AUTH",
  "ANTHROPIC_BEDROCK_BASE_URL",
  "ANTHROPIC_SMALL_FAST_MODEL_AWS_REGION",
  "AWS_REGION",
  "AWS_DEFAULT_REGION",
  "AWS_PROFILE",
  "AWS_ACCESS_KEY_ID",
  "AWS_SECRET_ACCESS_KEY",
  "AWS_SESSION_TOKEN",
  "AWS_BEARER_TOKEN_BEDROCK",
  "AWS_CONFIG_FILE",
  "AWS_SHARED_CREDENTIALS_FILE",
  "AWS_WEB_IDENTITY_TOKEN_FILE",
  "AWS_ROLE_ARN",
  "AWS_ROLE_SESSION_NAME",
  "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
  "AWS_CONTAINER_CREDENTIALS_FULL_URI",
  "AWS_CONTAINER_AUTHORIZATION_TOKEN",
  "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
  "AWS_CA_BUNDLE",
  "AWS_ENDPOINT_URL",
  "AWS_ENDPOINT_URL_BEDROCK",
  "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
] as const;

/** Google Vertex AI: the switch, project/region, and Google application-default credentials. */
export const VERTEX_VARS = [
  "CLAUDE_CODE_USE_VERTEX",
  "CLAUDE_CODE_SKIP_VERTEX_AUTH",
  "ANTHROPIC_VERTEX_PROJECT_ID",
  "ANTHROPIC_VERTEX_BASE_URL",
  "CLOUD_ML_REGION",
  "GOOGLE_APPLICATION_CREDENTIALS",
  "GOOGLE_CLOUD_PROJECT",
  "GOOGLE_CLOUD_QUOTA_PROJECT",
  "GCLOUD_PROJECT",
  "CLOUDSDK_CONFIG",
  "CLOUDSDK_CORE_PROJECT",
] as const;

/** Microsoft Foundry: the switch, the resource, and Azure identity credentials. */
export const FOUNDRY_VARS = [
  "CLAUDE_CODE_USE_FOUNDRY",
  "CLAUDE_CODE_SKIP_FOUNDRY_AUTH",
  "ANTHROPIC_FOUNDRY_RESOURCE",
  "ANTHROPIC_FOUNDRY_BASE_URL",
  "ANTHROPIC_FOUNDRY_API_KEY",
  "AZURE_TENANT_ID",
  "AZURE_CLIENT_ID",
  "AZURE_CLIENT_SECRET",
  "AZURE_CLIENT_CERTIFICATE_PATH",
  "AZURE_CLIENT_CERTIFICATE_PASSWORD",
  "AZURE_FEDERATED_TOKEN_FILE",
  "AZURE_AUTHORITY_HOST",
  "AZURE_CONFIG_DIR",
] as const;

/** Reaching the API from a corporate network: proxies, extra CAs, client certificates. */
export const NETWORK_VARS = [
  "HTTPS_PROXY",
  "HTTP_PROXY",
  "NO_PROXY",
  "ALL_PROXY",
  "https_proxy",
  "http_proxy",
  "no_proxy",
  "all_proxy",
  "NODE_EXTRA_CA_CERTS",
  "SSL_CERT_FILE",
  "SSL_CERT_DIR",
  "CLAUDE_CODE_CLIENT_CERT",
  "CLAUDE_CODE_CLIENT_KEY",
  "CLAUDE_CODE_CLIENT_KEY_PASSPHRASE",
] as const;

/** The user's choices about Claude Code's own traffic (updates, telemetry, surveys). */
export const CLAUDE_SWITCH_VARS = [
  "DISABLE_AUTOUPDATER",
  "DISABLE_UPDATES",
  "DISABLE_TELEMETRY",
  "DISABLE_ERROR_REPORTING",
  "DISABLE_BUG_COMMAND",
  "DISABLE_COST_WARNINGS",
  "DISABLE_GROWTHBOOK",
  "DISABLE_INSTALLATION_CHECKS",
  "DO_NOT_TRACK",
  "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
  "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL",
  "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY",
  // Claude's root check reads it; only `1` counts (see BypassAsRootError).
  "IS_SANDBOX",
] as const;

/** Name prefixes forwarded whole: locale categories and Vertex per-model regions. */
export const FORWARDED_PREFIXES = ["LC_", "VERTEX_REGION_CLAUDE_"] as const;

/** Markers of a host Claude Code session: a child must never look like a nested session. */
export const ALWAYS_DROPPED = ["CLAUDECODE", "CLAUDE_CODE_CHILD_SESSION"] as const;

/**
 * The connector's identity variables of the hand-started form. The builder always launches
 * with `COTAL_LAUNCH_MATERIAL`, and the connector refuses both forms at once, so these are never
 * forwarded; every other `COTAL_*` variable (log level, control dir, …) is.
 */
export const COTAL_IDENTITY_VARS = [
  "COTAL_SERVER",
  "COTAL_SPACE",
  "COTAL_NAME",
  "COTAL_ROLE",
  "COTAL_CHANNELS",
  "COTAL_CREDS",
  "COTAL_LAUNCH_MATERIAL",
] as const;

const EXACT = new Set<string>([...BASE_VARS, ...ANTHROPIC_VARS, ...BEDROCK_VARS, ...VERTEX_VARS, ...FOUNDRY_VARS, ...NETWORK_VARS, ...CLAUDE_SWITCH_VARS]);
const DROPPED = new Set<string>(ALWAYS_DROPPED);
const COTAL_IDENTITY = new Set<string>(COTAL_IDENTITY_VARS);

/** Whether a parent variable may reach the child (before the auth mode and Cotal's own settings apply). */
export function isAllowedEnvName(name: string): boolean {
  if (DROPPED.has(name) || name === "ANTHROPIC_API_KEY") return false;
  if (EXACT.has(name)) return true;
  if (FORWARDED_PREFIXES.some((p) => name.startsWith(p))) return true;
  return name.startsWith("COTAL_") && !COTAL_IDENTITY.has(name);
}

export interface ClaudeEnvInput {
  /** The launcher's environment; only allowed names are read from it. */
  parentEnv: Readonly<Record<string, string | undefined>>;
  /**
   * How Claude authenticates (claude/auth.ts; default `subscription`). Only this mode's switch or
   * secret reaches the child: `ANTHROPIC_API_KEY` is forwarded in `api-key` mode and set to ""
   * otherwise (so a stray key cannot win over the login), and every other mode's switch is dropped.
   */
  authMode?: ClaudeAuthMode;
  /** Variables Cotal sets for this launch (COTAL_LAUNCH_MATERIAL, IS_SANDBOX…); they win over the parent. */
  set?: Readonly<Record<string, string>>;
  /** Extra parent variables the user explicitly allowed (e.g. SSH_AUTH_SOCK); never the dropped markers or the API key. */
  passEnv?: readonly string[];
}

/** The child's environment: the allow-list applied to the parent, then the auth mode, then Cotal's own variables. */
export function buildClaudeEnv(input: ClaudeEnvInput): Record<string, string> {
  const authMode = ClaudeAuthMode.parse(input.authMode ?? "subscription");
  const extra = new Set<string>();
  for (const name of input.passEnv ?? []) {
    if (DROPPED.has(name) || name === "ANTHROPIC_API_KEY" || COTAL_IDENTITY.has(name) || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
      throw claudeLaunchError(`The environment variable ${JSON.stringify(name)} cannot be passed to Claude explicitly.`, {
        remedy:
          name === "ANTHROPIC_API_KEY"
            ? "Choose the auth mode api-key (--claude-auth api-key) to forward ANTHROPIC_API_KEY."
            : "CLAUDECODE and CLAUDE_CODE_CHILD_SESSION are always dropped, and Cotal's identity travels in the launch material.",
      });
    }
    extra.add(name);
  }
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(input.parentEnv)) {
    if (value === undefined) continue;
    if (isAllowedEnvName(name) || extra.has(name)) env[name] = value;
  }
  modeOnly(input.parentEnv, authMode, env);
  for (const [name, value] of Object.entries(input.set ?? {})) env[name] = value;
  for (const name of ALWAYS_DROPPED) delete env[name];
  return env;
}

/**
 * `env` with only `mode`'s switch or secret among the mode-selecting variables: the others are
 * removed, and `ANTHROPIC_API_KEY` is the parent's in `api-key` mode, "" in every other.
 */
function modeOnly(parentEnv: Readonly<Record<string, string | undefined>>, mode: ClaudeAuthMode, env: Record<string, string>): Record<string, string> {
  const own = mode === "subscription" ? undefined : MODE_SWITCH[mode];
  for (const name of MODE_SWITCHES) if (name !== own) delete env[name];
  if (mode !== "api-key") env.ANTHROPIC_API_KEY = "";
  else if (parentEnv.ANTHROPIC_API_KEY !== undefined) env.ANTHROPIC_API_KEY = parentEnv.ANTHROPIC_API_KEY;
  else delete env.ANTHROPIC_API_KEY;
  return env;
}

/**
 * The Claude part of a shell's environment, for a process that starts Claude later (the manager
 * `cotal up` starts): everything the allow-list passes beyond the process basics and Cotal's own
 * variables (the provider, network and Claude settings), with only `mode`'s switch or secret.
 */
export function claudeShellEnv(parentEnv: Readonly<Record<string, string | undefined>>, mode: ClaudeAuthMode): Record<string, string> {
  const basics = new Set<string>(BASE_VARS);
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(parentEnv)) {
    if (value === undefined || basics.has(name) || name.startsWith("COTAL_") || name.startsWith("LC_")) continue;
    if (isAllowedEnvName(name)) env[name] = value;
  }
  modeOnly(parentEnv, mode, env);
  // A process that is not Claude itself needs no "" marker: the launch builder sets it per child.
  if (env.ANTHROPIC_API_KEY === "") delete env.ANTHROPIC_API_KEY;
  return env;
}
