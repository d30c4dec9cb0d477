// `cotal setup --runtime copilot` through the shipped CLI: in a user's own ~/.copilot that already
// holds an MCP server of theirs, it adds Cotal's server beside it and Cotal's hooks file, keeps
// everything of theirs, and running it again changes nothing. Then the user's own `copilot -p`
// (their provider in the shell, no Cotal launch around it) reads both: the connector's tools reach
// the model, and with the shell allowed by the user the deny floor hook still refuses a force-push.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCli, cleanEnv, runCotal } from "../harness/cli.js";
import { runUserCli } from "../harness/user-cli.js";
import { copilotShell } from "../harness/runtime-shell.js";
import { allText, ModelDouble, toolNames, toolResults } from "../../testbed/model-double.js";

let home: string;
let env: NodeJS.ProcessEnv;
let model: ModelDouble;
const MINE = { mcpServers: { mine: { type: "local", command: "true", tools: ["*"] } } };
const cotal = (args: string[]) => runCotal(["setup", "--runtime", "copilot", ...args], { cwd: home, env, timeoutMs: 60_000 });
const mcpFile = () => join(home, ".copilot", "mcp-config.json");

/** `copilot -p <prompt>` as the user runs it, the shell allowed by them. */
const copilot = (prompt: string) => runUserCli("copilot", ["-p", prompt, "-s", "--allow-tool", "shell"], { cwd: home, env });

beforeAll(async () => {
  await buildCli();
  home = await mkdtemp(join(tmpdir(), "cotal-setup-copilot-"));
  model = await ModelDouble.start([
    { when: (r) => allText(r).includes("HAND-FLOOR"), reply: [{ tool: "bash", input: { command: "git push --force origin main", description: "push" } }] },
    { afterToolResult: "bash", reply: ["Refused."] },
  ]);
  mkdirSync(join(home, ".copilot"), { recursive: true });
  writeFileSync(mcpFile(), JSON.stringify(MINE, null, 2));
  // The user trusted this folder once (Copilot asks at the first start in a folder).
  writeFileSync(join(home, ".copilot", "config.json"), JSON.stringify({ trustedFolders: [home], banner: "never" }));
  env = cleanEnv({ HOME: home, ...copilotShell(model.url, "sk-copilot-double-0123456789") });
}, 120_000);

afterAll(async () => {
  await model?.close();
  if (home) await rm(home, { recursive: true, force: true });
});

describe("cotal setup --runtime copilot", () => {
  it("--check changes nothing; setup adds Cotal's server beside the user's and its hooks file; again changes nothing", async () => {
    const checked = await cotal(["--check"]);
    expect(checked.code, checked.stdout + checked.stderr).toBe(1);
    expect(JSON.parse(readFileSync(mcpFile(), "utf8"))).toEqual(MINE);
    expect(existsSync(join(home, ".copilot", "hooks"))).toBe(false);
    const r = await cotal(["--json"]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.json()).toMatchObject({ runtime: "copilot", files: [{ path: mcpFile(), action: "updated" }, { action: "created" }] });
    const doc = JSON.parse(readFileSync(mcpFile(), "utf8")) as { mcpServers: Record<string, { env?: Record<string, string> }> };
    expect(Object.keys(doc.mcpServers).sort()).toEqual(["cotal", "mine"]);
    expect(doc.mcpServers.cotal!.env).toEqual({ COTAL_RUNTIME: "copilot" });
    const again = await cotal(["--json"]);
    expect(again.json()).toMatchObject({ files: [{ action: "ok" }, { action: "ok" }] });
  }, 120_000);

  it("the user's own copilot reads both: the connector's tools reach the model, and the floor hook refuses a force-push", async () => {
    const r = await copilot("HAND-FLOOR push it");
    expect(r.code, r.out).toBe(0);
    const turn = model.mainRequests.find((q) => allText(q).includes("HAND-FLOOR"))!;
    expect(toolNames(turn)).toEqual(expect.arrayContaining(["cotal-cotal_join_help", "bash"]));
    const refused = model.mainRequests.flatMap((q) => toolResults(q)).find((t) => t.name === "bash")!;
    expect(refused.text).toContain("Cotal's deny floor refuses this command");
  }, 180_000);
});
