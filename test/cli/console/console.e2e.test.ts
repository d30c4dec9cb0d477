// `cotal console --plain` on a static mesh: history of a seat's event plane first (marked
// [history]), then its live frames as readable timeline lines; a scoped reader sees only its
// plane; DMs are never shown.
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { logger, type Endpoint } from "../../../broker/index.js";
import { EventPlane } from "../../../connector/internal.js";
import { buildCli, cleanEnv, CotalProcess } from "../../harness/cli.js";
import { until } from "../../harness/fixtures.js";
import { TestMesh } from "../../harness/mesh.js";
import { TmuxConsole } from "../../harness/tmux-console.js";

let mesh: TestMesh;
let root: string;
const planes: EventPlane[] = [];
const procs: CotalProcess[] = [];

beforeAll(async () => {
  await buildCli();
  mesh = await TestMesh.startStatic("con");
  root = mkdtempSync(path.join(os.tmpdir(), "cotal-console-"));
}, 120_000);
afterAll(async () => {
  for (const p of procs) await p.stop("SIGKILL").catch(() => undefined);
  for (const p of planes) await p.close(0);
  await mesh?.close();
  rmSync(root, { recursive: true, force: true });
});

/** A seat on the roster (an agent card) whose plane publishes what its transcript says. */
async function seat(name: string): Promise<{ ep: Endpoint; transcript: string; plane: EventPlane }> {
  // A seat's credential: it writes its own event plane (a credential with no channel to post on gets that right only when asked).
  const creds = await mesh.mint({ name, profile: "agent", provision: true, events: true });
  const ep = await mesh.endpoint(name, { creds, kind: "agent" });
  await ep.join();
  const dir = path.join(root, name);
  mkdirSync(dir, { recursive: true });
  const transcript = path.join(dir, "t.jsonl");
  writeFileSync(transcript, "");
  const plane = new EventPlane({ ep, dir: path.join(dir, "events"), log: logger("test-console"), pollMs: 50, retryMs: 100 });
  planes.push(plane);
  plane.start();
  plane.sessionStart({ sessionId: `s-${name}`, transcriptPath: transcript, source: "startup" });
  return { ep, transcript, plane };
}

function turn(tag: string, said: string): string {
  return [
    { type: "user", uuid: `p-${tag}`, message: { role: "user", content: `Please ${tag}` } },
    {
      type: "assistant",
      uuid: `t-${tag}`,
      message: { role: "assistant", content: [{ type: "tool_use", id: `tool-${tag}`, name: "Bash", input: { command: "ls /secret-arg" } }] },
    },
    { type: "user", uuid: `r-${tag}`, message: { role: "user", content: [{ type: "tool_result", tool_use_id: `tool-${tag}`, content: "secret-result" }] } },
    { type: "assistant", uuid: `a-${tag}`, message: { role: "assistant", content: [{ type: "text", text: said }], stop_reason: "end_turn" } },
  ]
    .map((r) => JSON.stringify(r) + "\n")
    .join("");
}

function consoleAs(creds: string): CotalProcess {
  const p = CotalProcess.spawn(["console", "--plain", "--server", mesh.server.url, "--space", mesh.space, "--creds", creds], { cwd: root, env: cleanEnv() });
  procs.push(p);
  return p;
}

const has = (p: CotalProcess, re: RegExp) => p.lines.some((l) => re.test(l));

describe("cotal console --plain", () => {
  it("shows a running seat's history, then its live frames as timeline lines; a scoped reader sees only that plane and no DM", async () => {
    const bob = await seat("bob");
    const carol = await seat("carol");
    appendFileSync(bob.transcript, turn("build", "Built it."));
    appendFileSync(carol.transcript, turn("lint", "Carol linted."));
    await until(() => bob.plane.backlog === 0 && carol.plane.backlog === 0 && bob.plane.status === "live", 10_000, "the planes published");
    await until(
      async () =>
        (await (await mesh.endpoint("peek", { creds: await mesh.mint({ name: "peek", profile: "observer" }) })).history("events.local.carol")).length > 0,
      10_000,
      "carol's frames stored",
    );
    await carol.ep.dm("bob", "a private DM body");

    // A scoped reader (docs/security.md#scoped-readers): it reads bob's plane and publishes nothing.
    const watcherCreds = await mesh.mint({ name: "watcher", profile: "reader", allowSubscribe: ["events.local.bob"], provision: true });
    const watcher = consoleAs(watcherCreds);
    const observer = consoleAs(await mesh.mint({ name: "olga", profile: "observer" }));

    for (const p of [watcher, observer]) {
      await until(() => p.stderr.includes("Live from here"), 20_000, `the console went live\n${p.lines.join("\n")}\n${p.stderr}`);
      expect(has(p, /^\[history\] \S+ bob ▶ turn started/)).toBe(true);
      expect(has(p, /^\[history\] \S+ bob « prompt: Please build$/)).toBe(true);
      expect(has(p, /^\[history\] \S+ bob ⚙ Bash started$/)).toBe(true);
      expect(has(p, /^\[history\] \S+ bob ⚙ Bash ended$/)).toBe(true);
      expect(has(p, /^\[history\] \S+ bob » says: Built it\.$/)).toBe(true);
      expect(has(p, /^\[history\] \S+ bob ■ turn finished$/)).toBe(true);
      expect(has(p, /roster bob .*idle|roster bob/)).toBe(true);
    }
    // The observer reads every plane; the scoped reader only bob's.
    expect(has(observer, /carol » says: Carol linted\./)).toBe(true);
    expect(has(watcher, /carol » says/)).toBe(false);
    expect(watcher.stderr).toMatch(/not readable with this credential: events\.local\.carol/);

    appendFileSync(bob.transcript, turn("deploy", "Deployed."));
    for (const p of [watcher, observer]) {
      await until(() => has(p, /^\S+ bob » says: Deployed\.$/), 10_000, `the live frames arrived\n${p.lines.join("\n")}`);
      const firstLive = p.lines.findIndex((l) => / bob « prompt: Please deploy$/.test(l));
      const lastHistory = p.lines.findLastIndex((l) => l.startsWith("[history]"));
      expect(firstLive).toBeGreaterThan(lastHistory);
      expect(p.lines[firstLive]!.startsWith("[history]")).toBe(false);
      const all = p.lines.join("\n");
      expect(all).not.toContain("a private DM body");
      expect(all).not.toContain("secret-arg");
      expect(all).not.toContain("secret-result");
    }
  }, 90_000);
});

describe("cotal console (terminal UI)", () => {
  it("shows the roster and the feed, switches to an agent's timeline with the arrow keys, and quits on q", async () => {
    const dave = await seat("dave");
    appendFileSync(dave.transcript, turn("test", "Tests pass."));
    await until(() => dave.plane.backlog === 0 && dave.plane.status === "live", 10_000, "dave's plane published");
    const creds = await mesh.mint({ name: "olga_tui", profile: "observer" });
    const t = TmuxConsole.start(path.join(root, "tmux.sock"), root, [
      "console",
      "--server",
      mesh.server.url,
      "--space",
      mesh.space,
      "--creds",
      creds,
      "--agent",
      "dave",
      "--agent",
      "bob",
      "--channel",
      "general",
    ]);
    try {
      let screen = await t.waitFor(/dave ».*says: Tests pass\./, "the feed shows dave's reply");
      expect(screen).toMatch(/Roster/);
      expect(screen).toMatch(/│ *dave idle/);
      expect(screen).toMatch(/ feed {2}dave {2}bob {2}#general /);
      expect(screen).toMatch(/bob ».*says: Built it\./);
      expect(screen).not.toContain("secret-arg");
      // → : dave's own timeline, without bob's lines.
      t.tmux("send-keys", "-t", "console", "Right");
      screen = await t.waitFor(/dave ⚙ Bash started/, "dave's timeline");
      await until(() => !/bob ».*says/.test((screen = t.screen())), 5_000, "bob's lines leave dave's tab");
      // Live: a new turn appears on the open tab.
      appendFileSync(dave.transcript, turn("ship", "Shipped."));
      await t.waitFor(/dave ».*says: Shipped\./, "the live reply on dave's tab");
      // → → : the #general tab, with a post made while the console runs.
      const poster = await mesh.endpoint("poster");
      await poster.send("general", "standup in 5");
      t.tmux("send-keys", "-t", "console", "Right");
      t.tmux("send-keys", "-t", "console", "Right");
      screen = await t.waitFor(/#general poster: standup in 5/, "the post on the #general tab");
      expect(screen).not.toMatch(/dave ».*says/);
      t.tmux("send-keys", "-t", "console", "q");
      await until(() => !t.alive(), 10_000, "the console quits on q");
    } finally {
      t.kill();
    }
  }, 90_000);
});
