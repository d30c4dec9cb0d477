// An interactive Claude Code session as a person runs it: the real TUI under tmux, started with
// the README's launch line, against the model double. The screen (capture-pane) shows what the
// person sees: no approval prompt for the cotal tools, a line when mail is handed to the model;
// the roster shows the seat's unread count, and `waiting (approval)` while a permission dialog
// is open.
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Endpoint, Roster } from "../../broker/index.js";
import { buildCli, cleanEnv, projectRoot, runCotal } from "../harness/cli.js";
import { collect } from "../harness/deliveries.js";
import { NatsServer } from "../harness/fixtures.js";
import { TestMesh } from "../harness/mesh.js";
import { lastUserText, ModelDouble, toolResults } from "../../testbed/model-double.js";
import { until } from "../../testbed/until.js";
import { TmuxClaude } from "./tmux-claude.js";

const SPACE = "tmux";
const PLUGIN_DIR = join(projectRoot, "plugin");
const DM_TOOL = "mcp__plugin_cotal_cotal__cotal_dm";
/** Claude's permission dialog (question and footer). */
const PROMPT_ON_SCREEN = /Do you want to proceed\?|Esc to cancel · Tab to amend/;

/**
 * The arguments after `claude` in the README's "Put a Claude Code session on the mesh" block,
 * with the plugin folder resolved: the test runs exactly what the README tells a user to run.
 */
function readmeLaunchArgs(): string[] {
  const readme = readFileSync(join(projectRoot, "README.md"), "utf8");
  const block = /### Put a Claude Code session on the mesh\s+```sh\n([\s\S]*?)```/.exec(readme)?.[1];
  // The README runs the package's own claude through npx; the test runs the same binary directly.
  const line = block?.split("\n").find((l) => /^\s*(npx\s+)?claude\s/.test(l));
  if (!line) throw new Error("README.md has no `claude …` line in its 'Put a Claude Code session on the mesh' block");
  const words = line.trim().split(/\s+/);
  const args = words.slice(words.indexOf("claude") + 1);
  const at = args.indexOf('"$(npx');
  if (args[at - 1] !== "--plugin-dir" || args.slice(at, at + 4).join(" ") !== '"$(npx cotal setup --print-plugin-dir)"') {
    throw new Error(`unexpected README launch line: ${line}`);
  }
  args.splice(at, 4, PLUGIN_DIR);
  return args;
}

let server: NatsServer;
let mesh: TestMesh;
let bob: Endpoint;
let roster: Roster;
let root: string;

beforeAll(async () => {
  await buildCli(); // also copies the bundles into plugin/bin
  server = await NatsServer.start();
  mesh = await TestMesh.start(server, SPACE);
  bob = await mesh.joined("bob");
  roster = await bob.roster();
  root = mkdtempSync(join(tmpdir(), "cotal-tmux-e2e-"));
});

afterAll(async () => {
  await mesh?.close();
  await server?.cleanup();
  rmSync(root, { recursive: true, force: true });
});

/** A seat's COTAL_* environment; its connector logs (pino JSON, debug) to `log`. */
const seatEnv = (name: string, log: string): Record<string, string> => ({
  COTAL_SERVER: server.url,
  COTAL_SPACE: SPACE,
  COTAL_NAME: name,
  COTAL_CONTROL_DIR: mkdtempSync(join(root, "ctl-")),
  COTAL_LOG_FILE: log,
  COTAL_LOG_LEVEL: "debug",
});

/** Wait until the connector answered the session's SessionStart hook (mail sent later waits for the next hook). */
async function sessionStarted(log: string): Promise<void> {
  const answered = () =>
    existsSync(log) &&
    readFileSync(log, "utf8")
      .split("\n")
      .some((l) => l.includes('"msg":"hook answered"') && l.includes('"event":"SessionStart"'));
  await until(answered, 20_000, "the connector answered SessionStart");
}

/** `cotal roster --json` from the built CLI: the view an operator has. */
async function cliRoster(): Promise<Array<{ id: string; status: string; condition?: string; unread?: number }>> {
  const r = await runCotal(["roster", "--json", "--server", server.url, "--space", SPACE], { cwd: root, env: cleanEnv() });
  return r.json();
}

/** Every screen seen while `fn` runs (sampled every 100 ms), to prove something never showed. */
async function watchScreens<T>(t: TmuxClaude, fn: () => Promise<T>): Promise<{ result: T; screens: string[] }> {
  const screens: string[] = [];
  let on = true;
  const sampling = (async () => {
    while (on) {
      screens.push(await t.screen(0));
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  try {
    return { result: await fn(), screens };
  } finally {
    on = false;
    await sampling;
  }
}

describe("an interactive session started with the README's launch line", () => {
  it("runs a scripted cotal_dm with no approval prompt; handed-over mail shows a line; the roster counts it unread until then", async () => {
    const args = readmeLaunchArgs();
    expect(args).toEqual(["--plugin-dir", PLUGIN_DIR, "--allowedTools", "mcp__plugin_cotal_cotal"]);
    const got = collect(bob);
    const double = await ModelDouble.start([
      { when: (req) => lastUserText(req).includes("answer bob"), reply: [{ tool: DM_TOOL, input: { to: "bob", text: "pong from alice" } }] },
      { afterToolResult: DM_TOOL, reply: ["Answered bob."] },
    ]);
    const log = join(root, "alice.log");
    const t = await TmuxClaude.start({ baseUrl: double.url, args, env: seatEnv("alice", log) });
    try {
      await t.waitFor(/shift\+tab to cycle|\? for shortcuts/, 45_000, "the input screen");
      await until(() => roster.get("local.alice")?.status === "idle", 15_000, "alice joined at SessionStart");
      await sessionStarted(log);

      await bob.dm("alice", "ping from bob");
      await until(() => roster.get("local.alice")?.presence.unread === 1, 10_000, "the roster counts bob's DM unread");
      expect((await cliRoster()).find((r) => r.id === "local.alice")).toMatchObject({ status: "idle", unread: 1 });

      const { screens } = await watchScreens(t, async () => {
        await t.submit("answer bob");
        await until(() => got.texts().includes("pong from alice"), 45_000, "bob gets alice's DM");
        await t.waitFor(/Answered bob\./, 20_000, "the turn's last reply");
      });
      // The person saw the hand-over, and never an approval prompt.
      expect(await t.screen()).toMatch(/UserPromptSubmit says: cotal: 1 message from bob/);
      expect(screens.length).toBeGreaterThan(3);
      expect(screens.filter((s) => PROMPT_ON_SCREEN.test(s))).toEqual([]);
      const dmResult = double.mainRequests.flatMap(toolResults).find((r) => r.name === DM_TOOL);
      // Claude Code hands the model the tool's structured content as JSON: the receipt's data, its sentence in `text`.
      expect(dmResult).toMatchObject({ isError: false });
      expect(JSON.parse(dmResult!.text)).toMatchObject({
        target: { kind: "dm", to: "local.bob" },
        text: expect.stringMatching(/^DM to local\.bob from local\.alice/),
      });

      await until(() => roster.get("local.alice")?.presence.unread === 0, 10_000, "the roster counts 0 unread after the hand-over");
      expect((await cliRoster()).find((r) => r.id === "local.alice")).toMatchObject({ unread: 0 });
    } finally {
      await t.cleanup();
      await double.close();
    }
  }, 180_000);

  it("a seat stuck at an approval prompt reads waiting (approval) at once, and idle once it was approved and the turn ended", async () => {
    // Same launch line, in Claude's ask-first mode, with a tool the allow rule does not cover.
    const args = [...readmeLaunchArgs(), "--permission-mode", "default"];
    const double = await ModelDouble.start([
      {
        when: (req) => lastUserText(req).includes("write the file"),
        reply: [{ tool: "Bash", input: { command: "echo hi > note.txt", description: "Write note.txt" } }],
      },
      { afterToolResult: "Bash", reply: ["Wrote it."] },
    ]);
    const t = await TmuxClaude.start({ baseUrl: double.url, args, env: seatEnv("erin", join(root, "erin.log")) });
    try {
      await t.waitFor(/shift\+tab to cycle|\? for shortcuts/, 45_000, "the input screen");
      await until(() => roster.get("local.erin")?.status === "idle", 15_000, "erin joined at SessionStart");
      await t.submit("write the file");
      await t.waitFor(PROMPT_ON_SCREEN, 30_000, "the permission dialog");
      const shownAt = Date.now();
      await until(
        () => roster.get("local.erin")?.status === "waiting" && roster.get("local.erin")?.presence.condition?.code === "approval",
        10_000,
        "erin reads waiting (approval)",
      );
      // From the PermissionRequest hook, not the permission_prompt notification Claude sends after 6 s.
      expect(Date.now() - shownAt).toBeLessThan(5_000);
      expect((await cliRoster()).find((r) => r.id === "local.erin")).toMatchObject({ status: "waiting", condition: "approval" });

      await t.key("Enter"); // the person approves ("Yes" is preselected)
      await t.waitFor(/Wrote it\./, 20_000, "the turn's last reply");
      await until(() => roster.get("local.erin")?.status === "idle", 10_000, "erin is idle again once the turn ended");
    } finally {
      await t.cleanup();
      await double.close();
    }
  }, 150_000);
});
