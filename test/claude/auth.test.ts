// Claude auth (docs/claude-binding.md, Auth): which mode an environment selects, in Claude Code's
// own order, and the pre-flight a spawn or run passes first (the mode's credentials are present).
// Status carries names only, never a value.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { describeClaudeAuth, detectClaudeAuth } from "../../claude/index.js";

const home = mkdtempSync(join(tmpdir(), "cotal-auth-"));
afterAll(() => rmSync(home, { recursive: true, force: true }));

describe("Claude auth", () => {
  it("auto picks what claude would: a provider switch, then auth token, API key, OAuth token, else the login", () => {
    const all = { CLAUDE_CODE_USE_VERTEX: "true", ANTHROPIC_AUTH_TOKEN: "t", ANTHROPIC_API_KEY: "k", CLAUDE_CODE_OAUTH_TOKEN: "o" };
    expect(detectClaudeAuth(all)).toBe("vertex");
    expect(detectClaudeAuth({ ...all, CLAUDE_CODE_USE_VERTEX: "0" })).toBe("auth-token");
    expect(detectClaudeAuth({ ANTHROPIC_API_KEY: "k", CLAUDE_CODE_OAUTH_TOKEN: "o" })).toBe("api-key");
    expect(detectClaudeAuth({ CLAUDE_CODE_OAUTH_TOKEN: "o", ANTHROPIC_API_KEY: "" })).toBe("oauth-token");
    expect(detectClaudeAuth({ CLAUDE_CODE_USE_BEDROCK: "1" })).toBe("bedrock");
    expect(detectClaudeAuth({ HOME: home })).toBe("subscription");
  });

  it("status names the variables and the endpoint's origin, never a value", () => {
    const a = describeClaudeAuth("auto", { ANTHROPIC_API_KEY: "sk-secret", ANTHROPIC_BASE_URL: "https://user:pw@gw.example:8443/v1" });
    expect(a).toEqual({ mode: "api-key", chosen: "auto", vars: ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"], baseUrl: "https://gw.example:8443", ready: true });
    expect(JSON.stringify(a)).not.toMatch(/sk-secret|pw/);
  });

  it("a mode chosen explicitly without its credentials is not ready, naming what is missing and the fix", () => {
    const a = describeClaudeAuth("api-key", { HOME: home });
    expect(a).toMatchObject({ mode: "api-key", chosen: "explicit", ready: false });
    expect(a.problem).toMatch(/needs ANTHROPIC_API_KEY in the manager's environment/);
    expect(a.remedy).toMatch(/cotal down && cotal up -d/);
    expect(describeClaudeAuth("bedrock", { CLAUDE_CODE_USE_BEDROCK: "1" }).problem).toMatch(/needs AWS_REGION/);
    expect(describeClaudeAuth("vertex", { CLAUDE_CODE_USE_VERTEX: "1", CLOUD_ML_REGION: "r" }).problem).toMatch(/needs ANTHROPIC_VERTEX_PROJECT_ID/);
    expect(describeClaudeAuth("auto", { CLAUDE_CODE_USE_BEDROCK: "1", AWS_REGION: "eu-west-1", AWS_PROFILE: "p" })).toMatchObject({
      mode: "bedrock",
      ready: true,
      vars: ["CLAUDE_CODE_USE_BEDROCK", "AWS_REGION", "AWS_PROFILE"],
    });
  });

  it.skipIf(process.platform === "darwin")("subscription is ready only with a login file in the user's Claude config dir", () => {
    const none = describeClaudeAuth("auto", { HOME: home });
    expect(none).toMatchObject({
      mode: "subscription",
      ready: false,
      problem: expect.stringContaining(`${join(home, ".claude", ".credentials.json")} does not exist`),
    });
    expect(none.login, "a missing file is not named as the login").toBeUndefined();
    expect(none.remedy).toMatch(/\/login.*ANTHROPIC_API_KEY/);
    mkdirSync(join(home, ".claude"), { recursive: true });
    writeFileSync(join(home, ".claude", ".credentials.json"), "not json");
    expect(describeClaudeAuth("auto", { HOME: home }).problem).toMatch(/is not a readable JSON file/);
    writeFileSync(join(home, ".claude", ".credentials.json"), JSON.stringify({ claudeAiOauth: {} }));
    expect(describeClaudeAuth("subscription", { HOME: home })).toMatchObject({
      ready: true,
      chosen: "explicit",
      login: join(home, ".claude", ".credentials.json"),
    });
    const dir = join(home, "elsewhere");
    mkdirSync(dir);
    writeFileSync(join(dir, ".credentials.json"), "{}");
    expect(describeClaudeAuth("auto", { HOME: home, CLAUDE_CONFIG_DIR: dir }).login).toBe(join(dir, ".credentials.json"));
  });
});
