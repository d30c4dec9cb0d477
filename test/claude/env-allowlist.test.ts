// The Claude child's environment is an allow-list: junk and host-session markers never pass,
// and the auth mode decides ANTHROPIC_API_KEY.
import { describe, expect, it } from "vitest";
import { buildClaudeEnv, buildClaudeLaunch, isAllowedEnvName, claudeShellEnv } from "../../claude/index.js";
import { RuntimeLaunchError } from "../../runtime/index.js";

/** A launcher shell as it may look: the basics, credentials, and a lot that Claude must not see. */
const PARENT = {
  // allowed basics
  PATH: "/usr/bin:/bin",
  HOME: "/home/ada",
  USER: "ada",
  SHELL: "/bin/zsh",
  LANG: "en_GB.UTF-8",
  LC_ALL: "en_GB.UTF-8",
  LC_TIME: "C",
  TERM: "xterm-256color",
  COLORTERM: "truecolor",
  TMPDIR: "/tmp/ada",
  XDG_RUNTIME_DIR: "/run/user/1000",
  // Claude credentials and provider switches
  CLAUDE_CODE_OAUTH_TOKEN: "oauth-token",
  ANTHROPIC_AUTH_TOKEN: "gateway-token",
  ANTHROPIC_BASE_URL: "https://gateway.example",
  CLAUDE_CODE_USE_BEDROCK: "1",
  AWS_REGION: "eu-west-1",
  AWS_ACCESS_KEY_ID: "AKIA",
  AWS_SECRET_ACCESS_KEY: "aws-secret",
  AWS_SESSION_TOKEN: "aws-session",
  CLAUDE_CODE_USE_VERTEX: "1",
  CLOUD_ML_REGION: "us-east5",
  ANTHROPIC_VERTEX_PROJECT_ID: "proj",
  GOOGLE_APPLICATION_CREDENTIALS: "/home/ada/gcp.json",
  VERTEX_REGION_CLAUDE_4_5_SONNET: "europe-west1",
  CLAUDE_CODE_USE_FOUNDRY: "1",
  ANTHROPIC_FOUNDRY_RESOURCE: "res",
  ANTHROPIC_FOUNDRY_API_KEY: "foundry-key",
  HTTPS_PROXY: "http://proxy:3128",
  NODE_EXTRA_CA_CERTS: "/etc/ca.pem",
  DISABLE_TELEMETRY: "1",
  // Cotal's own: knobs pass, hand-started identity does not (the launch material replaces it)
  COTAL_LOG_LEVEL: "debug",
  COTAL_SERVER: "nats://stale:4222",
  COTAL_NAME: "stale",
  COTAL_LAUNCH_MATERIAL: "/stale/material.json",
  // the stray key
  ANTHROPIC_API_KEY: "sk-ant-stray",
  // host Claude session markers
  CLAUDECODE: "1",
  CLAUDE_CODE_CHILD_SESSION: "1",
  CLAUDE_CODE_ENTRYPOINT: "cli",
  CLAUDE_CODE_SSE_PORT: "1234",
  // junk
  GITHUB_TOKEN: "ghp_secret",
  OPENAI_API_KEY: "sk-openai",
  SSH_AUTH_SOCK: "/tmp/ssh.sock",
  NPM_TOKEN: "npm",
  DATABASE_URL: "postgres://",
  LD_PRELOAD: "/evil.so",
  NODE_OPTIONS: "--require /evil.js",
  EMPTY: undefined,
};

const ALLOWED = {
  PATH: "/usr/bin:/bin",
  HOME: "/home/ada",
  USER: "ada",
  SHELL: "/bin/zsh",
  LANG: "en_GB.UTF-8",
  LC_ALL: "en_GB.UTF-8",
  LC_TIME: "C",
  TERM: "xterm-256color",
  COLORTERM: "truecolor",
  TMPDIR: "/tmp/ada",
  XDG_RUNTIME_DIR: "/run/user/1000",
  CLAUDE_CODE_OAUTH_TOKEN: "oauth-token",
  ANTHROPIC_AUTH_TOKEN: "gateway-token",
  ANTHROPIC_BASE_URL: "https://gateway.example",
  CLAUDE_CODE_USE_BEDROCK: "1",
  AWS_REGION: "eu-west-1",
  AWS_ACCESS_KEY_ID: "AKIA",
  AWS_SECRET_ACCESS_KEY: "aws-secret",
  AWS_SESSION_TOKEN: "aws-session",
  CLAUDE_CODE_USE_VERTEX: "1",
  CLOUD_ML_REGION: "us-east5",
  ANTHROPIC_VERTEX_PROJECT_ID: "proj",
  GOOGLE_APPLICATION_CREDENTIALS: "/home/ada/gcp.json",
  VERTEX_REGION_CLAUDE_4_5_SONNET: "europe-west1",
  CLAUDE_CODE_USE_FOUNDRY: "1",
  ANTHROPIC_FOUNDRY_RESOURCE: "res",
  ANTHROPIC_FOUNDRY_API_KEY: "foundry-key",
  HTTPS_PROXY: "http://proxy:3128",
  NODE_EXTRA_CA_CERTS: "/etc/ca.pem",
  DISABLE_TELEMETRY: "1",
  COTAL_LOG_LEVEL: "debug",
};

/** The variables that select an auth mode or carry its secret: a child gets its own mode's only. */
const SWITCHES = ["CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY"];
const without = (o: Record<string, string>, names: readonly string[]) => Object.fromEntries(Object.entries(o).filter(([k]) => !names.includes(k)));
/** What passes in every mode: the allow-list without any mode's switch. */
const COMMON = without(ALLOWED, SWITCHES);

describe("Claude environment allow-list", () => {
  it("a parent with junk, host markers and a stray API key yields exactly the allowed set, key cleared (subscription)", () => {
    expect(buildClaudeEnv({ parentEnv: PARENT })).toEqual({ ...COMMON, ANTHROPIC_API_KEY: "" });
    expect(buildClaudeEnv({ parentEnv: PARENT, authMode: "subscription" })).toEqual({ ...COMMON, ANTHROPIC_API_KEY: "" });
  });

  it("api-key mode forwards the key; every other mode gets its own switch or secret only, and an empty key", () => {
    expect(buildClaudeEnv({ parentEnv: PARENT, authMode: "api-key" })).toEqual({ ...COMMON, ANTHROPIC_API_KEY: "sk-ant-stray" });
    const own = {
      "auth-token": "ANTHROPIC_AUTH_TOKEN",
      "oauth-token": "CLAUDE_CODE_OAUTH_TOKEN",
      bedrock: "CLAUDE_CODE_USE_BEDROCK",
      vertex: "CLAUDE_CODE_USE_VERTEX",
      foundry: "CLAUDE_CODE_USE_FOUNDRY",
    } as const;
    for (const [mode, name] of Object.entries(own)) {
      expect(buildClaudeEnv({ parentEnv: PARENT, authMode: mode as keyof typeof own }), mode).toEqual({
        ...COMMON,
        [name]: (PARENT as Record<string, string | undefined>)[name],
        ANTHROPIC_API_KEY: "",
      });
    }
  });

  it("the manager's Claude environment (cotal up): the Claude part of the shell, only the chosen mode's secret, no basics and no Cotal identity", () => {
    const env = claudeShellEnv(PARENT, "api-key");
    expect(env.ANTHROPIC_API_KEY).toBe("sk-ant-stray");
    expect(env.ANTHROPIC_BASE_URL).toBe("https://gateway.example");
    expect(env.HTTPS_PROXY).toBe("http://proxy:3128");
    for (const name of [...SWITCHES, "PATH", "HOME", "LC_ALL", "COTAL_LOG_LEVEL", "COTAL_SERVER", "GITHUB_TOKEN", "CLAUDECODE"])
      expect(env[name], name).toBeUndefined();
    const sub = claudeShellEnv(PARENT, "subscription");
    expect(sub.ANTHROPIC_API_KEY).toBeUndefined();
    expect(claudeShellEnv(PARENT, "bedrock")).toMatchObject({ CLAUDE_CODE_USE_BEDROCK: "1", AWS_REGION: "eu-west-1", AWS_SECRET_ACCESS_KEY: "aws-secret" });
  });

  it("subscription mode sets the key empty even when the parent has none", () => {
    expect(buildClaudeEnv({ parentEnv: { PATH: "/bin" } })).toEqual({ PATH: "/bin", ANTHROPIC_API_KEY: "" });
    expect(buildClaudeEnv({ parentEnv: { PATH: "/bin" }, authMode: "api-key" })).toEqual({ PATH: "/bin" });
  });

  it("the builder's env is the allow-list plus the launch material, whatever the profile", () => {
    for (const profile of ["seat", "foreground"] as const) {
      const { env } = buildClaudeLaunch({
        profile,
        cwd: "/w",
        identity: { name: "alice", space: "team", launchMaterialPath: "/run/cotal/alice.json" },
        connectorEntry: "/opt/cotal/dist/connector.mjs",
        parentEnv: PARENT,
        isRoot: false,
        runtimeDir: "/run/user/1000",
      });
      expect(env).toEqual({ ...COMMON, ANTHROPIC_API_KEY: "", COTAL_LAUNCH_MATERIAL: "/run/cotal/alice.json" });
    }
  });

  it("CLAUDECODE and CLAUDE_CODE_CHILD_SESSION are dropped even when Cotal is asked to pass or set them", () => {
    expect(() => buildClaudeEnv({ parentEnv: PARENT, passEnv: ["CLAUDECODE"] })).toThrow(RuntimeLaunchError);
    expect(() => buildClaudeEnv({ parentEnv: PARENT, passEnv: ["ANTHROPIC_API_KEY"] })).toThrow(RuntimeLaunchError);
    const env = buildClaudeEnv({ parentEnv: PARENT, set: { CLAUDECODE: "1", CLAUDE_CODE_CHILD_SESSION: "1" } });
    expect(env.CLAUDECODE).toBeUndefined();
    expect(env.CLAUDE_CODE_CHILD_SESSION).toBeUndefined();
  });

  it("passes an extra variable only when the user names it", () => {
    const env = buildClaudeEnv({ parentEnv: PARENT, passEnv: ["SSH_AUTH_SOCK"] });
    expect(env.SSH_AUTH_SOCK).toBe("/tmp/ssh.sock");
    expect(env.GITHUB_TOKEN).toBeUndefined();
  });

  it.each(["LD_PRELOAD", "NODE_OPTIONS", "CLAUDE_CODE_ENTRYPOINT", "COTAL_SERVER", "COTAL_LAUNCH_MATERIAL", "ANTHROPIC_API_KEY", "CLAUDECODE", "GITHUB_TOKEN"])(
    "%s is not on the allow-list",
    (name) => {
      expect(isAllowedEnvName(name)).toBe(false);
    },
  );
});
