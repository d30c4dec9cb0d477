// Golden tests of the one Claude launch builder: what each profile runs, and what it refuses.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { buildClaudeLaunch, BypassAsRootError, DENY_FLOOR, LaunchOptionError, type ClaudeLaunch, type ClaudeLaunchInput } from "../../claude/index.js";
import { RuntimeLaunchError } from "../../runtime/index.js";

const PARENT_ENV = {
  PATH: "/usr/local/bin:/usr/bin:/bin",
  HOME: "/home/ada",
  LANG: "en_GB.UTF-8",
  TERM: "xterm-256color",
  JUNK: "not for claude",
  CLAUDECODE: "1",
  ANTHROPIC_API_KEY: "sk-ant-stray-key",
  COTAL_NAME: "stale-hand-started-name",
};

/** A seat input with fixed paths, so the output can be compared as it is. */
function input(over: Partial<ClaudeLaunchInput> = {}): ClaudeLaunchInput {
  return {
    profile: "seat",
    cwd: "/work/proj",
    identity: { name: "alice", space: "team", launchMaterialPath: "/run/cotal/alice.json" },
    connectorEntry: "/opt/cotal/dist/connector.mjs",
    parentEnv: PARENT_ENV,
    nodePath: "/usr/bin/node",
    runtimeDir: "/run/user/1000",
    isRoot: false,
    ...over,
  };
}

/** The launch with the random directory name replaced by `<dir>` and the deny floor collapsed to one marker. */
function golden(launch: ClaudeLaunch): unknown {
  const norm = (s: string): string => s.split(launch.privateDir).join("<dir>");
  const args: string[] = [];
  for (let i = 0; i < launch.args.length; i++) {
    args.push(norm(launch.args[i]!));
    if (launch.args[i] === "--disallowedTools") {
      expect(launch.args.slice(i + 1, i + 1 + DENY_FLOOR.length)).toEqual(DENY_FLOOR);
      args.push("<DENY_FLOOR>");
      i += DENY_FLOOR.length;
    }
  }
  return {
    command: launch.command,
    args,
    cwd: launch.cwd,
    env: launch.env,
    files: launch.files.map((f) => ({ path: norm(f.path), mode: f.mode.toString(8), content: f.path.endsWith(".json") ? JSON.parse(f.content) : f.content })),
    stdin: launch.stdin,
    permissionMode: launch.permissionMode,
  };
}

const EXPECTED_ENV = {
  PATH: "/usr/local/bin:/usr/bin:/bin",
  HOME: "/home/ada",
  LANG: "en_GB.UTF-8",
  TERM: "xterm-256color",
  ANTHROPIC_API_KEY: "",
  COTAL_LAUNCH_MATERIAL: "/run/cotal/alice.json",
};

const MCP_FILE = {
  path: "<dir>/mcp.json",
  mode: "600",
  content: {
    mcpServers: {
      cotal: { type: "stdio", command: "/usr/bin/node", args: ["--optimize-for-size", "--max-semi-space-size=1", "/opt/cotal/dist/connector.mjs"] },
    },
  },
};

describe("buildClaudeLaunch golden output", () => {
  it("an interactive managed seat: MCP wiring, allow rule, deny floor, dontAsk mode, persona by file", () => {
    const launch = buildClaudeLaunch(input({ persona: "You are Alice, the reviewer.", model: "opus", agent: "reviewer" }));
    expect(launch.privateDir).toMatch(/^\/run\/user\/1000\/cotal-claude-team-alice-[0-9a-f]{12}$/);
    expect(golden(launch)).toEqual({
      command: "claude",
      args: [
        "--mcp-config",
        "<dir>/mcp.json",
        "--allowedTools",
        "mcp__cotal__*",
        "mcp__plugin_cotal_cotal",
        "--disallowedTools",
        "<DENY_FLOOR>",
        "--permission-mode=dontAsk",
        "--model=opus",
        "--agent=reviewer",
        "--append-system-prompt-file",
        "<dir>/persona.md",
      ],
      cwd: "/work/proj",
      env: EXPECTED_ENV,
      files: [MCP_FILE, { path: "<dir>/persona.md", mode: "600", content: "You are Alice, the reviewer." }],
      stdin: undefined,
      permissionMode: "dontAsk",
    });
  });

  it("a supervised seat runs default mode (its asks go to the mesh) with the same allow rules and deny floor; another profile is refused", () => {
    const launch = buildClaudeLaunch(input({ posture: "supervised", allowedTools: ["Read"] }));
    expect(launch.permissionMode).toBe("default");
    expect(launch.args).toContain("--permission-mode=default");
    expect(launch.args).not.toContain("--permission-mode=dontAsk");
    expect(launch.args.slice(launch.args.indexOf("--allowedTools"), launch.args.indexOf("--disallowedTools") + 2)).toEqual([
      "--allowedTools",
      "mcp__cotal__*",
      "mcp__plugin_cotal_cotal",
      "Read",
      "--disallowedTools",
      ...DENY_FLOOR.slice(0, 1),
    ]);
    expect(buildClaudeLaunch(input({ posture: "unattended" })).permissionMode).toBe("dontAsk");
    expect(() => buildClaudeLaunch(input({ profile: "run", posture: "supervised", prompt: "x" }))).toThrow(/supervised is a seat posture/);
  });

  it("a headless seat: -p with stream-json, strict MCP config when isolated, prompt on stdin, raw options after", () => {
    const launch = buildClaudeLaunch(
      input({ headless: true, isolation: true, prompt: "Start your shift.", persona: "P", launchOptions: { "max-turns": 5, effort: "high", verbose: true } }),
    );
    expect(golden(launch)).toEqual({
      command: "claude",
      args: [
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--mcp-config",
        "<dir>/mcp.json",
        "--strict-mcp-config",
        "--allowedTools",
        "mcp__cotal__*",
        "mcp__plugin_cotal_cotal",
        "--disallowedTools",
        "<DENY_FLOOR>",
        "--permission-mode=dontAsk",
        "--append-system-prompt-file",
        "<dir>/persona.md",
        "--max-turns=5",
        "--effort=high",
      ],
      cwd: "/work/proj",
      env: EXPECTED_ENV,
      files: [MCP_FILE, { path: "<dir>/persona.md", mode: "600", content: "P" }],
      stdin: "Start your shift.",
      permissionMode: "dontAsk",
    });
  });

  it("a foreground spawn keeps Claude's own permission mode but still has the wiring and the floor", () => {
    const launch = buildClaudeLaunch(input({ profile: "foreground", persona: "P" }));
    expect(golden(launch)).toEqual({
      command: "claude",
      args: [
        "--mcp-config",
        "<dir>/mcp.json",
        "--allowedTools",
        "mcp__cotal__*",
        "mcp__plugin_cotal_cotal",
        "--disallowedTools",
        "<DENY_FLOOR>",
        "--append-system-prompt-file",
        "<dir>/persona.md",
      ],
      cwd: "/work/proj",
      env: EXPECTED_ENV,
      files: [MCP_FILE, { path: "<dir>/persona.md", mode: "600", content: "P" }],
      stdin: undefined,
      permissionMode: undefined,
    });
  });

  it("a one-shot run: -p --output-format json, the JSON schema inline, the prompt on stdin", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "cotal-builder-"));
    try {
      const schema = path.join(dir, "schema.json");
      writeFileSync(schema, JSON.stringify({ type: "object", properties: { answer: { type: "string" } } }, null, 2));
      const launch = buildClaudeLaunch(input({ profile: "run", prompt: "What is 6 × 7?", jsonSchemaFile: schema, authMode: "api-key" }));
      expect(golden(launch)).toEqual({
        command: "claude",
        args: [
          "-p",
          "--output-format",
          "json",
          "--mcp-config",
          "<dir>/mcp.json",
          "--allowedTools",
          "mcp__cotal__*",
          "mcp__plugin_cotal_cotal",
          "--disallowedTools",
          "<DENY_FLOOR>",
          "--permission-mode=dontAsk",
          '--json-schema={"type":"object","properties":{"answer":{"type":"string"}}}',
        ],
        cwd: "/work/proj",
        env: { ...EXPECTED_ENV, ANTHROPIC_API_KEY: "sk-ant-stray-key" },
        files: [MCP_FILE],
        stdin: "What is 6 × 7?",
        permissionMode: "dontAsk",
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a run that does not join the mesh (noMesh) has no Cotal MCP server and no launch material, but keeps dontAsk, the allow rules and the deny floor", () => {
    const launch = buildClaudeLaunch(input({ profile: "run", prompt: "x", noMesh: true, allowedTools: ["Read"] }));
    expect(launch.args).not.toContain("--mcp-config");
    expect(launch.files).toEqual([]);
    expect(launch.env.COTAL_LAUNCH_MATERIAL).toBeUndefined();
    expect(launch.args).toEqual(
      expect.arrayContaining(["--allowedTools", "mcp__cotal__*", "Read", "--disallowedTools", ...DENY_FLOOR, "--permission-mode=dontAsk"]),
    );
    expect(() => buildClaudeLaunch(input({ profile: "seat", noMesh: true }))).toThrow(/Only a run may leave/);
  });

  it("every profile and mode carries the MCP wiring, the allow rule and the whole deny floor", () => {
    const variants: Array<Partial<ClaudeLaunchInput>> = [
      { profile: "seat" },
      { profile: "seat", headless: true, prompt: "x" },
      { profile: "foreground" },
      { profile: "run", prompt: "x" },
      { profile: "seat", launchOptions: { "permission-mode": "dontAsk" } },
      { profile: "seat", launchOptions: { "dangerously-skip-permissions": true } },
      { profile: "foreground", launchOptions: { "permission-mode": "acceptEdits" } },
      { profile: "run", prompt: "x", launchOptions: { "permission-mode": "plan" } },
    ];
    for (const v of variants) {
      const { args } = buildClaudeLaunch(input(v));
      const what = JSON.stringify(v);
      expect(
        args.filter((a) => a === "--mcp-config"),
        what,
      ).toHaveLength(1);
      expect(args.slice(args.indexOf("--allowedTools") + 1, args.indexOf("--allowedTools") + 3), what).toEqual(["mcp__cotal__*", "mcp__plugin_cotal_cotal"]);
      const floorAt = args.indexOf("--disallowedTools");
      expect(args.slice(floorAt + 1, floorAt + 1 + DENY_FLOOR.length), what).toEqual(DENY_FLOOR);
    }
  });

  it("the deny floor names every destructive command of the issue", () => {
    expect(DENY_FLOOR).toEqual(
      expect.arrayContaining([
        "Bash(rm -rf*)",
        "Bash(rm -fr*)",
        "Bash(git push --force*)",
        "Bash(git push -f *)",
        "Bash(git reset --hard*)",
        "Bash(git clean -f*)",
        "Bash(sudo *)",
        "Bash(curl *| sh)",
        "Bash(wget *| sh)",
      ]),
    );
    expect(new Set(DENY_FLOOR).size).toBe(DENY_FLOOR.length);
  });

  it("a permission mode or dangerously-skip-permissions in the launch options replaces the managed default", () => {
    const mode = buildClaudeLaunch(input({ launchOptions: { "permission-mode": "dontAsk" } }));
    expect(mode.args.filter((a) => a.startsWith("--permission-mode"))).toEqual(["--permission-mode=dontAsk"]);
    const skip = buildClaudeLaunch(input({ launchOptions: { dangerouslySkipPermissions: true } }));
    expect(skip.args.some((a) => a.startsWith("--permission-mode"))).toBe(false);
    expect(skip.args).toContain("--dangerously-skip-permissions");
  });

  it("a managed seat as root needs no sandbox: dontAsk is the default, bypass only when asked for", () => {
    expect(buildClaudeLaunch(input({ isRoot: true })).permissionMode).toBe("dontAsk");
    expect(buildClaudeLaunch(input({ profile: "run", prompt: "x", isRoot: true })).permissionMode).toBe("dontAsk");
  });

  it("with the plugin tree: --plugin-dir instead of --mcp-config, no mcp.json; an agent file's allow rules follow Cotal's", () => {
    const launch = buildClaudeLaunch(input({ pluginDir: "/opt/cotal/plugin", allowedTools: ["Read", "Bash(npm test:*)", "mcp__github__*"] }));
    expect(launch.args.slice(0, 2)).toEqual(["--plugin-dir", "/opt/cotal/plugin"]);
    expect(launch.args).not.toContain("--mcp-config");
    expect(launch.files).toEqual([]);
    const at = launch.args.indexOf("--allowedTools");
    expect(launch.args.slice(at + 1, at + 6)).toEqual(["mcp__cotal__*", "mcp__plugin_cotal_cotal", "Read", "Bash(npm test:*)", "mcp__github__*"]);
  });

  it("refuses an allow rule that is not a permission rule (a flag smuggled in as a rule)", () => {
    expect(() => buildClaudeLaunch(input({ allowedTools: ["--dangerously-skip-permissions"] }))).toThrow(RuntimeLaunchError);
    expect(() => buildClaudeLaunch(input({ allowedTools: ["Read Write"] }))).toThrow(RuntimeLaunchError);
    expect(() => buildClaudeLaunch(input({ pluginDir: "plugin" }))).toThrow(RuntimeLaunchError);
  });

  it("no persona means no persona file and no prompt flag", () => {
    const launch = buildClaudeLaunch(input({ persona: "  \n" }));
    expect(launch.files.map((f) => path.basename(f.path))).toEqual(["mcp.json"]);
    expect(launch.args.some((a) => a.includes("system-prompt"))).toBe(false);
    expect(launch.personaFile).toBeUndefined();
  });

  it("the persona text is in neither argv nor env", () => {
    const persona = "SECRET-PERSONA-TEXT: you guard the vault.";
    const launch = buildClaudeLaunch(input({ persona, parentEnv: { ...PARENT_ENV } }));
    expect(JSON.stringify(launch.args)).not.toContain("SECRET-PERSONA-TEXT");
    expect(JSON.stringify(launch.env)).not.toContain("SECRET-PERSONA-TEXT");
    expect(launch.files.find((f) => f.path === launch.personaFile)?.content).toBe(persona);
  });

  it("each launch gets a fresh private directory", () => {
    expect(buildClaudeLaunch(input()).privateDir).not.toBe(buildClaudeLaunch(input()).privateDir);
  });
});

describe("buildClaudeLaunch refusals", () => {
  const refuse = (over: Partial<ClaudeLaunchInput>): unknown => {
    try {
      buildClaudeLaunch(input(over));
    } catch (err) {
      return err;
    }
    throw new Error(`expected ${JSON.stringify(over)} to be refused`);
  };

  it("refuses an unknown launch option, naming the key and the options it could have used", () => {
    const err = refuse({ launchOptions: { "frobnicate-harder": true } });
    expect(err).toBeInstanceOf(LaunchOptionError);
    expect(err).toMatchObject({ key: "frobnicate-harder", reason: "unknown", code: "bad-launch-option" });
    expect((err as Error).message).toContain("max-turns");
  });

  it.each(["constructor", "toString", "__proto__", "hasOwnProperty"])("refuses %s as unknown, not as an inherited property", (key) => {
    expect(refuse({ launchOptions: JSON.parse(`{${JSON.stringify(key)}: true}`) as Record<string, boolean> })).toMatchObject({ key, reason: "unknown" });
  });

  it.each([
    "mcp-config",
    "strict-mcp-config",
    "allowedTools",
    "allowed-tools",
    "disallowedTools",
    "--disallowed-tools",
    "settings",
    "system-prompt",
    "append-system-prompt",
    "append-system-prompt-file",
    "dangerously-load-development-channels",
    "dangerously-load-anything-new",
    "output-format",
    "print",
    "bare",
    "safe-mode",
    "plugin-dir",
    "json-schema",
  ])("refuses launch option %s, which would override Cotal's wiring or floor", (key) => {
    const err = refuse({ launchOptions: { [key]: "x" } });
    expect(err).toBeInstanceOf(LaunchOptionError);
    expect(err).toMatchObject({ key, reason: "reserved" });
  });

  it.each([
    [{ "permission-mode": "yolo" }, "one of default, acceptEdits"],
    [{ "max-turns": "many" }, "an integer"],
    [{ "max-turns": 0 }, "at least 1"],
    [{ verbose: "loud" }, "true or false"],
    [{ "add-dir": "/a\n--settings=/evil.json" }, "single-line"],
  ])("refuses a bad value %j", (launchOptions, expected) => {
    const err = refuse({ launchOptions });
    expect(err).toMatchObject({ reason: "bad-value" });
    expect((err as Error).message).toContain(expected);
  });

  it("passes a value that starts with a dash as one argument, never as another flag", () => {
    const { args } = buildClaudeLaunch(input({ launchOptions: { "add-dir": "--mcp-config" } }));
    expect(args).toContain("--add-dir=--mcp-config");
    expect(args.filter((a) => a === "--mcp-config")).toHaveLength(1);
  });

  it("refuses a model given both as input and as a different launch option", () => {
    expect(refuse({ model: "opus", launchOptions: { model: "sonnet" } })).toMatchObject({ reason: "conflict" });
    expect(buildClaudeLaunch(input({ launchOptions: { model: "sonnet" } })).args).toContain("--model=sonnet");
  });

  it("refuses a managed seat in bypass mode as root outside a sandbox, naming both remedies", () => {
    const err = refuse({ isRoot: true, parentEnv: { ...PARENT_ENV }, launchOptions: { "permission-mode": "bypassPermissions" } });
    expect(err).toBeInstanceOf(BypassAsRootError);
    const message = (err as Error).message;
    expect(message).toContain("IS_SANDBOX=1");
    expect(message).toContain("--opt permission-mode=dontAsk");
    expect(message).toContain("non-root");
  });

  it("says why when IS_SANDBOX is set to something Claude does not accept", () => {
    const err = refuse({ isRoot: true, parentEnv: { ...PARENT_ENV, IS_SANDBOX: "yes" }, launchOptions: { "permission-mode": "bypassPermissions" } });
    expect(err).toBeInstanceOf(BypassAsRootError);
    expect((err as Error).message).toContain('IS_SANDBOX is "yes"');
  });

  it("refuses dangerously-skip-permissions as root outside a sandbox too, in any profile", () => {
    expect(refuse({ profile: "foreground", isRoot: true, launchOptions: { "dangerously-skip-permissions": true } })).toBeInstanceOf(BypassAsRootError);
    expect(refuse({ profile: "run", prompt: "x", isRoot: true, launchOptions: { "permission-mode": "bypassPermissions" } })).toBeInstanceOf(BypassAsRootError);
  });

  it("lets root run bypass in a sandbox (IS_SANDBOX=1 set for the child), or another mode without one", () => {
    const bypass = { "permission-mode": "bypassPermissions" } as const;
    const sandboxed = buildClaudeLaunch(input({ isRoot: true, sandbox: true, launchOptions: bypass }));
    expect(sandboxed.env.IS_SANDBOX).toBe("1");
    expect(sandboxed.permissionMode).toBe("bypassPermissions");
    const inherited = buildClaudeLaunch(input({ isRoot: true, parentEnv: { ...PARENT_ENV, IS_SANDBOX: "1" }, launchOptions: bypass }));
    expect(inherited.env.IS_SANDBOX).toBe("1");
    expect(buildClaudeLaunch(input({ isRoot: true, launchOptions: { "permission-mode": "dontAsk" } })).permissionMode).toBe("dontAsk");
    expect(buildClaudeLaunch(input({ isRoot: true, profile: "foreground" })).permissionMode).toBeUndefined();
  });

  it("refuses relative paths, bad identities and prompts where they cannot go", () => {
    expect(refuse({ cwd: "proj" })).toBeInstanceOf(RuntimeLaunchError);
    expect(refuse({ connectorEntry: "dist/connector.mjs" })).toBeInstanceOf(RuntimeLaunchError);
    expect(refuse({ identity: { name: "al.ice", space: "team", launchMaterialPath: "/m.json" } })).toBeInstanceOf(RuntimeLaunchError);
    expect(refuse({ profile: "foreground", prompt: "hi" })).toBeInstanceOf(RuntimeLaunchError);
    expect(refuse({ profile: "run" })).toBeInstanceOf(RuntimeLaunchError);
    expect(refuse({ profile: "seat", jsonSchemaFile: "/s.json" })).toBeInstanceOf(RuntimeLaunchError);
    expect(refuse({ profile: "run", prompt: "x", jsonSchemaFile: "/nonexistent/schema.json" })).toBeInstanceOf(RuntimeLaunchError);
  });
});
