// The auth choice a person makes for a runtime with several ways to authenticate (Claude's
// `--claude-auth`), derived from the registry: the flags, their check, and how status says it.
import { Command } from "commander";
import { describe, expect, it } from "vitest";
import { addAuthOptions, authArgs, authChoices, authLines, describeRuntimeAuth } from "../../../cli/mesh-host/runtime-auth.js";
import { UsageError } from "../../../cli/terminal/errors.js";
import { RUNTIMES } from "../../../runtimes/index.js";

describe("runtime auth choices", () => {
  it("offers --<runtime>-auth for exactly the runtimes whose adapter has authModes", () => {
    const cmd = addAuthOptions(new Command("up"), "the host manager's");
    const flags = cmd.options.map((o) => o.long);
    const withModes = RUNTIMES.filter((r) => r.authModes?.length).map((r) => `--${r.name}-auth`);
    expect(withModes).toContain("--claude-auth");
    expect(flags).toEqual(withModes);
  });

  it("takes the flag, else COTAL_<RUNTIME>_AUTH, else auto, and refuses a mode the runtime does not have", () => {
    expect(authChoices({}, {})).toMatchObject({ claude: "auto" });
    expect(authChoices({}, { COTAL_CLAUDE_AUTH: "api-key" })).toMatchObject({ claude: "api-key" });
    expect(authChoices({ claudeAuth: "bedrock" }, { COTAL_CLAUDE_AUTH: "api-key" })).toMatchObject({ claude: "bedrock" });
    expect(() => authChoices({ claudeAuth: "password" }, {})).toThrow(UsageError);
    expect(() => authChoices({ claudeAuth: "password" }, {})).toThrow(/--claude-auth \(or COTAL_CLAUDE_AUTH\) is "password": it must be auto, /);
    expect(authArgs({ claude: "api-key" })).toEqual(["--claude-auth", "api-key"]);
  });

  it("says a runtime's auth by its label, names only, and the fix when it is not ready", () => {
    const ready = {
      name: "claude",
      ready: true,
      auth: { mode: "api-key", chosen: "auto" as const, vars: ["ANTHROPIC_API_KEY"], baseUrl: "http://127.0.0.1:9" },
    };
    expect(authLines([ready])).toEqual(["Claude auth:  api-key (detected: ANTHROPIC_API_KEY; base URL http://127.0.0.1:9)"]);
    const missing = {
      name: "claude",
      ready: false,
      auth: { mode: "subscription", chosen: "explicit" as const, vars: [] },
      problem: "no login.",
      remedy: "Log in.",
    };
    expect(describeRuntimeAuth(missing)).toBe("subscription (chosen), NOT READY: no login. Log in.");
    // A runtime without a choice of auth has no auth line (its configuration is said elsewhere).
    expect(authLines([{ name: "codex", ready: true }])).toEqual([]);
  });
});
