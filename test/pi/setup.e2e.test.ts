// `cotal setup --runtime pi` through the shipped CLI: in a user's own ~/.pi/agent/settings.json
// that already holds their settings, it adds Cotal's extension and keeps everything of theirs;
// running it again changes nothing. Then the user's own `pi -p` (no Cotal launch around it) loads
// the extension: the connector's tools (here, with no Cotal identity in the shell, its join help) reach the model as pi tools, and the deny floor holds in
// the hand-started session too.
import { readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCli, cleanEnv, runCotal } from "../harness/cli.js";
import { runUserCli } from "../harness/user-cli.js";
import { writePiConfig } from "../harness/runtime-shell.js";
import { allText, ModelDouble, toolNames, toolResults } from "../../testbed/model-double.js";

const KEY_VAR = "DOUBLE_PI_KEY";
let home: string;
let env: NodeJS.ProcessEnv;
let model: ModelDouble;
const cotal = (args: string[]) => runCotal(["setup", "--runtime", "pi", ...args], { cwd: home, env, timeoutMs: 60_000 });
const settingsFile = () => join(home, ".pi", "agent", "settings.json");

/** `pi -p <prompt>` as the user runs it. */
const pi = (prompt: string) => runUserCli("pi", ["-p", prompt], { cwd: home, env });

beforeAll(async () => {
  await buildCli();
  home = await mkdtemp(join(tmpdir(), "cotal-setup-pi-"));
  model = await ModelDouble.start([
    { when: (r) => allText(r).includes("HAND-FLOOR"), reply: [{ tool: "bash", input: { command: "git push -f origin main" } }] },
    { afterToolResult: "bash", reply: ["Refused."] },
  ]);
  writePiConfig(home, model.url, KEY_VAR);
  const settings = JSON.parse(readFileSync(settingsFile(), "utf8")) as Record<string, unknown>;
  writeFileSync(settingsFile(), JSON.stringify({ ...settings, theme: "light" }, null, 2));
  env = cleanEnv({ HOME: home, [KEY_VAR]: "sk-pi-double", PI_OFFLINE: "1" });
}, 120_000);

afterAll(async () => {
  await model?.close();
  if (home) await rm(home, { recursive: true, force: true });
});

describe("cotal setup --runtime pi", () => {
  it("--check says what is stale and changes nothing; setup adds the extension beside the user's settings; again changes nothing", async () => {
    const before = readFileSync(settingsFile(), "utf8");
    const checked = await cotal(["--check"]);
    expect(checked.code, checked.stdout + checked.stderr).toBe(1);
    expect(checked.stdout).toMatch(/stale\s+.*settings\.json/);
    expect(readFileSync(settingsFile(), "utf8")).toBe(before);
    const r = await cotal(["--json"]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.json()).toMatchObject({ runtime: "pi", files: [{ path: settingsFile(), action: "updated" }] });
    const doc = JSON.parse(readFileSync(settingsFile(), "utf8")) as { extensions: string[]; theme: string; defaultProvider: string };
    expect(doc).toMatchObject({ theme: "light", defaultProvider: "double" });
    expect(doc.extensions).toHaveLength(1);
    expect(doc.extensions[0]).toMatch(/\/pi-extension\.mjs$/);
    const again = await cotal(["--json"]);
    expect(again.json()).toMatchObject({ files: [{ action: "ok" }] });
  }, 120_000);

  it("the user's own pi loads it: the connector's tools reach the model, and the floor refuses a force-push", async () => {
    const r = await pi("HAND-FLOOR push it");
    expect(r.code, r.out).toBe(0);
    const turn = model.mainRequests.find((q) => allText(q).includes("HAND-FLOOR"))!;
    // No Cotal identity in this shell: the connector serves its join help until the session joins.
    expect(toolNames(turn)).toEqual(expect.arrayContaining(["cotal_join_help", "bash"]));
    const refused = model.mainRequests.flatMap((q) => toolResults(q)).find((t) => t.name === "bash")!;
    expect(refused).toMatchObject({ isError: true, text: expect.stringContaining("git push -f") });
  }, 120_000);
});
