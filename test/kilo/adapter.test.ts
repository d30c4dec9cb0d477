// The Kilo Code adapter as pure policy, where it is not OpenCode (test/opencode/ holds what the
// family shares): the user's config files reach a launch as copies, every global file of theirs in
// the order Kilo merges them and the one `$KILO_CONFIG` names, never the files themselves (Kilo
// writes `$schema` into a config file it reads); the private global folder is marked as migrated;
// Cotal's layer is a folder of its own read after the project's, with snapshots off; Kilo's own
// default asks are denied; its plugin bundle and SDK, its setup file and its journals are Kilo's.
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { KILO, kiloRuntime } from "../../kilo/index.js";
import { CotalPlugin } from "../../kilo/internal.js";
import { postureRules } from "../../runtime/opencode-family/index.js";
import { runLaunchInput, seatLaunchInput, unitFolder } from "../harness/launch-inputs.js";

const root = unitFolder("kilo");
const home = join(root, "home");
const userDir = join(home, ".config", "kilo");
mkdirSync(userDir, { recursive: true });
mkdirSync(join(home, ".local", "share", "kilo"), { recursive: true });
// Kilo created kilo.jsonc at its first start (its schema alone); the user's settings are in kilo.json.
writeFileSync(join(userDir, "kilo.jsonc"), JSON.stringify({ $schema: "https://app.kilo.ai/config.json", username: "made-by-kilo" }, null, 2));
writeFileSync(
  join(userDir, "kilo.json"),
  JSON.stringify({ model: "p/m", provider: { p: { options: { apiKey: "{env:P_KEY}" } } }, permission: { edit: "ask" } }),
);
writeFileSync(join(home, ".local", "share", "kilo", "auth.json"), '{"kilo":{"type":"api","key":"from-login"}}');
const named = join(root, "team.json");
writeFileSync(named, JSON.stringify({ small_model: "p/s" }));
const parentEnv = { HOME: home, PATH: "/usr/bin", P_KEY: "secret-p", KILO_TELEMETRY_LEVEL: "off", OPENCODE_CONFIG: "/elsewhere.json", OTHER_SECRET: "no" };
const host = { executable: "/usr/bin/kilo", connectorEntry: "/x/connector.mjs", parentEnv };
const input = runLaunchInput(root);
const seat = seatLaunchInput(root, "/m.json");
const fileAt = (files: Array<{ path: string; content: string }>, path: string) => files.find((f) => f.path === path)?.content;

describe("kilo launch", () => {
  it("reads copies of the user's config files, marked as migrated, never the files; Cotal's layer is its own folder, read last", () => {
    const l = kiloRuntime.buildRun(host, input);
    expect(l.args).toEqual(["run", "--format", "json", "--agent", "cotal"]);
    expect(l.stdin).toBe("PROMPT-TEXT");
    const global = join(l.privateDir, "kilo");
    // Every global file, as written; the migration Kilo would run on them is marked done.
    expect(fileAt(l.files, join(global, "kilo.json"))).toBe(readFileSync(join(userDir, "kilo.json"), "utf8"));
    expect(fileAt(l.files, join(global, "kilo.jsonc"))).toContain("made-by-kilo");
    expect(fileAt(l.files, join(global, ".bash-permission-migrated"))).toBe("");
    const layerDir = join(l.privateDir, "cotal");
    const layer = JSON.parse(fileAt(l.files, join(layerDir, "kilo.json"))!) as Record<string, unknown>;
    expect(layer).toMatchObject({ $schema: "https://app.kilo.ai/config.json", snapshot: false, default_agent: "cotal", autoupdate: false });
    expect(l.env).toMatchObject({
      XDG_CONFIG_HOME: l.privateDir,
      KILO_CONFIG_DIR: layerDir,
      KILO_DISABLE_AUTOUPDATE: "1",
      P_KEY: "secret-p",
      KILO_TELEMETRY_LEVEL: "off",
    });
    expect(l.env.KILO_CONFIG).toBeUndefined();
    // OpenCode's variables are not Kilo's: they stay out.
    expect(l.env.OPENCODE_CONFIG).toBeUndefined();
    expect(l.env.OTHER_SECRET).toBeUndefined();
    expect(fileAt(l.files, join(l.privateDir, "data", "kilo", "auth.json"))).toContain("from-login");
    // The user's own asking rule is refused unattended.
    expect((layer.agent as Record<string, { permission: Record<string, unknown> }>).cotal!.permission.edit).toBe("deny");
  });

  it("the file $KILO_CONFIG names is read as a copy, named by KILO_CONFIG again", () => {
    const l = kiloRuntime.buildRun({ ...host, parentEnv: { ...parentEnv, KILO_CONFIG: named } }, input);
    expect(l.env.KILO_CONFIG).toBe(join(l.privateDir, "named", "team.json"));
    expect(fileAt(l.files, l.env.KILO_CONFIG!)).toBe(readFileSync(named, "utf8"));
  });

  it("a seat gets the connector, Kilo's plugin bundle refusing asks, and its config folder reads as having Kilo's plugin SDK", async () => {
    const l = await kiloRuntime.buildSeat(host, seat);
    const layerDir = join(l.privateDir, "cotal");
    const layer = JSON.parse(fileAt(l.files, join(layerDir, "kilo.json"))!) as { mcp: Record<string, unknown>; plugin: unknown[] };
    expect(layer.mcp.cotal).toMatchObject({ type: "local", environment: { COTAL_LAUNCH_MATERIAL: "/m.json", COTAL_JOIN_ON: "start" } });
    expect(layer.plugin[0]).toEqual(["file:///x/kilo-plugin.mjs", { node: process.execPath, hook: "/x/hook.mjs", unattended: true }]);
    const lock = JSON.parse(fileAt(l.files, join(layerDir, "package-lock.json"))!) as { packages: Record<string, { dependencies: object }> };
    expect(lock.packages[""]!.dependencies).toEqual({ "@kilocode/plugin": "7.7.7" });
    expect(l.files.every((f) => f.mode === 0o600 && f.path.startsWith(`${l.privateDir}/`))).toBe(true);
  });

  it("refusals name Kilo Code; its own default asks (recall, memory) are denied with OpenCode's", () => {
    expect(() => kiloRuntime.buildRun(host, { ...input, allowedTools: ["Frobnicate"] })).toThrow(/names no tool Kilo Code has/);
    expect(() => kiloRuntime.buildRun(host, { ...input, model: "sonnet" })).toThrow(/Kilo Code models are `provider\/model`/);
    expect(postureRules(KILO, [])).toMatchObject({ doom_loop: "deny", recall: "deny", kilo_memory_recall: "deny", kilo_memory_save: "deny" });
  });
});

describe("kilo auth, setup and results", () => {
  it("the pre-flight names every config file read and the model; with none, it names Kilo's file and login", () => {
    expect(kiloRuntime.auth({ parentEnv }).summary).toBe(
      `config ${join(userDir, "kilo.json")}, ${join(userDir, "kilo.jsonc")} (model p/m); login ${join(home, ".local", "share", "kilo", "auth.json")}; keys from P_KEY`,
    );
    const bare = kiloRuntime.auth({ parentEnv: { HOME: join(root, "nobody") } });
    expect(bare).toMatchObject({ ready: false, problem: expect.stringContaining("no kilo.json in"), remedy: expect.stringContaining("`kilo auth login`") });
  });

  it("setup writes into the file Kilo edits itself (kilo.jsonc before kilo.json), naming Kilo's schema and plugin", async () => {
    const env = { HOME: home };
    const done = await kiloRuntime.setup({ env, connectorEntry: "/x/connector.mjs", check: false });
    expect(done.files).toEqual([{ path: join(userDir, "kilo.jsonc"), action: "updated" }]);
    const doc = JSON.parse(readFileSync(join(userDir, "kilo.jsonc"), "utf8")) as { $schema: string; mcp: Record<string, unknown>; plugin: unknown[] };
    expect(doc.$schema).toBe("https://app.kilo.ai/config.json");
    expect(doc.mcp.cotal).toMatchObject({ environment: { COTAL_RUNTIME: "kilo" } });
    expect(doc.plugin).toEqual([["file:///x/kilo-plugin.mjs", { node: process.execPath, hook: "/x/hook.mjs" }]]);
    // A folder with no file gets kilo.json.
    const fresh = await kiloRuntime.setup({ env: { HOME: join(root, "fresh") }, connectorEntry: "/x/connector.mjs", check: true });
    expect(fresh.files).toEqual([{ path: join(root, "fresh", ".config", "kilo", "kilo.json"), action: "missing" }]);
  });

  it("a run's error names Kilo Code", () => {
    const line = JSON.stringify({ type: "error", sessionID: "ses_1", error: { name: "UnknownError", data: { message: "Model not found" } } });
    const exit = { code: 1, signal: null, timedOut: false, stdout: line, stderr: "", latencyMs: 5 };
    expect(kiloRuntime.parseRun({ runId: "r1", modelSource: "default", timeoutMs: 60_000 }, exit)).toMatchObject({
      status: "error",
      error: { kind: "failed", message: "Kilo Code reported an error: Model not found" },
    });
  });
});

describe("kilo's plugin", () => {
  it("journals a session in Kilo's data folder and names that journal in SessionStart", async () => {
    const dir = mkdtempSync(join(root, "plugin-"));
    const said = join(dir, "said.jsonl");
    writeFileSync(
      join(dir, "hook.mjs"),
      `import { appendFileSync, readFileSync } from "node:fs";\nappendFileSync(${JSON.stringify(said)}, JSON.stringify({ event: process.argv[2], ...JSON.parse(readFileSync(0, "utf8")) }) + "\\n");\n`,
    );
    const before = process.env.XDG_DATA_HOME;
    process.env.XDG_DATA_HOME = join(dir, "data");
    try {
      const hooks = await CotalPlugin({ directory: dir }, { node: process.execPath, hook: join(dir, "hook.mjs") });
      await hooks["chat.message"]!({ sessionID: "ses_k" }, { message: { id: "msg_1", sessionID: "ses_k" }, parts: [{ type: "text", text: "hello" }] });
      await hooks.event!({ event: { type: "session.idle", properties: { sessionID: "ses_k" } } });
    } finally {
      if (before === undefined) delete process.env.XDG_DATA_HOME;
      else process.env.XDG_DATA_HOME = before;
    }
    const journal = join(dir, "data", "kilo", "cotal", "ses_k.jsonl");
    const events = readFileSync(said, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { event: string; transcript_path?: string });
    expect(events.map((e) => e.event)).toEqual(["UserPromptSubmit", "SessionStart", "Stop"]);
    expect(events[1]!.transcript_path).toBe(journal);
    expect(readFileSync(journal, "utf8")).toContain('"content":"hello"');
  });
});
