// The Claude child's environment is an allow-list: junk and host-session markers never pass,
// and the auth mode decides ANTHROPIC_API_KEY.
import { describe, expect, it } from "vitest";
import { buildClaudeEnv, buildClaudeLaunch, ClaudeLaunchError, isAllowedEnvName } from "../../connector/claude/index.js";

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

describe("Claude environment allow-list", () => {
  it("a parent with junk, host markers and a stray API key yields exactly the allowed set, key cleared (subscription)", () => {
    expect(buildClaudeEnv({ parentEnv: PARENT })).toEqual({ ...ALLOWED, ANTHROPIC_API_KEY: "" });
    expect(buildClaudeEnv({ parentEnv: PARENT, authMode: "subscription" })).toEqual({ ...ALLOWED, ANTHROPIC_API_KEY: "" });
  });

  it("api_key mode forwards the key", () => {
    expect(buildClaudeEnv({ parentEnv: PARENT, authMode: "api_key" })).toEqual({ ...ALLOWED, ANTHROPIC_API_KEY: "sk-ant-stray" });
  });

  it("subscription mode sets the key empty even when the parent has none", () => {
    expect(buildClaudeEnv({ parentEnv: { PATH: "/bin" } })).toEqual({ PATH: "/bin", ANTHROPIC_API_KEY: "" });
    expect(buildClaudeEnv({ parentEnv: { PATH: "/bin" }, authMode: "api_key" })).toEqual({ PATH: "/bin" });
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
      expect(env).toEqual({ ...ALLOWED, ANTHROPIC_API_KEY: "", COTAL_LAUNCH_MATERIAL: "/run/cotal/alice.json" });
    }
  });

  it("CLAUDECODE and CLAUDE_CODE_CHILD_SESSION are dropped even when Cotal is asked to pass or set them", () => {
    expect(() => buildClaudeEnv({ parentEnv: PARENT, passEnv: ["CLAUDECODE"] })).toThrow(ClaudeLaunchError);
    expect(() => buildClaudeEnv({ parentEnv: PARENT, passEnv: ["ANTHROPIC_API_KEY"] })).toThrow(/api_key/);
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
