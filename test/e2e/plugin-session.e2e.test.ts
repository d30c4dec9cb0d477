// The README's way onto the mesh, end to end: a static mesh, a credential from `mint`, and the
// real claude CLI started with `--plugin-dir` on the rendered plugin (its .mcp.json starts the
// bundled connector, its hooks.json the bundled hook) and only COTAL_* in its environment.
// Mail sent before the session reaches the model through the plugin's SessionStart hook, and the
// model's DM through the plugin's tool reaches the mesh as the seat.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { frameOf } from "../../schemas/index.js";
import { buildCli, projectRoot } from "../harness/cli.js";
import { cleanupRun, runClaude } from "../harness/claude-runner.js";
import { collect } from "../harness/deliveries.js";
import { TestMesh } from "../harness/mesh.js";
import { allText, ModelDouble, toolResults } from "../../testbed/model-double.js";
import { until } from "../../testbed/until.js";

const PLUGIN_TOOL = "mcp__plugin_cotal_cotal__cotal_dm";
let mesh: TestMesh;
let controlDir: string;

beforeAll(async () => {
  await buildCli(); // also copies the bundles into plugin/bin
  mesh = await TestMesh.startStatic("plug");
  controlDir = mkdtempSync(join(tmpdir(), "cotal-ctl-"));
});

afterAll(async () => {
  await mesh?.close();
  rmSync(controlDir, { recursive: true, force: true });
});

describe("a Claude Code session on the mesh through the plugin", () => {
  it("gets waiting mail at SessionStart and DMs back as itself", async () => {
    const aliceCreds = await mesh.mint({ name: "alice", profile: "agent", allowSubscribe: ["general"], allowPublish: ["general"], provision: true });
    const bob = await mesh.joined("bob");
    const got = collect(bob);
    await bob.dm("alice", "psst alice: the build is green");

    const double = await ModelDouble.start([
      { reply: [{ tool: PLUGIN_TOOL, input: { to: "bob", text: "thanks bob" } }] },
      { afterToolResult: PLUGIN_TOOL, reply: ["Replied to bob."] },
    ]);
    const run = await runClaude({
      baseUrl: double.url,
      prompt: "Check your mail and answer it.",
      args: ["--plugin-dir", join(projectRoot, "plugin"), "--permission-mode", "bypassPermissions"],
      env: { COTAL_SERVER: mesh.server.url, COTAL_SPACE: "plug", COTAL_NAME: "alice", COTAL_CREDS: aliceCreds, COTAL_CONTROL_DIR: controlDir },
      timeoutMs: 90_000,
    });
    try {
      expect(run.json, run.stderr).toMatchObject({ is_error: false, result: "Replied to bob." });
      // the plugin's SessionStart hook put the waiting DM in front of the model
      expect(allText(double.mainRequests[0]!)).toMatch(/cotal DM from local\.bob[^\n]*\n│ psst alice: the build is green/);
      // the plugin's tool sent as the seat, with an honest receipt
      expect(toolResults(double.mainRequests[1]!)[0]!.text).toMatch(/stored seq \d+; recipient idle at send/);
      await until(() => got.texts().includes("thanks bob"), 10_000, "bob gets alice's reply");
      expect(got.items.find((d) => d.kind === "dm")!.from).toEqual({ owner: "local", actor: "alice" });
    } finally {
      await double.close();
      await cleanupRun(run);
    }
  }, 120_000);

  it("started with only COTAL_SERVER and COTAL_CREDS, as the README says, publishes its event frames, first prompt included", async () => {
    // No COTAL_NAME: the hooks find the connector only through the pairing file it writes once joined.
    const creds = await mesh.mint({ name: "erin", profile: "agent", allowSubscribe: ["general"], allowPublish: ["general"], events: true, provision: true });
    const double = await ModelDouble.start([{ reply: ["Hello from erin."] }]);
    const run = await runClaude({
      baseUrl: double.url,
      prompt: "FIRST-PROMPT say hi",
      args: ["--plugin-dir", join(projectRoot, "plugin"), "--permission-mode", "bypassPermissions"],
      env: { COTAL_SERVER: mesh.server.url, COTAL_CREDS: creds, COTAL_CONTROL_DIR: controlDir },
      timeoutMs: 90_000,
    });
    try {
      expect(run.json, run.stderr).toMatchObject({ is_error: false, result: "Hello from erin." });
      // The SessionStart hook waited for the connector to pair: its identity line reached the model.
      expect(allText(double.mainRequests[0]!)).toContain("SessionStart hook additional context: You are local.erin on the Cotal mesh (space plug");
      const observer = await mesh.endpoint("watch_erin", { creds: await mesh.mint({ name: "watch_erin", profile: "observer" }) });
      const events = async () =>
        (await observer.history("events.local.erin")).flatMap((h) => frameOf(h.message.parts)!.events.map((e) => ({ type: e.type, delta: e.delta })));
      await until(async () => (await events()).some((e) => e.type === "RUN_FINISHED"), 15_000, "RUN_FINISHED on events.local.erin");
      const got = await events();
      expect(got.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").map((e) => e.delta)).toEqual(["FIRST-PROMPT say hi", "Hello from erin."]);
      expect(got[0]!.type).toBe("RUN_STARTED");
    } finally {
      await double.close();
      await cleanupRun(run);
    }
  }, 120_000);
});
